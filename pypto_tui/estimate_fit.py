"""Fit the cost estimate's coefficients to measured runs (what `pypto-tui kb calibrate` writes).

The model (estimate.py) is log(us) = intercept + size * log(elements) + sum_i c_i * feature_i.
Only the features vary within a task, and only their order matters for a recommendation, so the
coefficients are fitted *within* tasks: every task's features and log-times are centred on their
own means before a ridge least-squares fit (the ridge, on standardised features, keeps a family
measured on two or three tasks from chasing one task's quirks). The fit uses few features
(FIT_FEATURES: the scheduler/cores balance, the reduction's segments, the big-tile split, the
loop's iterations over independent chunks and along a reduction); the balance feature's two
non-linear numbers (`elements_per_task`, `tile_overhead`) and the ridge's strength are chosen
together by leave-one-task-out cross-validation: the ones whose fits, made without a task, pick
the fastest design of that task (then the smallest error). A pick is scored among the runs a
recommendation may choose (`Sample.qualified`): a sweep also measures designs the rules reject
(the documents' challengers), and one of those can be the fastest run of a task; counting it would
score a fit well for preferring a design it can never recommend, and hide how it orders the
qualified ones (max_over_dim: an unqualified (1,256,64) at 12.19 us hid a 1.254x pick among the
qualified tiles, benchmarks/README.md). The task means then fit `intercept` and `size`, which
only make the figure readable as microseconds.

`error` is the fit's spread: the standard deviation of log(measured / estimated) within a task,
taken from leave-one-task-out predictions when the family has more than one task (an estimate of
how it does on a task it has not seen), else in-sample. `worst` is the largest such miss;
`loop_error` the same spread among runs that differ only in the loop count (what a loop sweep
compares); `pick_error` the same spread among the qualified runs within NEAR_BEST of their task's
fastest, centred per task: what the guided tile sweep trusts to rule a candidate out, since only a
candidate near the best can win, and the slow tail (tiles 3-12x off, where the estimate is
roughest) says little about those (loss: 0.09 near the best against 0.32 over all runs). All are
written to the pack with the number of runs and the tasks.

numpy only; nothing here runs the compiler (sim/calibrate.py collects the runs).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pypto_tui.estimate import Point, features
from pypto_tui.kb import CostFit

FIT_FEATURES = ("balance", "segments", "big_split", "iterations", "serial")
RIDGES = (0.1, 0.3, 1.0, 3.0)
DEFAULT_RIDGE = 1.0
BALANCES = (0.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)  # elements per task (0: tasks alone)
OVERHEADS = (0.0, 2048.0, 8192.0, 32768.0)                   # a tile op's fixed cost, in elements
DEFAULT_BALANCE, DEFAULT_OVERHEAD = 3000.0, 8192.0
NEAR_BEST = math.log(1.5)   # runs within 1.5x of their task's fastest qualified run set `pick_error`


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured design: the task it belongs to, its family and op, the point, the time."""

    task: str
    family: str
    op: str
    point: Point
    e2e_us: float
    qualified: bool = True   # the rules qualify it: a recommendation may pick it


@dataclass(frozen=True)
class _Design:
    tasks: tuple[str, ...]
    X: np.ndarray           # features, one row per sample
    y: np.ndarray           # log(us)
    size: np.ndarray        # log(elements of the tensor)
    task_of: np.ndarray     # index into tasks
    qualified: np.ndarray   # bool: a recommendation may pick this sample


def _design(samples: Sequence[Sample], names: Sequence[str], cores: int, balance: tuple[float, float]) -> _Design:
    tasks = tuple(dict.fromkeys(s.task for s in samples))
    index = {t: i for i, t in enumerate(tasks)}
    X = np.array([[features(s.point, cores, *balance)[n] for n in names] for s in samples], dtype=float)
    y = np.log([s.e2e_us for s in samples])
    size = np.log([max(1, math.prod(s.point.shape)) for s in samples])
    return _Design(tasks, X, y, size, np.array([index[s.task] for s in samples]),
                   np.array([s.qualified for s in samples], dtype=bool))


def _centre(d: _Design, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = d.X[rows].copy(), d.y[rows].copy()
    for t in np.unique(d.task_of[rows]):
        m = d.task_of[rows] == t
        X[m] -= X[m].mean(axis=0)
        y[m] -= y[m].mean()
    return X, y


def _solve(X: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    """Ridge least squares on standardised columns, returned in the columns' own units; a column
    that does not vary within any task gets 0 (it cannot order anything)."""
    scale = X.std(axis=0)
    live = scale > 1e-6
    coef = np.zeros(X.shape[1])
    if not live.any():
        return coef
    Z = X[:, live] / scale[live]
    solved = np.linalg.solve(Z.T @ Z + ridge * len(y) * 1e-2 * np.eye(Z.shape[1]), Z.T @ y)
    coef[live] = solved / scale[live]
    return coef


def _within_residuals(d: _Design, rows: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """log(measured / estimated) with each task's own offset removed (what ordering sees)."""
    X, y = _centre(d, rows)
    return np.asarray(y - X @ coef)


def pick_regret(y: np.ndarray, guess: np.ndarray, qualified: np.ndarray) -> float:
    """log(time of the design the estimate picks / the fastest), both among the qualified runs
    (all runs when none is marked qualified)."""
    rows = qualified if qualified.any() else np.ones(len(y), dtype=bool)
    return float(y[rows][int(np.argmin(guess[rows]))] - y[rows].min())


def _loto(d: _Design, ridge: float) -> tuple[np.ndarray, float]:
    """Leave-one-task-out: the within-task residuals of each task under a fit to the others, and
    the mean log ratio of the pick's time to the task's best (what a recommendation costs)."""
    res = np.zeros(len(d.y))
    picks = []
    everything = np.arange(len(d.y))
    for t in range(len(d.tasks)):
        test = everything[d.task_of == t]
        train = everything[d.task_of != t]
        coef = _solve(*_centre(d, train), ridge)
        res[test] = _within_residuals(d, test, coef)
        picks.append(pick_regret(d.y[test], d.X[test] @ coef, d.qualified[test]))
    return res, float(np.mean(picks))


def fit(samples: Sequence[Sample], name: str, pypto: str, cores: int,
        names: Sequence[str] = FIT_FEATURES, ridge: float | None = None, balance: float | None = None) -> CostFit:
    """The coefficients for one family (or op) from its samples (tasks with two runs or more)."""
    per_task: dict[str, int] = defaultdict(int)
    for s in samples:
        per_task[s.task] += 1
    kept = [s for s in samples if per_task[s.task] >= 2 and s.e2e_us > 0]
    if not kept:
        raise ValueError(f"no task of '{name}' has two measured runs: nothing to fit")
    tasks = len({s.task for s in kept})
    ridges = RIDGES if ridge is None and tasks >= 2 else (ridge or DEFAULT_RIDGE,)
    balances = ([(k, e) for k in BALANCES for e in (OVERHEADS if k else (0.0,))]
                if balance is None and tasks >= 2
                else [(DEFAULT_BALANCE if balance is None else balance, DEFAULT_OVERHEAD)])
    best: tuple[tuple[float, float], tuple[float, float], float, _Design, np.ndarray | None] | None = None
    for kb_ in balances:
        d = _design(kept, names, cores, kb_)
        for r in ridges:
            loto_res, pick = _loto(d, r) if tasks >= 2 else (None, 0.0)
            spread = float(np.mean(loto_res ** 2)) if loto_res is not None else 0.0
            score = (round(pick, 3), spread)
            if best is None or score < best[0]:
                best = (score, kb_, r, d, loto_res)
    assert best is not None
    _, (k, overhead), r, d, loto_res = best
    everything = np.arange(len(d.y))
    coef = _solve(*_centre(d, everything), r)
    res = loto_res if loto_res is not None else _within_residuals(d, everything, coef)
    loop_error = _loop_spread(kept, res)
    pick_error = _near_best_spread(d, res)
    # intercept and size: task means of log(us) less the features' part, against log(elements)
    offsets, sizes = [], []
    for t in range(len(d.tasks)):
        m = d.task_of == t
        offsets.append(float(d.y[m].mean() - (d.X[m] @ coef).mean()))
        sizes.append(float(d.size[m].mean()))
    if max(sizes) - min(sizes) > 0.5:
        slope, intercept = np.polyfit(sizes, offsets, 1)
    else:
        slope, intercept = 0.0, float(np.mean(offsets))
    return CostFit(
        name=name, pypto=pypto,
        coefficients={n: round(float(c), 5) for n, c in zip(names, coef, strict=True)},
        intercept=round(float(intercept), 5), size=round(float(slope), 5),
        error=round(float(np.std(res)), 4), worst=round(float(np.max(np.abs(res))), 4),
        samples=len(kept), tasks=d.tasks, elements_per_task=k, tile_overhead=overhead,
        loop_error=round(loop_error, 4), pick_error=round(pick_error, 4),
        elements=(round(math.exp(float(d.size.min()))), round(math.exp(float(d.size.max())))),
    )


def _near_best_spread(d: _Design, res: np.ndarray) -> float:
    """The spread of the residuals among the qualified runs within NEAR_BEST of their task's
    fastest qualified run, each task's centred on their own mean (the guided sweep scales the
    estimate to a task by the runs it measured, which are such runs); 0 with fewer than three
    (the caller falls back to `error`)."""
    centred: list[float] = []
    for t in range(len(d.tasks)):
        m = (d.task_of == t) & d.qualified
        if not m.any():
            continue
        near = res[m & (d.y - d.y[m].min() < NEAR_BEST)]
        if len(near) >= 2:
            centred += list(near - near.mean())
    return float(np.std(centred)) if len(centred) >= 3 else 0.0


def _loop_spread(samples: Sequence[Sample], res: np.ndarray) -> float:
    """The spread of the residuals among runs that differ only in their loop count (same task,
    same tile): what a loop sweep's stopping rule needs, often tighter than the tiles'."""
    groups: dict[tuple[str, tuple[int, ...]], list[float]] = defaultdict(list)
    for s, r in zip(samples, res, strict=True):
        groups[(s.task, s.point.tile)].append(float(r))
    centred = [r - float(np.mean(g)) for g in groups.values() if len(g) >= 2 for r in g]
    return float(np.std(centred)) if len(centred) >= 3 else 0.0


def fit_all(samples: Iterable[Sample], pypto: str, cores: int) -> dict[str, CostFit]:
    """One fit per family that has runs to fit."""
    by: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by[s.family].append(s)
    out: dict[str, CostFit] = {}
    for family, group in sorted(by.items()):
        try:
            out[family] = fit(group, family, pypto, cores)
        except ValueError:
            continue
    return out


# ------------------------------------------------------------------------------------ the pack file
def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def estimate_toml(fits: Mapping[str, CostFit], ranking: str, note: str) -> str:
    """estimate.toml for a pack: the ranking switch, then one [fit.<name>] table per fit."""
    out = [
        "# The cost estimate (rule SIM.cost-estimate): per operator family, the coefficients of",
        "#   log(us) = intercept + size * log(elements) + sum(coefficient * feature)",
        "# fitted to SIM measurements by `pypto-tui kb calibrate` (features: pypto_tui/estimate.py).",
        "# error: the spread of log(measured / estimated) within a task (leave-one-task-out when the",
        "# family has more than one task); worst: the largest such miss; pypto: the version measured.",
        "# loop_error / pick_error: the same spread among runs differing only in the loop count / among",
        "# runs within 1.5x of their task's fastest (what the guided loop / tile sweep trusts; 0: error).",
        "# ranking = \"rules\" keeps the documents' order for the recommendation and shows the estimate's",
        "# pick beside it; \"estimate\" lets the estimate order the qualified candidates; \"auto\" lets it",
        "# order them for a family and sweep whose measured picks ([fit.X.picks]) beat the documents'.",
        "[estimate]",
        f"ranking = {_toml_str(ranking)}",
        f"note = {_toml_str(note)}",
    ]
    for name in sorted(fits):
        f = fits[name]
        out += ["", f"[fit.{name}]", f"pypto = {_toml_str(f.pypto)}", f"intercept = {f.intercept}",
                f"size = {f.size}", f"elements_per_task = {f.elements_per_task}",
                f"tile_overhead = {f.tile_overhead}", f"error = {f.error}", f"loop_error = {f.loop_error}",
                f"pick_error = {f.pick_error}",
                f"worst = {f.worst}", f"samples = {f.samples}",
                "tasks = [" + ", ".join(_toml_str(t) for t in f.tasks) + "]",
                *([f"elements = [{f.elements[0]}, {f.elements[1]}]"] if f.elements else []),
                f"[fit.{name}.coefficients]"]
        out += [f"{k} = {v}" for k, v in f.coefficients.items()]
        for sweep, rec in sorted(f.picks.items()):  # measured picks travel with the fit they score
            out += [f"[fit.{name}.picks.{sweep}]", f"estimate = {rec.estimate}", f"rules = {rec.rules}",
                    f"sweeps = {rec.sweeps}", f"source = {_toml_str(rec.source)}"]
    return "\n".join(out) + "\n"
