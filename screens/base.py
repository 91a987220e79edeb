"""The base of the five step screens: indicator, Back/Next, the error line, safe recomputation.

Every step screen is a thin view over `Session`/`Pipeline`. This base gives them the same frame
(header, step indicator, body, a navigation bar with Back/Next and a status line, footer) and
one rule for errors: whatever the core raises while computing a step is shown in place, never
propagated (an InputError's message is written for users; anything else is labelled internal).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Footer, Header, ProgressBar, Select, Static

from pypto_tui.design import STEPS
from pypto_tui.errors import InputError
from pypto_tui.screens.messages import WorkFinished, WorkProgress
from pypto_tui.screens.widgets import STEP_LABELS, StepIndicator, StepTab
from pypto_tui.sim.stages import duration

if TYPE_CHECKING:
    from pypto_tui.screens.app import PyptoApp
    from pypto_tui.screens.session import Session

T = TypeVar("T")
STATUS_STYLE = {"error": "$text-error bold", "warn": "$text-warning", "ok": "$text-success", "info": "$text-accent"}


def describe_error(exc: BaseException) -> str:
    """One line for the user: InputError messages as they are, anything else marked internal."""
    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, ImportError | ModuleNotFoundError):
        return f"a library this step needs is missing ({exc}): reinstall pypto-tui"
    return f"internal error ({type(exc).__name__}): {exc}"


def attempt(fn: Callable[[], T]) -> tuple[T | None, str | None]:
    """Run one core call; (value, None) or (None, message). The app never crashes on a step."""
    try:
        return fn(), None
    except Exception as exc:
        return None, describe_error(exc)


PREPARED_KEPT = 64
"""Designs a step remembers having computed (a chain's kernels, each one design)."""
QUIT_KEYS = frozenset({"ctrl+q", "ctrl+c"})
"""Keys that act even while a step is being computed (everything else waits for the user to see it)."""
BUSY_SHOWN_AFTER = 0.3
"""Seconds of background work before the loading indicator covers the body (no flash for cache hits,
even on a busy machine; the status line says what is computed at once)."""


class StepScreen(Screen[None]):
    """One step of the design. Subclasses set STEP and implement compose_body/refresh_step.

    Arriving at a step (a step change, another kernel of a chain, a new task or pack) computes it in
    a thread worker (`prepare`, the pipeline calls `refresh_step` makes, which fills the caches),
    then `refresh_step` shows it from the caches on the UI thread. Until the result is painted the
    screen is `busy`: the status line says what is being computed, a loading indicator covers the
    body, and keys are dropped (`drops_key`): a key pressed before the user saw the step must not
    act on it (a second ctrl+n on a slow Loops step used to open the Kernel step's export dialog)."""

    STEP: ClassVar[str] = "contract"
    RUN_LABEL: ClassVar[str | None] = None
    KERNEL_PICKER: ClassVar[bool] = False  # the step shows one kernel of a chain at a time
    BUSY_TEXT: ClassVar[str] = "computing this step"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "next", "Next", priority=True),
        Binding("ctrl+b", "back", "Back", priority=True),
        Binding("ctrl+k", "pick_kernel", "Kernel", priority=True),
        Binding("alt+right", "next", "Next", show=False, priority=True),
        Binding("alt+left", "back", "Back", show=False, priority=True),
        *[Binding(str(i), f"app.goto('{step}')", STEP_LABELS[step], show=False)
          for i, step in enumerate(STEPS, 1)],
    ]

    @property
    def papp(self) -> PyptoApp:
        return self.app  # type: ignore[return-value]

    @property
    def session(self) -> Session:
        return self.papp.session

    _status: tuple[str, str] | None = None
    _frame_sig: Any = None

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield StepIndicator(id="steps")
        with Vertical(id="body", classes=f"body-{self.STEP}"):
            yield Static("", id="stale-banner", classes="banner")
            if self.KERNEL_PICKER:
                # no blank entry: a chain always has a chosen kernel (the one option is replaced on sync)
                yield Select[int]([("kernel", -1)], id="kernel-picker", compact=True, allow_blank=False)
            yield from self.compose_body()
        with Horizontal(id="work"):
            yield ProgressBar(id="work-bar", show_eta=False)
            yield Static("", id="work-text")
        with Horizontal(id="nav"):
            yield Button("◀ Back", id="back", compact=True, disabled=self.STEP == STEPS[0])
            yield Static("", id="status")
            yield Button("Next ▶" if self.STEP != STEPS[-1] else "Export", id="next", compact=True,
                         variant="primary")
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    # ------------------------------------------------------------------ lifecycle
    busy: bool = False
    """The step is being computed in the background: its body is not the current design's yet."""
    _shown_at: float | None = None
    """When the step's content was last painted (None: not since the step was entered); keys
    pressed before that are dropped."""
    _refresh_pending = False
    _busy_timer: Timer | None = None

    def on_mount(self) -> None:
        self.papp.quiet_cursor(self)
        self.sync_frame()
        self.refresh_in_background()
        self.call_after_refresh(self.papp.settle_heap)

    def on_screen_resume(self) -> None:
        self.papp.quiet_cursor(self)
        self.sync_frame()
        if getattr(self, "_mounted_once", False):
            self.refresh_in_background()
        self._mounted_once = True

    def on_screen_suspend(self) -> None:
        self._shown_at = None  # coming back shows the step anew

    def drops_key(self, key: events.Key) -> bool:
        """Whether a key must be dropped: pressed while the step is computed, or before its current
        content was painted (it was queued while the UI thread was busy). Quitting always works."""
        if key.key in QUIT_KEYS:
            return False
        return self.busy or self._leaving or self._shown_at is None or key.time < self._shown_at

    def prepare(self) -> None:
        """The pipeline calls `refresh_step` will make, run in a thread so it finds them cached
        (subclasses add theirs). Must not touch widgets; errors are left for refresh_step to show."""
        self.session.kernels()

    def refresh_in_background(self) -> None:
        """Compute the step off the UI thread, then show it (see the class docstring)."""
        if self.busy:
            self._refresh_pending = True
            return
        self._shown_at = None
        signature = self._design_signature()
        if signature in self._prepared_for:  # computed for this very design: the caches answer at once
            self.safe_refresh()
            self._focus_if_lost()
            self.call_after_refresh(self._mark_shown)
            return
        self.busy = True
        self._refresh_pending = False
        self.set_status(f"{self.BUSY_TEXT}…", "info")
        if self._busy_timer is not None:
            self._busy_timer.stop()
        self._busy_timer = self.set_timer(BUSY_SHOWN_AFTER, self._show_busy)
        self._prepare_worker(signature)

    _prepared_for: tuple[Any, ...] = ()
    """The designs `prepare` ran for lately (the pipelines keep their results): coming back to one, such
    as another kernel of a chain already shown, is painted at once, without the worker's round trip."""

    def _design_signature(self) -> Any:
        """What `prepare` computed from: the pipeline object (a new task or pack makes a new one)
        and the whole design (every decision, the shown kernel)."""
        s = self.session
        return (id(s.pipeline), id(s.kb), s.design.to_json())

    def _show_busy(self) -> None:
        if self.busy:
            self.query_one("#body").loading = True

    @work(thread=True, group="step-prepare", exit_on_error=False)
    def _prepare_worker(self, signature: Any) -> None:
        # one at a time: `busy` holds the next request until this one is shown
        try:
            self.prepare()
        except Exception:  # refresh_step computes it again and shows the error in place
            signature = None
        with contextlib.suppress(RuntimeError):  # the app closed meanwhile
            self.app.call_from_thread(self._prepared, signature)

    def _prepared(self, signature: Any = None) -> None:
        self.busy = False
        if signature is None:  # prepare failed: refresh_step shows why, and the next visit tries again
            self._prepared_for = ()
        elif signature not in self._prepared_for:
            self._prepared_for = (*self._prepared_for, signature)[-PREPARED_KEPT:]
        if self._busy_timer is not None:
            self._busy_timer.stop()
            self._busy_timer = None
        self.query_one("#body").loading = False
        if self._refresh_pending:  # the design changed again meanwhile (a new task, another pack)
            self.call_later(self.refresh_in_background)  # after this worker has returned
            return
        self._status = None  # the refresh writes the step's own status line
        self.set_status("", "info")
        self.safe_refresh()
        self._focus_if_lost()
        self.call_after_refresh(self._mark_shown)

    def _focus_if_lost(self) -> None:
        """AUTO_FOCUS ran when the screen was entered, before its body was built (or while the
        loading indicator covered it): focus its target now if nothing has the focus."""
        if self.focused is not None or self.AUTO_FOCUS is None:
            return
        for w in self.query(self.AUTO_FOCUS).results():
            if w.focusable:
                w.focus()
                return

    def _mark_shown(self) -> None:
        if not self.busy:
            self._shown_at = time.monotonic()
            self._focus_if_lost()  # laid out now: a panel that scrolls can take the focus

    def safe_refresh(self) -> None:
        if self.busy:
            self._refresh_pending = True
            return
        try:
            if self.KERNEL_PICKER:
                self._sync_kernel_picker()
            self.refresh_step()
        except Exception as exc:
            self.set_status(describe_error(exc), "error")

    def refresh_step(self) -> None:
        """Recompute from the pipeline and show it (cached steps cost nothing)."""

    _picker_sig: Any = None

    def _sync_kernel_picker(self) -> None:
        """One entry per kernel of a chain (hidden for a task of one kernel)."""
        picker = self.query_one("#kernel-picker", Select)
        stages = self.session.kernels()
        picker.display = bool(stages)
        if self._has_kernels != bool(stages):
            self._has_kernels = bool(stages)
            self.refresh_bindings()
        options = [(f"kernel {s.index} of {len(stages)}: {s.ops} ({s.kernel.pattern})"
                    + (f" in {s.submodule}" if s.submodule else ""), s.index) for s in stages]
        sig = (tuple(options), self.session.design.kernel)
        if sig == self._picker_sig:
            return
        self._picker_sig = sig
        if not stages:
            return  # hidden; a Select without a blank entry cannot be left with no options
        with self.prevent(Select.Changed):
            picker.set_options(options)
            picker.value = min(self.session.design.kernel, len(stages) - 1)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "kernel-picker" or not isinstance(event.value, int) or event.value < 0:
            return  # -1: the placeholder a task of one kernel keeps (its picker is hidden)
        if event.value != event.select.value:
            return  # a value the sync has since replaced
        event.stop()
        if self.busy:
            return
        self.session.set_kernel(event.value)
        self.refresh_in_background()

    _has_kernels = False
    """The step shows a chain's kernel picker (its key is then listed in the footer)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The kernel key is listed only where a picker is shown (a chain's steps 2-4)."""
        if action == "pick_kernel":
            return self._has_kernels
        return True

    def action_pick_kernel(self) -> None:
        """Open the kernel picker (a chain's steps 2-4): a filter over the kernels, each with its
        submodule path; the one picked is shown like a pick in the Select above the step."""
        if self.busy or not self._has_kernels:
            return
        from pypto_tui.screens.kernel_picker import KernelPickerDialog, KernelRow

        rows = [KernelRow.of(s) for s in self.session.kernels()]
        self.app.push_screen(KernelPickerDialog(rows, self.session.design.kernel), self._kernel_picked)

    def _kernel_picked(self, index: int | None) -> None:
        if index is None or self.busy:
            return
        self.session.set_kernel(index)
        self.refresh_in_background()

    def sync_frame(self) -> None:
        """Indicator, stale banner and subtitle. Runs on every change (each keystroke in a tile
        field), so it does nothing unless what it shows changed: restyling costs a frame."""
        s = self.session
        visitable = tuple(st for st in STEPS if s.can_visit(st))
        reason = s.stale_reason.get(self.STEP) if self.STEP in s.stale else None
        sig = (tuple(sorted(s.finished)), tuple(sorted(s.stale)), visitable, reason, self.papp.describe_design())
        if sig == self._frame_sig:
            return
        self._frame_sig = sig
        self.query_one(StepIndicator).show(self.STEP, s.finished, s.stale, visitable)
        banner = self.query_one("#stale-banner", Static)
        banner.update(f"! This step was {reason}: review it and press Next." if reason else "")
        banner.display = bool(reason)
        self.sub_title = sig[-1]

    def set_status(self, text: str, level: str = "info") -> None:
        """The one-line status under the body (skipped when unchanged: the keystroke path)."""
        if (text, level) == self._status:
            return
        self._status = (text, level)
        # The colour goes in the text, not a CSS class: restyling a node costs more than a frame.
        self.query_one("#status", Static).update(Content.styled(text, STATUS_STYLE.get(level, "")), layout=False)

    # ------------------------------------------------------------------ long work
    _work_started: float | None = None
    _work_text = ""
    _work_timer: Timer | None = None

    def with_consent_to_run(self, task: str, what: str, then: Callable[[], None],
                            declined: Callable[[], None] | None = None) -> None:
        """Run `then` once the user has agreed that this task file's code may run (asked once per
        task file per app run; `ui --trust` skips the question). A task file is code: opening it
        only reads it, and nothing of it runs without a yes."""
        papp = self.papp
        key = str(task)
        if papp.trust_task_code or key in papp.trusted_tasks:
            then()
            return
        from pypto_tui.errors import one_line as printable
        from pypto_tui.screens.dialogs import ConfirmDialog

        def answered(yes: bool | None) -> None:
            if not yes:
                self.notify(f"{what} was not run: nothing of {printable(Path(key).name)} was executed",
                            title="Not run", severity="warning")
                if declined is not None:
                    declined()
                return
            papp.trusted_tasks.add(key)
            then()

        self.app.push_screen(ConfirmDialog(
            f"{what} runs the code in {printable(Path(key).name)} (its Model and get_inputs) in a subprocess "
            f"of its own process group, stopped at its timeout. A task file is code: run only files you trust.",
            yes="Run it", no="Cancel", title="Run the task file?"), answered)

    def start_work(self, text: str) -> None:
        """Show the progress row; a thread worker then reports with WorkProgress/WorkFinished.
        The row ends with the time since the work started, redrawn every second: a worker reports
        only when its stage changes, and a compile can stay in one stage for minutes (the row
        said "· 3 s" all the way through)."""
        self.query_one("#work").display = True
        self.query_one("#work-bar", ProgressBar).update(total=None, progress=0)
        self._work_started = time.monotonic()
        self._work_text = text
        self._draw_work_text()
        if self._work_timer is None:
            self._work_timer = self.set_interval(1.0, self._draw_work_text)
        self._work_timer.resume()
        self.set_status(text, "info")

    def _draw_work_text(self) -> None:
        if self._work_started is None:
            return
        elapsed = duration(time.monotonic() - self._work_started)
        self.query_one("#work-text", Static).update(f"{self._work_text} · {elapsed}", layout=False)

    def on_work_progress(self, message: WorkProgress) -> None:
        message.stop()
        self.query_one("#work").display = True
        bar = self.query_one("#work-bar", ProgressBar)
        bar.update(total=message.total or None, progress=message.done)
        if message.text:
            self._work_text = message.text
            self._draw_work_text()

    def on_work_finished(self, message: WorkFinished) -> None:
        message.stop()
        self.query_one("#work").display = False
        self._work_started = None
        if self._work_timer is not None:
            self._work_timer.pause()
        try:
            self.work_finished(message.job, message.result, message.error)
        except Exception as exc:
            self.set_status(describe_error(exc), "error")

    def work_finished(self, job: str, result: Any, error: str | None) -> None:
        """Show what a worker found (subclasses)."""

    # ------------------------------------------------------------------ navigation
    def next_blocked(self) -> str | None:
        """Why Next is refused (None: the step is complete)."""
        return None

    def action_next(self) -> None:
        if self.busy:
            return  # the user has not seen this step yet
        if self.STEP == STEPS[-1]:
            self.run_action_safely("export")
            return
        reason = None
        try:
            reason = self.next_blocked()
        except Exception as exc:
            reason = describe_error(exc)
        if reason:
            self.set_status(reason, "error")
            self.notify(reason, title="Cannot go on yet", severity="warning")
            return
        self.session.finish(self.STEP)
        self.leave_for(STEPS[STEPS.index(self.STEP) + 1])

    def action_back(self) -> None:
        if self.busy:
            return
        idx = STEPS.index(self.STEP)
        if idx > 0:
            self.leave_for(STEPS[idx - 1])

    _leaving = False

    def leave_for(self, step: str) -> None:
        """Say which step is being opened, paint that, then open it: building a step's screen the
        first time holds the UI thread for a moment, and the old status line stayed up meanwhile.
        Keys pressed from here on are dropped (they were meant for the step being opened)."""
        self._leaving = True
        self.set_status(f"opening {STEP_LABELS[step]}…", "info")

        def go() -> None:
            self._leaving = False
            self.papp.goto(step)

        self.call_after_refresh(go)

    def run_action_safely(self, name: str) -> None:
        fn: Any = getattr(self, f"action_{name}", None)
        if fn is not None:
            fn()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "next":
            event.stop()
            self.action_next()
        elif event.button.id == "back":
            event.stop()
            self.action_back()

    def on_step_tab_clicked(self, event: StepTab.Clicked) -> None:
        if not self.busy:
            self.papp.action_goto(event.step)
