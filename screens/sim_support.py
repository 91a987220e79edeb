"""The "simulate" action shared by the tile and loop screens: a guided sweep in a thread worker.

The sweep itself (which candidates to compile, in what order, when to stop, the subprocesses, the
cache) belongs to `pypto_tui.sim.design_runs`; the screen starts it, shows its forecast and
progress, and draws what came back: a time column, the cost curve, and the rules' verdict beside
the estimate's and the cost model's (all shown, none hidden). A sweep runs within a time budget
(PYPTO_TUI_SIM_BUDGET seconds, 10 minutes unless set) and Escape cancels it; either way what
finished is shown. Without the [sim] extra the action says what to install.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import work

from pypto_tui.design import Pipeline
from pypto_tui.screens.messages import WorkFinished, WorkProgress

SWEEP_JOBS = 2
BUDGET_ENV = "PYPTO_TUI_SIM_BUDGET"
DEFAULT_BUDGET_S = 600.0


def sim_budget_s() -> float:
    """The app's time budget for one sweep, in seconds ($PYPTO_TUI_SIM_BUDGET, else 10 minutes)."""
    try:
        value = float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET_S))
    except ValueError:
        return DEFAULT_BUDGET_S
    return value if value > 0 else DEFAULT_BUDGET_S


def sim_unavailable() -> str | None:
    """None when the simulator can run here, else the one-line reason and what to install."""
    try:
        from pypto_tui.sim.availability import check_sim
    except ImportError:
        return "the simulator is not available in this build"
    av = check_sim()
    return None if av.ok else av.message


def detached(pipeline: Pipeline) -> Pipeline:
    """A private copy for a worker thread: the user keeps editing the design meanwhile."""
    return Pipeline(pipeline.kb, copy.deepcopy(pipeline.design))


def progress_line(done: int, total: int, result: Any, elapsed_s: float | None = None) -> str:
    """`3/8 compiled · about 40 s left · last: (1, 8192) 8.8 µs`."""
    from pypto_tui.sim.stages import duration, eta_s

    label = getattr(result, "label", "") or ""
    us = getattr(result, "e2e_us", None)
    status = getattr(result, "status", "")
    what = f"{us:.1f} µs" if isinstance(us, int | float) else status
    cached = " (cached)" if getattr(result, "cached", False) else ""
    left = eta_s(done, total, elapsed_s) if elapsed_s is not None else None
    eta = f" · about {duration(left)} left" if left is not None else ""
    return f"{done}/{total} compiled{eta} · last: {label} {what}{cached}"


def stage_line(what: str, stage: str) -> str:
    """`verify: compiling and running the kernel`: what a worker is doing (the progress row adds
    the time since the work started, and keeps it running)."""
    from pypto_tui.sim.stages import describe

    return f"{what}: {describe(stage)}"


class SimRunner:
    """Mixin for a StepScreen: ctrl+r runs the guided sweep of SIM_KIND ("tiles" or "loops")."""

    SIM_KIND: ClassVar[str] = "tiles"

    # provided by StepScreen / the concrete screen
    session: Any
    set_status: Callable[..., None]
    notify: Callable[..., None]
    start_work: Callable[[str], None]
    post_message: Callable[..., bool]

    def sim_results(self, report: Any) -> None:
        """Fill the time column / draw the curve from a SweepReport."""

    _sim_stop: Any = None

    def action_run_check(self) -> None:
        why = sim_unavailable()
        if why is not None:
            self.set_status(why, "warn")
            self.notify(why, title="Simulator not available", severity="warning", timeout=8)
            return
        from pypto_tui.sim.runner import StopSignal
        from pypto_tui.sim.stages import duration

        self._sim_stop = StopSignal(sim_budget_s())
        self.start_work(f"simulating {self.SIM_KIND} candidates in SIM mode (budget {duration(sim_budget_s())}, "
                        "Escape cancels)…")
        self._sim_worker(detached(self.session.pipeline), self.SIM_KIND, self._sim_stop)

    def action_cancel_sim(self) -> None:
        """Escape: stop the sweep; what finished is still shown."""
        if self._sim_stop is not None:
            self._sim_stop.cancel("cancelled")
            self.set_status("cancelling the simulation…", "warn")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_sim":
            return self._sim_stop is not None
        # the step screen's (SimRunner is mixed into StepScreens only)
        allowed: bool | None = super().check_action(action, parameters)  # type: ignore[misc]
        return allowed

    @work(thread=True, exclusive=True, group="sim", exit_on_error=False)
    def _sim_worker(self, pipeline: Pipeline, kind: str, stop: Any = None) -> None:
        from pypto_tui.screens.base import describe_error

        started = time.monotonic()
        counts = [0, 0]

        def forecast(f: Any) -> None:
            self.post_message(WorkProgress("sim", 0, f.simulations, f"{f.text()} · Escape cancels"))

        def progress(done: int, total: int, result: Any) -> None:
            counts[:] = [done, total]
            self.post_message(WorkProgress("sim", done, total,
                                           progress_line(done, total, result, time.monotonic() - started)))

        def status(job: Any, stage: str) -> None:
            self.post_message(WorkProgress("sim", counts[0], counts[1],
                                           stage_line(f"{counts[0]}/{counts[1] or '?'} compiled · "
                                                      f"{getattr(job, 'label', '')}", stage)))

        try:
            from pypto_tui.sim import design_runs

            sweep = design_runs.sweep_tiles if kind == "tiles" else design_runs.sweep_loops
            report = sweep(pipeline, jobs=SWEEP_JOBS, progress=progress, status=status, stop=stop,
                           forecast=forecast)
        except Exception as exc:
            self.post_message(WorkFinished("sim", error=describe_error(exc)))
            return
        self.post_message(WorkFinished("sim", report))

    def work_finished(self, job: str, result: Any, error: str | None) -> None:
        if job != "sim":
            return
        self._sim_stop = None
        if error:
            self.set_status(f"simulate failed: {error}", "error")
            self.notify(error, title="Simulate failed", severity="error")
            return
        self.sim_results(result)


def roofline_summary(pipeline: Any, report: Any) -> list[str]:
    """The task's roofline and how far the sweep's fastest candidate is from it: the
    figure that says whether the best of the candidates is any good."""
    from pypto_tui.roofline import try_roofline

    bound, why = try_roofline(pipeline.contract(), pipeline.kb)
    if bound is None:
        return [f"no roofline: {why}"]
    cost = report.best_by_cost
    line = (f"roofline      {bound.roofline_us:.3g} µs, {bound.bound}-bound (memory {bound.memory_us:.3g}, "
            f"vector {bound.vector_us:.3g}, cube {bound.cube_us:.3g} µs)")
    if cost is not None and cost.e2e_us:
        line += f": the fastest takes {cost.e2e_us / bound.roofline_us:.1f}x the roofline"
    return [line]


def sweep_summary(report: Any) -> list[str]:
    """The sweep in words: both verdicts side by side, the disagreements, the effort saved."""
    lines: list[str] = []
    rules, cost, est = report.best_by_rules, report.best_by_cost, getattr(report, "best_by_estimate", None)
    for who, row in (("rules' pick  ", rules), ("estimate's   ", est)):
        if row is None:
            continue
        us = f"{row.e2e_us:.2f} µs" if row.e2e_us is not None else "not measured"
        guess = f" (estimated {row.estimate_us:.2f} µs)" if getattr(row, "estimate_us", None) is not None else ""
        lines.append(f"{who} {row.label}: {us}{guess}")
    if cost is not None:
        lines.append(f"cost model's  {cost.label}: {cost.e2e_us:.2f} µs ({cost.rule_verdict})")
    lines += [f"≠ {d}" for d in report.disagreements]
    lines += list(report.notes)
    failed = [r for r in report.rows if r.measured and r.e2e_us is None]
    lines += [f"✗ {r.label}: {r.status} {r.reason or ''}".rstrip() for r in failed]
    return lines
