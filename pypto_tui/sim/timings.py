"""How long a simulation will take and how much memory its worker will hold, from past runs.

A sweep on a large tensor can take an hour and each worker can hold gigabytes; saying so before
it starts is the difference between a sweep that finishes and one the user kills. Every finished,
uncached compile is appended to `<cache>/timings.jsonl` (the operator family, the tiles the
tensor is cut into, the bytes of its tensors, the wall seconds and the worker's peak memory),
and a forecast for a new candidate reads that history:

- time: the same family's runs, as a power law in the tile count (log-log least squares), never
  below the fastest of those runs (the worker's start-up is paid by every compile), else every
  family's, else a default measured on pypto 0.2.0 (about 8 s plus 5 ms per tile);
- memory: the peak of the nearest past run on tensors of the same size, else a default: 400 MB (torch and
  pypto) plus 3.6 x the tensors' bytes (pypto's cost model writes into the inputs and outputs and
  keeps a device copy) plus 30 KB per tile (its trace).

`jobs_for` then sizes the parallel jobs to the machine: no more than its cores, and no more than
fit in the memory available now.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pypto_tui.sim.cache import cache_root

HISTORY_FILE = "timings.jsonl"
KEEP = 4000                          # newest runs kept in the history
DEFAULT_BASE_S, DEFAULT_PER_TILE_S = 8.0, 0.005
BASE_MB, PER_BYTE, PER_TILE_MB = 400.0, 3.6, 0.03
MEMORY_HEADROOM = 0.85               # share of the available memory the workers may plan to use


@dataclass(frozen=True, slots=True)
class Size:
    """What a compile's time and memory grow with."""

    family: str
    tiles: int
    tensor_bytes: int


@dataclass(frozen=True, slots=True)
class Run:
    family: str
    tiles: int
    tensor_bytes: int
    wall_s: float
    rss_mb: float | None = None


@dataclass(frozen=True, slots=True)
class Forecast:
    wall_s: float
    rss_mb: float
    basis: str                       # where the figure came from, in words


def history_path() -> Path:
    return cache_root() / HISTORY_FILE


def load_history(path: Path | None = None) -> list[Run]:
    path = path or history_path()
    out: list[Run] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines[-KEEP:]:
        try:
            d = json.loads(line)
            out.append(Run(str(d["family"]), int(d["tiles"]), int(d["tensor_bytes"]), float(d["wall_s"]),
                           None if d.get("rss_mb") is None else float(d["rss_mb"])))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def record(size: Size, wall_s: float | None, rss_mb: float | None, path: Path | None = None) -> None:
    """Append one finished compile (a failure to write is not an error: it is only a forecast)."""
    if wall_s is None or wall_s <= 0:
        return
    path = path or history_path()
    run = Run(size.family, size.tiles, size.tensor_bytes, round(wall_s, 3), rss_mb)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(run)) + "\n")
        if path.stat().st_size > KEEP * 400:
            lines = path.read_text(encoding="utf-8").splitlines()[-KEEP:]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _power_law(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(a, b) of y = a * x^b through (x, y) points by log-log least squares; None when the x's
    do not spread (b is then held in [0.3, 1.5], the range compiles have shown)."""
    xs = [math.log(max(1.0, x)) for x, _ in points]
    ys = [math.log(max(1e-3, y)) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx < 0.25:
        return None
    b = min(1.5, max(0.3, sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx))
    return math.exp(my - b * mx), b


def forecast(size: Size, history: Iterable[Run] | None = None) -> Forecast:
    """Wall seconds and peak MB for one compile of this size."""
    runs = list(load_history() if history is None else history)
    own = [r for r in runs if r.family == size.family]
    wall, basis = DEFAULT_BASE_S + DEFAULT_PER_TILE_S * size.tiles, "the pypto 0.2.0 default"
    for pool, what in ((own, f"{len(own)} past '{size.family}' compile(s)"), (runs, f"{len(runs)} past compile(s)")):
        if not pool:
            continue
        law = _power_law([(r.tiles, r.wall_s) for r in pool])
        if law is not None:
            wall, basis = law[0] * max(1, size.tiles) ** law[1], what
        else:
            near = min(pool, key=lambda r: abs(math.log(max(1, r.tiles)) - math.log(max(1, size.tiles))))
            wall, basis = near.wall_s * (max(1, size.tiles) / max(1, near.tiles)) ** 0.8, what
        # Never below the fastest past compile: every one pays the worker's start (Python, pypto
        # and torch imports, several seconds) whatever its size. Runs whose time hardly grows with
        # the tiles fit an exponent held at 0.3, which extrapolated to a task of a few tiles
        # predicted about 1 s for compiles of 9 s each.
        wall = max(wall, min(r.wall_s for r in pool))
        break
    rss = BASE_MB + PER_BYTE * size.tensor_bytes / 2**20 + PER_TILE_MB * size.tiles
    same = [r for r in runs if r.rss_mb and r.tensor_bytes == size.tensor_bytes]
    if same:
        near = min(same, key=lambda r: abs(r.tiles - size.tiles))
        rss = max(BASE_MB, (near.rss_mb or 0.0) + PER_TILE_MB * (size.tiles - near.tiles))
    return Forecast(wall, rss, basis)


def available_mb() -> float | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_factor(width: int, cores: int | None = None) -> tuple[float, str]:
    """How much longer each of `width` parallel compiles takes when other work already holds the
    cores: the one-minute load average plus our workers over the cores (at least 1). A forecast from
    an idle machine's history said "about 1 s" for a sweep that took 18.8 s on a busy one."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return 1.0, ""
    cores = cores or os.cpu_count() or 1
    factor = max(1.0, (load + width) / cores)
    if factor < 1.05:
        return 1.0, ""
    return factor, f"the machine is busy (load {load:.1f} on {cores} core(s)): times x{factor:.1f}"


def jobs_for(requested: int, rss_mb: float, free_mb: float | None = None, cores: int | None = None) -> tuple[int, str]:
    """How many workers to run at once: at most `requested`, the cores, and what fits in memory
    (each worker expected to peak at `rss_mb`); at least one. The second value says why fewer
    than requested, or is empty."""
    cores = cores or os.cpu_count() or 1
    free = available_mb() if free_mb is None else free_mb
    fit = requested if free is None else max(1, int(free * MEMORY_HEADROOM // max(1.0, rss_mb)))
    jobs = max(1, min(requested, cores, fit))
    if jobs >= requested:
        return jobs, ""
    if fit < min(requested, cores):
        return jobs, (f"{jobs} at a time: each worker may hold ~{rss_mb / 1024:.1f} GB and "
                      f"{(free or 0) / 1024:.1f} GB is available")
    return jobs, f"{jobs} at a time: this machine has {cores} core(s)"
