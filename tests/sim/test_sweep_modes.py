"""The three ways a sweep measures (exhaustive, guided by the estimate, guided by the documents),
its forecast and its stop signal, with the compiler replaced by a table of made-up times."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.kb import CostFit, bundled_pack_dir, load_pack
from pypto_tui.sim import design_runs as R
from pypto_tui.sim import jobs as J
from pypto_tui.sim import runner, timings
from pypto_tui.sim.sweep import estimate_guided_sweep

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def fake_time(label: str) -> float:
    """A made-up cost model: loop count 8 is best; among tiles, (1, 32, 256) is."""
    if label.startswith("loop_count"):
        n = int(label.split()[-1])
        return 10.0 + abs(math.log2(n) - 3) * 4
    tile = tuple(int(x) for x in label.strip("()").split(","))
    return 5.0 + abs(math.log2(tile[1]) - 5) * 3 + 2 * math.log2(tile[0]) + (0 if tile[-1] == 256 else 6)


@pytest.fixture
def compiler(monkeypatch, tmp_path):
    """run_many answers from fake_time; every job asked for is recorded."""
    asked: list[str] = []
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path / "cache"))

    def run_many(sim_jobs, **kw):
        out = []
        for j in sim_jobs:
            asked.append(j.label)
            out.append(J.SimResult(kind="cost", status=J.OK, label=j.label, e2e_us=fake_time(j.label), wall_s=2.0,
                                   peak_rss_mb=400.0))
            if kw.get("progress"):
                kw["progress"](len(out), len(sim_jobs), out[-1])
        return out

    monkeypatch.setattr(runner, "run_many", run_many)
    return asked


def pack_with(tmp_path: Path, ranking: str = "rules", **fits: CostFit) -> object:
    from pypto_tui.sim.calibrate import write_pack

    write_pack(tmp_path / "pack", dict(fits), "0.2.0", ["t"], ranking)
    return load_pack(tmp_path / "pack")


def test_exhaustive_measures_every_qualified_tile(compiler):
    p = Pipeline(load_pack(bundled_pack_dir()), Design(task=str(TASKS / "max_over_dim.py")))
    report = R.sweep_tiles(p, exhaustive=True, challengers=2)
    qualified = [c for c in p.tile_plan(top=None).candidates if c.qualified]
    assert report.mode == "exhaustive" and report.to_dict()["exhaustive"] is True
    assert {str(tuple(c.tile)) for c in qualified} <= set(compiler)
    assert report.simulations == len(qualified) + 2 == len(compiler)
    assert report.best_qualified.label == "(1, 32, 256)"
    assert report.best_by_rules.label == "(1, 16, 256)" and report.best_by_rules.measured
    d = report.to_dict()
    assert {"best_by_rules", "best_qualified", "best_by_cost", "best_by_estimate", "forecast_s", "jobs"} <= set(d)


def test_without_a_fit_the_documents_guide_and_say_why(compiler, tmp_path):
    only_softmax = pack_with(tmp_path, softmax=CostFit("softmax", "0.2.0", {"segments": 1.0}))
    p = Pipeline(only_softmax, Design(task=str(TASKS / "group_norm.py")))
    report = R.sweep_loops(p)
    assert report.mode == "guided"
    assert "no fitted estimate" in report.estimate and any("norm" in n for n in report.notes)
    assert report.simulations < 5 and report.best_by_estimate is None


def test_the_estimate_guides_the_loop_sweep_and_stops_early(compiler, tmp_path):
    fit = CostFit("norm", "0.2.0", {"iterations": 0.4}, error=0.02, samples=9, tasks=("a", "b"))
    p = Pipeline(pack_with(tmp_path, norm=fit), Design(task=str(TASKS / "group_norm.py")))
    report = R.sweep_loops(p)
    assert report.mode == "estimate"
    assert report.best_by_estimate.label == "loop_count 8" and report.best_by_estimate.measured
    assert report.best_by_rules.label == "loop_count 16"
    assert compiler[0] == "loop_count 8" and report.simulations < report.qualified
    assert "rules out" in report.stopped


def test_a_loose_estimate_measures_more(compiler, tmp_path):
    tight = CostFit("norm", "0.2.0", {"iterations": 0.4}, error=0.02)
    loose = CostFit("norm", "0.2.0", {"iterations": 0.4}, error=0.6)
    counts = []
    for fit in (tight, loose):
        compiler.clear()
        p = Pipeline(pack_with(tmp_path / fit.error.__str__(), norm=fit), Design(task=str(TASKS / "group_norm.py")))
        counts.append(R.sweep_loops(p).simulations)
    assert counts[0] < counts[1]


def test_estimate_guided_search_rules():
    values = {"a": 10.0, "b": 12.0, "c": 30.0, "d": 9.5}
    calls: list[list[str]] = []

    def measure(batch):
        calls.append(list(batch))
        return [values[c] for c in batch]

    r = estimate_guided_sweep(list(values), [10.0, 14.0, 30.0, 10.5], measure, error=0.0, parallel=2)
    # the error floor keeps d (estimated 5% dearer than a) in play; b and c are ruled out
    assert calls == [["a"], ["d"]] and r.best == "d" and "rules out" in r.stopped
    failed = estimate_guided_sweep(["x", "y"], [1.0, 2.0], lambda b: [None for _ in b], error=0.1)
    assert failed.best is None and failed.measurements == 2
    capped = estimate_guided_sweep(list(values), [10.0, 14.0, 30.0, 10.5], measure, error=5.0, max_measurements=2)
    assert capped.measurements == 2 and "budget" in capped.stopped
    unpriced = estimate_guided_sweep(["x"], [None], measure, error=0.1)
    assert unpriced.measurements == 0 and "prices no" in unpriced.stopped


def test_forecast_from_history_and_jobs_sized_to_memory(tmp_path):
    hist = tmp_path / "t.jsonl"
    for tiles, wall in ((16, 5.0), (256, 20.0), (4096, 80.0)):
        timings.record(timings.Size("norm", tiles, 1 << 20), wall, 500.0, hist)
    runs = timings.load_history(hist)
    f = timings.forecast(timings.Size("norm", 1024, 1 << 20), runs)
    assert 20.0 < f.wall_s < 80.0 and "norm" in f.basis
    other = timings.forecast(timings.Size("softmax", 1024, 1 << 30), runs)
    assert "past compile" in other.basis and other.rss_mb > 3000        # 1 GB of tensors
    default = timings.forecast(timings.Size("x", 2048, 0), [])
    assert default.wall_s == pytest.approx(8 + 0.005 * 2048) and default.basis.startswith("the pypto")
    jobs, why = timings.jobs_for(2, 2600.0, free_mb=4000.0, cores=2)
    assert jobs == 1 and "GB" in why
    assert timings.jobs_for(4, 400.0, free_mb=20000.0, cores=2)[0] == 2
    assert timings.jobs_for(2, 400.0, free_mb=20000.0, cores=2) == (2, "")


def test_sweep_forecast_is_announced_before_the_first_compile(compiler):
    p = Pipeline(load_pack(bundled_pack_dir()), Design(task=str(TASKS / "max_over_dim.py")))
    seen: list[tuple[int, str]] = []
    R.sweep_tiles(p, exhaustive=True, forecast=lambda f: seen.append((len(compiler), f.text())))
    assert seen and seen[0][0] == 0 and "simulation" in seen[0][1] and "about" in seen[0][1]


FAKE_SLOW = """#!/bin/sh
sleep 60
"""


def test_stop_signal_cancels_the_running_workers(tmp_path):
    py = tmp_path / "python"
    py.write_text(FAKE_SLOW)
    py.chmod(0o755)
    stop = runner.StopSignal()
    jobs = [J.SimJob(kind="cost", kernel_source=f"X = {i}", inputs=(J.InputSpec((4,)),), label=f"j{i}")
            for i in range(3)]
    threading.Timer(1.0, stop.cancel, args=("cancelled by the test",)).start()
    t = time.monotonic()
    out = runner.run_many(jobs, jobs=2, cache=False, python=str(py), stop=stop)
    assert time.monotonic() - t < 20
    assert [r.status for r in out] == [J.CANCELLED] * 3 and out[0].error == "cancelled by the test"
    assert not runner.live_workers()


def test_time_budget_stops_a_sweep_and_keeps_what_finished(compiler, tmp_path):
    p = Pipeline(load_pack(bundled_pack_dir()), Design(task=str(TASKS / "max_over_dim.py")))
    stop = runner.StopSignal(budget_s=0.001)
    time.sleep(0.01)
    report = R.sweep_tiles(p, exhaustive=True, stop=stop)
    assert report.stopped.startswith("stopped: the time budget") and report.simulations == 0


def test_cli_rejects_exhaustive_without_a_sweep():
    out = subprocess.run([sys.executable, "-m", "pypto_tui", "sim", str(TASKS / "elu.py"), "--exhaustive"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--sweep" in out.stderr and "Traceback" not in out.stderr


def test_calibrate_measures_fits_and_writes_a_pack_that_changes_the_ranking(compiler, tmp_path, monkeypatch):
    """kb calibrate end to end (the compiler replaced by fake_time, where (1, 32, 256) is fastest):
    the pack it writes extends the default, names the pypto version and the tasks, and ranks by
    its estimate; a pack with ranking = "rules" keeps the documents' (1, 16, 256)."""
    from pypto_tui.sim import calibrate as C
    from pypto_tui.sim import shim

    monkeypatch.setattr(shim, "pypto_version", lambda: "0.2.0")
    kb = load_pack(bundled_pack_dir())
    out = tmp_path / "cal"
    tasks = [(TASKS / "max_over_dim.py", ("tiles",)), (TASKS / "sum_over_channels.py", ("tiles",))]
    result = C.calibrate(kb, tasks, out, ranking="estimate")
    assert set(result.fits) >= {"reduction"} and result.pypto == "0.2.0"
    assert result.fits["reduction"].tasks == ("max_over_dim", "sum_over_channels")
    # the documents' challengers are measured too, and marked: the fit scores picks without them
    runs = result.tasks[0]
    rejected = {tuple(r.value) for r in runs.reports[0].rows if r.measured and not r.qualified}
    assert rejected and {s.point.tile for s in runs.samples if not s.qualified} == rejected
    pack = load_pack(out)
    assert pack.name == "calibrated" and pack.estimate.ranking == "estimate"
    assert "0.2.0" in (out / "pack.toml").read_text() and "max_over_dim" in pack.estimate.note
    assert pack.rules == kb.rules  # everything but the estimate comes from the default
    ranked = Pipeline(pack, Design(task=str(TASKS / "max_over_dim.py"))).tile_plan()
    documents = Pipeline(pack_with(tmp_path, "rules", reduction=result.fits["reduction"]),
                         Design(task=str(TASKS / "max_over_dim.py"))).tile_plan()
    assert documents.recommended.tile == (1, 16, 256) and documents.ranking == "rules"
    assert ranked.ranking == "estimate" and ranked.recommended.tile != (1, 16, 256)
    assert ranked.best_by_rules.tile == (1, 16, 256)
    with pytest.raises(Exception, match="--force"):
        C.calibrate(kb, tasks, out)


def test_the_guided_tile_sweep_trusts_the_spread_near_the_best():
    """pick_error (the fit's spread among runs near each task's best) bounds the guided tile sweep;
    a pack written before it existed (0) falls back to the spread over all runs."""
    fit = CostFit("loss", "0.2.0", {"balance": 1.0}, error=0.32, pick_error=0.2)
    assert R._tile_error(fit) == 0.2
    assert R._tile_error(CostFit("loss", "0.2.0", {"balance": 1.0}, error=0.32)) == 0.32
