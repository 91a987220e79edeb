"""The Textual app: five step screens over one Design, with autosave, restore and a palette.

Each step is a mode (`App.MODES`), so every screen keeps its own stack for dialogs and is
created only when first visited. The app owns the `Session` (the document, its pipeline, which
steps are done or stale, autosave) and the actions that do not belong to one step: open a task,
switch pack, save, export, the rule browser, themes, jumps between steps.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input, TextArea

from pypto_tui.design import STEPS, Design
from pypto_tui.errors import InputError
from pypto_tui.screens.base import StepScreen, describe_error
from pypto_tui.screens.commands import PyptoCommands
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import ConfirmDialog, OpenTaskDialog, PathDialog, RestoreDialog
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.rules_screen import RuleBrowserScreen
from pypto_tui.screens.session import Autosave, Session, list_examples, read_design, state_dir
from pypto_tui.screens.tiles_screen import TilesScreen
from pypto_tui.screens.widgets import STEP_LABELS

LIGHT, DARK = "textual-light", "textual-dark"


class PyptoApp(App[None]):
    """pypto-tui: contract -> dimensions -> tiles -> loops -> kernel."""

    TITLE = "pypto-tui"
    CSS_PATH = "app.tcss"
    MODES: ClassVar[dict[str, object]] = {  # type: ignore[assignment]
        "contract": ContractScreen, "dims": DimsScreen, "tiles": TilesScreen,
        "loops": LoopsScreen, "kernel": KernelScreen,
    }
    COMMANDS = App.COMMANDS | {PyptoCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+o", "open_task", "Open", priority=True),
        Binding("ctrl+r", "run_check", "Run check", priority=True, show=False),
        Binding("f1", "rules", "Rules"),
        Binding("ctrl+t", "toggle_theme", "Theme", priority=True, show=False),
    ]

    def __init__(self, task: str | os.PathLike[str] | None = None, kb: str | os.PathLike[str] | None = None,
                 session: str | os.PathLike[str] | None = None, *, blink: bool = True,
                 state: Path | None = None, offer_restore: bool = True, freeze_gc: bool = False,
                 trust_task_code: bool = False, front_end: str = "static") -> None:
        super().__init__()
        self.trust_task_code = trust_task_code
        """`ui --trust`: run a task file's code (self-check, verify) without asking first."""
        self.trusted_tasks: set[str] = set()
        """Task files the user agreed to run in this app run."""
        self.blink = blink
        """False in tests and snapshots: no blinking cursor anywhere."""
        self.freeze_gc = freeze_gc
        """After the warm-up imports, move everything alive to the GC's permanent generation: a
        full collection of libcst/numpy/Textual's heap takes 30-130 ms, a visible stall mid-typing."""
        self.autosaver = Autosave(state or state_dir())
        self.leftover: Design | None = self.autosaver.leftover() if offer_restore else None
        kb_dir = str(kb) if kb is not None else None
        session_path = Path(session) if session is not None else None
        if session_path is not None:
            design = read_design(session_path)  # InputError reaches the CLI as a one-line error
            if kb_dir is not None:
                design.kb = kb_dir
        else:
            design = Design(task=str(task) if task is not None else None, kb=kb_dir, front_end=front_end)
            if task is not None and front_end == "traced":
                self.trusted_tasks.add(str(task))  # `ui TASK --front-end traced` asked for the run itself
        self.session = Session(design, design.kb, session_path, self.autosaver)
        self.session.listeners.append(self._on_session_change)
        self.session.defer = self._after_paint

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification is plain text: messages carry paths, shapes and install commands
        (`pip install 'pypto-tui[sim]'`), whose brackets Textual's markup would swallow."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    async def on_event(self, event: events.Event) -> None:
        """A key pressed while a step is computed, or before its content was painted, is dropped:
        it was meant for the screen the user saw (StepScreen.drops_key)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            screen = self.screen if self.screen_stack else None
            if isinstance(screen, StepScreen) and screen.drops_key(event):
                event.stop()
                event.prevent_default()
                return
        await super().on_event(event)

    # ------------------------------------------------------------------ lifecycle
    def on_mount(self) -> None:
        self.autosaver.start()
        self.autosaver.write(self.session.design)
        self.switch_mode(self.session.design.step)
        for notice in self.autosaver.notices:
            self.notify(notice, title="Autosave set aside", severity="warning", timeout=12)
        if self.leftover is not None:
            self.push_screen(RestoreDialog(self.leftover), self._restored)
        elif not self.session.design.task:
            self.action_open_task()

    def _after_paint(self, fn: Callable[[], None]) -> None:
        """The autosave is written right after the frame that shows the change."""
        if self.screen_stack:
            self.call_after_refresh(fn)
        else:
            fn()

    def warm_up(self) -> None:
        """Import what the later steps need while the user reads the contract (a thread: the
        first code generation otherwise pauses the kernel step for a second)."""
        self.run_worker(partial(_warm_imports, self.freeze_gc), thread=True, group="warm-up", exit_on_error=False)

    def settle_heap(self) -> None:
        """Freeze what is alive now (a new step screen lives as long as the app) so later full
        collections do not walk it again; see `freeze_gc`."""
        if self.freeze_gc:
            gc.collect(1)
            gc.freeze()

    def on_unmount(self) -> None:
        self.session.flush()
        self.autosaver.finish()
        runner = sys.modules.get("pypto_tui.sim.runner")  # loaded only if the compiler was used
        if runner is not None:
            runner.stop_all()  # no worker outlives the app
        procgroup = sys.modules.get("pypto_tui.procgroup")  # loaded only if a self-check ran
        if procgroup is not None:
            procgroup.stop_all()  # nor a self-check's baseline runner (its thread then returns at once)

    def _restored(self, restore: bool | None) -> None:
        leftover, self.leftover = self.leftover, None
        if restore and leftover is not None:
            try:
                self.session.replace_design(leftover)
            except InputError as exc:
                self.notify(str(exc), title="Cannot restore", severity="error")
                return  # its files stay: the next start offers it again
            self.autosaver.forget_leftover()  # it lives in our own slot now
            self._show_step(self.session.design.step)
            self.notify("restored the last autosave", title="Session")
            return
        if restore is False:
            self.autosaver.forget_leftover()
        if not self.session.design.task:
            self.action_open_task()

    def _on_session_change(self, step: str) -> None:
        if not self.screen_stack:
            return  # not running yet
        screen = self.screen
        if isinstance(screen, StepScreen) and screen.is_mounted:
            screen.sync_frame()

    def quiet_cursor(self, screen: Screen[Any]) -> None:
        if not self.blink:
            for w in screen.query("Input, TextArea").results():
                if isinstance(w, Input | TextArea):
                    w.cursor_blink = False

    def describe_design(self) -> str:
        d, kb = self.session.design, self.session.kb
        task = Path(d.task).name if d.task else "no task"
        return f"{task} · pack {kb.name} {kb.version}"

    # ------------------------------------------------------------------ navigation
    def goto(self, step: str) -> None:
        self.session.go(step)
        self._show_step(step)

    def _show_step(self, step: str) -> None:
        if self.current_mode == step:
            screen = self.screen
            if isinstance(screen, StepScreen):
                screen.sync_frame()
                screen.refresh_in_background()
            return
        self.switch_mode(step)

    def action_goto(self, step: str) -> None:
        if step not in STEPS:
            return
        if not self.session.can_visit(step):
            self.notify(f"finish the earlier steps before {STEP_LABELS[step]}", severity="warning")
            return
        self.goto(step)

    def step_screen(self) -> StepScreen | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, StepScreen):
                return screen
        return None

    def current_run_label(self) -> str | None:
        s = self.step_screen()
        return s.RUN_LABEL if s is not None else None

    # ------------------------------------------------------------------ actions
    def action_open_task(self) -> None:
        current = self.session.design.task or ""
        self.push_screen(OpenTaskDialog(list_examples(self.session.kb), current if current else ""),
                         self._task_chosen)

    def _task_chosen(self, path: str | None) -> None:
        if not path:
            return
        try:
            self.session.set_task(path)
        except InputError as exc:
            self.notify(str(exc), title="Cannot open", severity="error")
            return
        self._show_step("contract")
        self.notify(f"opened {Path(path).name}", title="Task")

    def action_switch_pack(self) -> None:
        def check(text: str) -> str | None:
            from pypto_tui.kb import load_pack

            try:
                load_pack(text)
            except InputError as exc:
                return str(exc)
            return None

        self.push_screen(PathDialog("Knowledge pack folder (holds pack.toml)", str(self.session.kb.path),
                                    check=check, ok="Load"), self._pack_chosen)

    def _pack_chosen(self, path: str | None) -> None:
        if not path:
            return
        try:
            self.session.switch_pack(path)
        except InputError as exc:
            self.notify(str(exc), title="Pack refused", severity="error")
            return
        self._show_step(self.session.design.step)
        self.notify(f"loaded pack {self.session.kb.name} {self.session.kb.version}", title="Pack")

    def action_save(self) -> None:
        if self.session.session_path is None:
            self.action_save_as()
            return
        self._save_to(str(self.session.session_path), confirmed=True)

    def action_save_as(self) -> None:
        default = str(self.session.session_path or Path.cwd() / self.session.default_session_name())
        self.push_screen(PathDialog("Save the session (JSON)", default, check=_file_target, ok="Save"),
                         lambda p: self._save_to(p) if p else None)

    def _save_to(self, path: str, confirmed: bool = False) -> None:
        target = Path(path).expanduser()
        exists = target.exists() or target.is_symlink()  # a dangling link counts too
        if exists and not confirmed and target != self.session.session_path:
            self.push_screen(ConfirmDialog(f"{target} exists. Replace it?", yes="Replace", no="Keep"),
                             lambda ok: self._save_to(path, confirmed=True) if ok else None)
            return
        try:
            out = self.session.save(target)
        except (InputError, OSError) as exc:
            self.notify(describe_error(exc), title="Not saved", severity="error")
            return
        self.notify(f"saved {out}", title="Session")

    def action_export(self) -> None:
        if not self.session.can_visit("kernel"):
            self.notify("finish the loop step first: the kernel is built from it", severity="warning")
            return
        if self.current_mode != "kernel":
            self.goto("kernel")
            self.call_after_refresh(lambda: self.screen.run_action("export"))
        else:
            self.run_action_on_step("export")

    def action_copy_kernel(self) -> None:
        if not self.session.can_visit("kernel"):
            self.notify("finish the loop step first", severity="warning")
            return
        if self.current_mode != "kernel":
            self.goto("kernel")
            self.call_after_refresh(lambda: self.screen.run_action("copy"))
        else:
            self.run_action_on_step("copy")

    def run_action_on_step(self, name: str) -> None:
        s = self.step_screen()
        if s is not None:
            s.run_action_safely(name)

    def action_run_check(self) -> None:
        s = self.step_screen()
        if s is None or s.RUN_LABEL is None:
            self.notify("this step has no background check", severity="information")
            return
        s.run_action_safely("run_check")

    def action_rules(self) -> None:
        if isinstance(self.screen, RuleBrowserScreen):
            self.pop_screen()
            return
        self.push_screen(RuleBrowserScreen(self.session.kb))

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.current_theme.dark else DARK

    def action_trace(self) -> None:
        self._read_with("traced")

    def action_read_statically(self) -> None:
        self._read_with("static")

    def _read_with(self, front_end: str) -> None:
        """Read the task again with another front end: a new document (the Contract step asks before
        a trace runs the task's code)."""
        if not self.session.design.task or self.session.design.front_end == front_end:
            return
        self.session.set_front_end(front_end)
        self._show_step("contract")
        self.notify("tracing the model: the Contract step asks before its code runs" if front_end == "traced"
                    else "reading the task statically again", title="Front end")

    def action_reset_edits(self) -> None:
        def clear(d: Design) -> None:
            d.contract_edits = {}

        self.session.change("contract", clear)
        self._show_step(self.session.design.step)
        self.notify("contract edits cleared", title="Contract")


def _warm_imports(freeze_gc: bool = False) -> None:
    """Import the later steps' modules; then, for the real app, freeze the heap (see freeze_gc)."""
    import numpy  # noqa: F401  (the candidate ranking)

    import pypto_tui.codegen
    import pypto_tui.dims
    import pypto_tui.lint.engine  # noqa: F401

    if freeze_gc:
        gc.collect()
        gc.freeze()


def _file_target(text: str) -> str | None:
    p = Path(text).expanduser()
    if p.is_dir():
        return f"{p} is a folder: give a file name"
    if not p.parent.exists():
        return None  # created on save
    return None


def build_app(task: Path | None = None, kb: Path | None = None, session: Path | None = None,
              trust_task_code: bool = False, front_end: str = "static") -> PyptoApp:
    """The app, not yet running: a session file that cannot be read is refused here (InputError)."""
    return PyptoApp(task=task, kb=kb, session=session, freeze_gc=True, trust_task_code=trust_task_code,
                    front_end=front_end)


def run_app(app: PyptoApp) -> int:
    """Run the app; the return value is the process exit status."""
    app.run()
    return app.return_code or 0
