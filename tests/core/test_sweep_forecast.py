"""The sweep forecast is not wildly off for a small task (issue 25, 11: "about 1 s" for a sweep
that took 18.8 s). No compiler: the history is written by hand."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.sim import timings


def _history(tmp_path: Path, runs: list[tuple[int, float]], family: str = "softmax") -> list[timings.Run]:
    path = tmp_path / "timings.jsonl"
    for tiles, wall in runs:
        timings.record(timings.Size(family, tiles, 1 << 20), wall, 900.0, path)
    return timings.load_history(path)


def test_a_few_tiles_cost_at_least_the_fastest_past_compile(tmp_path: Path) -> None:
    """Compiles of 256..4096 tiles that all took about 9 s (the worker's start-up dominates): the
    fitted exponent is held at 0.3, and the power law alone predicted ~1 s for one tile."""
    runs = _history(tmp_path, [(256, 9.1), (512, 8.7), (1024, 9.4), (2048, 9.0), (4096, 9.8)])
    one = timings.forecast(timings.Size("softmax", 1, 1 << 10), runs)
    assert one.wall_s >= 8.7 and "softmax" in one.basis
    other_family = timings.forecast(timings.Size("conv", 2, 1 << 10), runs)  # every family's runs
    assert other_family.wall_s >= 8.7


def test_larger_tile_counts_still_grow_with_the_history(tmp_path: Path) -> None:
    runs = _history(tmp_path, [(16, 5.0), (256, 20.0), (4096, 80.0)], family="norm")
    small, mid = (timings.forecast(timings.Size("norm", n, 1 << 20), runs).wall_s for n in (1, 1024))
    assert small >= 5.0 and 20.0 < mid < 80.0


def test_a_busy_machine_lengthens_the_forecast(monkeypatch, tmp_path: Path) -> None:
    """Under load each compile gets a share of the cores: load 4 on 2 cores with 2 workers is 3x."""
    from pypto_tui.sim import design_runs as R

    history = _history(tmp_path, [(64, 10.0), (256, 10.0)])
    monkeypatch.setattr(timings, "load_history", lambda *a, **k: history)
    monkeypatch.setattr(timings, "jobs_for", lambda jobs, rss: (2, ""))
    size = timings.Size("softmax", 64, 1 << 20)
    monkeypatch.setattr(timings.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(timings.os, "cpu_count", lambda: 2)
    idle = R._forecast("tiles", [size, size], 2, False, 2)
    monkeypatch.setattr(timings.os, "getloadavg", lambda: (4.0, 4.0, 4.0))
    busy = R._forecast("tiles", [size, size], 2, False, 2)
    assert idle.jobs_note == "" and busy.seconds == idle.seconds * 3
    assert "busy (load 4.0 on 2 core(s))" in busy.text()
    assert timings.load_factor(1, cores=8) == (1.0, "")  # a light load on a large machine changes nothing
