"""Step 5, kernel: the generated module (highlighted, read-only), its lint findings, export, copy.

The module comes from `kernel_of(pipeline)` (the codegen layer) and the findings from the lint
engine; both are computed by the core. Export asks for a path and never overwrites a file
without a confirmation; the write is atomic. Verify (the simulator) runs in a worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Static, TextArea

from pypto_tui.codegen.result import GeneratedKernel
from pypto_tui.contract.model import Signature
from pypto_tui.design import kernel_of
from pypto_tui.errors import InputError
from pypto_tui.fileio import write_atomic
from pypto_tui.findings import Finding
from pypto_tui.kb import KnowledgeBase
from pypto_tui.lint.base import LintFinding
from pypto_tui.screens.base import StepScreen, attempt, describe_error
from pypto_tui.screens.dialogs import ConfirmDialog, PathDialog
from pypto_tui.screens.messages import WorkFinished, WorkProgress
from pypto_tui.screens.sim_support import detached, progress_line, sim_unavailable, stage_line
from pypto_tui.screens.widgets import FindingsList, RuleExplanation


def _as_finding(item: LintFinding) -> Finding:
    """A lint finding as a core Finding, its place written first."""
    return Finding(item.rule, item.level, f"line {item.line}:{item.col}: {item.message}",  # type: ignore[arg-type]
                   item.authority)


_LINTED: dict[tuple[str, int, str | None, str], list[Finding]] = {}
"""The last few lint verdicts: a chain's module takes about half a second to lint, and coming
back to the Kernel step must not pay it again for the same text."""


def lint_findings(source: str, kb: KnowledgeBase, flavour: str | None, signature: Signature | None) -> list[Finding]:
    """The lint engine's verdict on the generated module, against the task's Model signature
    (read once by the contract reader)."""
    from pypto_tui.lint.engine import lint_source

    key = (source, id(kb), flavour, repr(signature))  # a Signature holds a dict: not hashable
    hit = _LINTED.get(key)
    if hit is not None:
        return list(hit)
    found = [_as_finding(f) for f in lint_source(source, "kernel.py", kb=kb, flavour=flavour, task_signature=signature)]
    while len(_LINTED) >= 8:
        _LINTED.pop(next(iter(_LINTED)))
    _LINTED[key] = found
    return list(found)


class KernelScreen(StepScreen):
    """The generated module, its findings, export (e), copy (c), verify (ctrl+r)."""

    STEP = "kernel"
    CSS_PATH = "kernel_screen.tcss"
    AUTO_FOCUS = "#code"
    RUN_LABEL = "Verify kernel against the baseline"
    BUSY_TEXT = "writing the kernel module and linting it"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "export", "Export", priority=True),
        Binding("c", "copy", "Copy", priority=True),
        Binding("ctrl+r", "run_check", "Verify", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.kernel: GeneratedKernel | None = None
        self.source: str | None = None
        self.exported: Path | None = None
        self._exported_of: tuple[str | None, str] | None = None
        """(task, source) of the last export: the line "exported to" belongs to that task's module."""
        self.verdict: str | None = None

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="kernel-main"):
            yield TextArea.code_editor("", language="python", read_only=True, id="code", classes="panel")
            with Vertical(id="kernel-side"):
                yield Static("", id="kernel-summary", classes="panel")
                yield FindingsList(id="lint", classes="panel")
                yield RuleExplanation(id="kernel-explain", classes="panel")

    def on_mount(self) -> None:
        self.query_one("#code").border_title = "Generated module"
        self.query_one("#lint").border_title = "Codegen and lint findings"
        self.query_one("#kernel-explain").border_title = "Rule"
        self.query_one("#kernel-summary").border_title = "Kernel"
        super().on_mount()

    def prepare(self) -> None:
        super().prepare()
        session = self.session
        kernel = kernel_of(session.pipeline)
        for s in session.kernels():
            attempt(s.pipeline.chosen_tile)
            attempt(s.pipeline.chosen_loop_count)
        if kernel.source:
            contract = attempt(session.pipeline.contract)[0]
            lint_findings(kernel.source, session.kb, session.design.flavour,
                          contract.signature if contract else None)

    def refresh_step(self) -> None:
        kernel, err = attempt(lambda: kernel_of(self.session.pipeline))
        self.kernel = kernel
        code = self.query_one("#code", TextArea)
        summary = self.query_one("#kernel-summary", Static)
        if kernel is None:
            self.source = None
            code.load_text("")
            msg = err or "no kernel"
            summary.update(msg)
            self.query_one("#lint", FindingsList).show(())
            self.set_status(msg, "error")
            return
        source, supported, reason = kernel.source, kernel.supported, kernel.reason
        findings = list(kernel.findings)
        if source and source != self.source:
            code.load_text(source)
            self.verdict = None  # a verdict belongs to the source it was run on
        self.source = source or None
        if not source:
            code.load_text("")
        lint_note = ""
        if source:
            d = self.session.design
            signature = attempt(self.session.pipeline.contract)[0]
            lint, lerr = attempt(lambda: lint_findings(source, self.session.kb, d.flavour,
                                                       signature.signature if signature else None))
            if lint is None:
                lint_note = f"lint: {lerr}"
            else:
                findings += lint
                lint_note = f"lint: {len(lint)} finding(s)" if lint else "lint: clean"
        self.query_one("#lint", FindingsList).show(findings)
        pattern = kernel.pattern
        lines = [
            f"{'supported' if supported else 'NOT supported'}{': ' + reason if reason else ''}"
            + (f" · pattern {pattern}" if pattern and supported else ""),
            *self._design_lines(),
            f"flavour {self.session.design.flavour or self.session.kb.default_flavour}",
        ]
        if source:
            lines.append(f"{len(source.splitlines())} lines · {lint_note}")
        if self.exported and self._exported_of is not None and self._exported_of[0] != self.session.design.task:
            self.exported = self._exported_of = None  # another task: its export is not this module's
        if self.exported:
            earlier = self._exported_of is not None and self._exported_of[1] != source
            lines.append(f"exported to {self.exported}" + (" (an earlier version: e exports this one)"
                                                            if earlier else ""))
        if self.verdict:
            lines.append(self.verdict)
        summary.update("\n".join(lines))
        if not supported or not source:
            self.set_status(reason or "the generator cannot scaffold this task", "warn")
        else:
            self.set_status("e exports the module, c copies it, ctrl+r verifies it", "ok")

    def _design_lines(self) -> list[str]:
        """The tile and loop of each kernel: a chain's module has one pair per kernel (the task's
        own pipeline has no tile of its own then, so one line would say 'tile None')."""
        stages = self.session.kernels()
        pipes = [(f"K{s.index} {s.ops}: ", s.pipeline) for s in stages] or [("", self.session.pipeline)]
        lines = []
        for label, pipe in pipes:
            tile = attempt(pipe.chosen_tile)[0]
            loop = attempt(pipe.chosen_loop_count)[0]
            lines.append(f"{label}tile {tile if tile is not None else '(none: the pattern sets its own)'}"
                         + (f", loop_count {loop}" if loop else ", no loop"))
        return lines

    @on(FindingsList.Selected)
    def _finding_selected(self, event: FindingsList.Selected) -> None:
        event.stop()
        self.query_one("#kernel-explain", RuleExplanation).explain(self.session.kb, event.finding)
        f = event.finding
        if f is not None and f.message.startswith("line "):
            try:
                line = int(f.message[5:].split(":", 1)[0])
            except ValueError:
                return
            code = self.query_one("#code", TextArea)
            code.move_cursor((max(line - 1, 0), 0), center=True)

    # ------------------------------------------------------------------ export / copy
    def default_export_path(self) -> Path:
        """`<task>_pypto.py` in the current folder; in a `pypto_kernels` folder under it when that is the
        task's own folder (a module beside the tasks is one more file in a folder of tasks)."""
        task = self.session.design.task
        stem = Path(task).stem if task else "kernel"
        here = Path.cwd()
        folder = here / "pypto_kernels" if task and Path(task).resolve().parent == here.resolve() else here
        return folder / f"{stem}_pypto.py"

    def action_export(self) -> None:
        if not self.source:
            self.notify("nothing to export: the generator gave no module", severity="warning")
            return
        self.app.push_screen(
            PathDialog("Export the kernel module to", str(self.exported or self.default_export_path()),
                       check=_py_target, ok="Export"),
            self._export_to,
        )

    def _export_to(self, path: str | None, confirmed: bool = False) -> None:
        if not path or not self.source:
            return
        target = Path(path).expanduser()
        if (target.exists() or target.is_symlink()) and not confirmed:  # a dangling link counts too
            self.app.push_screen(
                ConfirmDialog(f"{target} already exists. Overwrite it?", yes="Overwrite", no="Keep it",
                              title="File exists"),
                lambda ok: self._export_to(path, confirmed=True) if ok else self.notify("not exported"),
            )
            return
        try:
            write_atomic(target, self.source, force=confirmed)
        except (InputError, OSError) as exc:
            self.notify(describe_error(exc), title="Not exported", severity="error")
            self.set_status(f"export failed: {describe_error(exc)}", "error")
            return
        self.exported = target
        self._exported_of = (self.session.design.task, self.source)
        self.session.finish("kernel")
        self.safe_refresh()  # the Kernel panel's "exported to" line
        self.set_status(f"exported to {target}", "ok")
        self.notify(f"wrote {target}", title="Exported")
        self.sync_frame()

    def action_copy(self) -> None:
        if not self.source:
            self.notify("nothing to copy yet", severity="warning")
            return
        self.app.copy_to_clipboard(self.source)
        self.notify(f"copied {len(self.source.splitlines())} lines to the clipboard", title="Copied")

    # ------------------------------------------------------------------ verify
    def action_run_check(self) -> None:
        why = sim_unavailable()
        if why is not None:
            self.set_status(why, "warn")
            self.notify(why, title="Verify not available", severity="warning", timeout=8)
            return
        if not self.source:
            self.notify("nothing to verify", severity="warning")
            return
        task = self.session.design.task
        pipeline = detached(self.session.pipeline)

        def run() -> None:
            self.start_work("verify: building the kernel at shapes that keep its tile and loop count, then "
                            "comparing every compiler pass with torch…")
            self._verify_worker(pipeline)

        if not task:
            run()
            return
        self.with_consent_to_run(task, "Verify", run)

    @work(thread=True, exclusive=True, group="verify", exit_on_error=False)
    def _verify_worker(self, pipeline: Any) -> None:
        def progress(done: int, total: int, result: Any) -> None:
            self.post_message(WorkProgress("verify", done, total, progress_line(done, total, result)))

        def status(_job: Any, stage: str) -> None:
            self.post_message(WorkProgress("verify", 0, 0, stage_line("verify", stage)))

        try:
            from pypto_tui.sim.verification import verify

            result = verify(pipeline, scale="small", progress=progress, status=status)
        except Exception as exc:
            self.post_message(WorkFinished("verify", error=describe_error(exc)))
            return
        self.post_message(WorkFinished("verify", result))

    def work_finished(self, job: str, result: Any, error: str | None) -> None:
        if error:
            self.set_status(f"verify could not run: {error}", "error")
            self.notify(error, title="Verify", severity="error")
            return
        nums = ", ".join(f"{k} {getattr(result, k):.3g}" for k in ("max_abs_err", "max_rel_err", "fail_share")
                         if isinstance(getattr(result, k, None), int | float))
        shapes = ", ".join(f"{k} {tuple(v)}" for k, v in (getattr(result, "shapes", {}) or {}).items())
        if not getattr(result, "supported", True):
            self.verdict = f"verify: not supported: {result.reason}"
            self.set_status(self.verdict, "warn")
        elif result.passed:
            self.verdict = (f"verify PASSED at {shapes}, {len(result.passes_checked)} stages checked"
                            + (f" ({nums})" if nums else ""))
            self.set_status(self.verdict, "ok")
            self.notify(self.verdict, title="Verify")
        else:
            self.verdict = f"verify FAILED: {result.reason}" + (f" ({nums})" if nums else "")
            self.set_status(self.verdict, "error")
            self.notify(self.verdict, title="Verify", severity="error")
        if getattr(result, "changes", None):
            self.verdict += " · changed: " + "; ".join(result.changes)
        self.safe_refresh()
        self._status = None  # keep the verdict on the status line
        self.set_status(self.verdict, "ok" if getattr(result, "passed", False) else "error")


def _py_target(text: str) -> str | None:
    p = Path(text).expanduser()
    if p.is_dir():
        return f"{p} is a folder: give a file name such as {p / 'kernel.py'}"
    if p.suffix != ".py":
        return "give a .py file name"
    return None
