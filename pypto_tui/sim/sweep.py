"""The documents' guided sweep: start in the middle of a log-scale ladder, widen one step each
side, stop when both sides get worse.

Rule O2 (pypto-optimization, "偷懒起步法"): loop counts and tiles are tried on a log scale, the
sweet spot is usually in the middle (a U shape: too coarse and too fine are both slow), so
measure the middle first, then one step either side, and only go further along a side that is
still improving. The candidates arrive already in the documents' order (a loop-count ladder
such as [8, 16, 32, 64, 128], or a ranked list of qualified tiles); this module only decides
which ones to measure.

Algorithm, over candidates c[0..n-1]:
1. measure c[n // 2] (for an even n, the upper middle: 16 of 1..128, as the documents start);
2. each round, measure the next unmeasured candidate on each side that is still open;
3. a side closes when its newest measurement is not better than the one before it on that side
   (the inward neighbour), when it runs off the end, or when the candidate failed (None);
4. stop when both sides are closed. The best measured value wins (ties: the first measured).

Generic over the measure function; lower is better; `None` means "did not compile / failed".
A batched form lets the caller measure both sides of a round in parallel (two workers).

When the pack has a fitted cost estimate for the family, `estimate_guided_sweep` replaces the walk:
measure the candidates in the estimate's order, learn from each measurement how far off the
estimate is for this task, and stop as soon as no candidate left could beat the best measured one
(its estimate, scaled to this task, less the fit's 95% error bound). See estimate.lower_bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

Measure = Callable[[T], float | None]
MeasureBatch = Callable[[Sequence[T]], Sequence[float | None]]


@dataclass(frozen=True, slots=True)
class SweepResult(Generic[T]):
    """The winner, every measurement in the order it was made, and what the sweep saved."""

    best: T | None
    best_value: float | None
    measured: tuple[tuple[T, float | None], ...]
    candidates: int
    stopped: str = ""

    @property
    def measurements(self) -> int:
        return len(self.measured)

    @property
    def saved(self) -> int:
        return self.candidates - self.measurements


def _value(v: float | None) -> float:
    return math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


class _Runs(Generic[T]):
    """The measurements of one search, in the order they were made."""

    def __init__(self, candidates: Sequence[T], measure_batch: MeasureBatch[T]) -> None:
        self.cands, self.measure_batch = list(candidates), measure_batch
        self.values: dict[int, float | None] = {}
        self.order: list[int] = []

    def run(self, indices: list[int]) -> None:
        got = list(self.measure_batch([self.cands[i] for i in indices]))
        if len(got) != len(indices):
            raise ValueError(f"measure_batch returned {len(got)} values for {len(indices)} candidates")
        for i, v in zip(indices, got, strict=True):
            self.values[i] = v
            self.order.append(i)

    def result(self, stopped: str = "") -> SweepResult[T]:
        """The best measured value wins (ties: the first measured); failures never win."""
        best_i: int | None = None
        for i in self.order:
            if _value(self.values[i]) == math.inf:
                continue
            if best_i is None or _value(self.values[i]) < _value(self.values[best_i]):
                best_i = i
        measured = tuple((self.cands[i], self.values[i]) for i in self.order)
        n = len(self.cands)
        if best_i is None:
            return SweepResult(None, None, measured, n, stopped)
        return SweepResult(self.cands[best_i], self.values[best_i], measured, n, stopped)


def guided_sweep_batched(
    candidates: Sequence[T], measure_batch: MeasureBatch[T], *, max_measurements: int | None = None
) -> SweepResult[T]:
    """The sweep, measuring each round's one or two candidates with a single call."""
    cands = list(candidates)
    n = len(cands)
    if n == 0:
        return SweepResult(None, None, (), 0)
    budget = n if max_measurements is None else max(1, min(n, int(max_measurements)))
    runs = _Runs(cands, measure_batch)
    values, order, run = runs.values, runs.order, runs.run

    mid = n // 2
    run([mid])
    lo = hi = mid
    left_open, right_open = mid > 0, mid < n - 1
    while (left_open or right_open) and len(order) < budget:
        step: list[int] = []
        if left_open:
            step.append(lo - 1)
        if right_open and len(order) + len(step) < budget:
            step.append(hi + 1)
        if not step:
            break
        run(step)
        if left_open:
            lo -= 1
            left_open = lo > 0 and _value(values[lo]) < _value(values[lo + 1])
        if right_open and hi + 1 in values:
            hi += 1
            right_open = hi < n - 1 and _value(values[hi]) < _value(values[hi - 1])
        elif right_open:
            break  # the budget ran out before the right side's step
    return runs.result()


def guided_sweep(
    candidates: Sequence[T], measure: Measure[T], *, max_measurements: int | None = None
) -> SweepResult[T]:
    """The sweep with a one-candidate-at-a-time measure function."""
    return guided_sweep_batched(
        candidates, lambda batch: [measure(c) for c in batch], max_measurements=max_measurements
    )


def estimate_guided_sweep(
    candidates: Sequence[T], estimates: Sequence[float | None], measure_batch: MeasureBatch[T], *, error: float,
    parallel: int = 1, max_measurements: int | None = None, win_margin: float = 0.03,
) -> SweepResult[T]:
    """Measure in the estimate's order until nothing left can win.

    The first round measures the estimate's pick alone; each later round up to `parallel` of the
    candidates that could still win, cheapest estimate first. After each round the estimate is
    scaled to this task (the geometric mean of measured / estimated over the runs that compiled),
    and a candidate could still win while its 95% lower bound is below the best measured time by
    more than `win_margin`. Candidates the estimate does not price (None) are not contenders.
    """
    from pypto_tui.estimate import lower_bound

    if len(estimates) != len(candidates):
        raise ValueError(f"{len(estimates)} estimates for {len(candidates)} candidates")
    priced = sorted((float(e), i) for i, e in enumerate(estimates) if e is not None and e > 0)
    n = len(candidates)
    budget = n if max_measurements is None else max(1, min(n, int(max_measurements)))
    runs = _Runs(candidates, measure_batch)
    values, order = runs.values, runs.order
    price = {i: e for e, i in priced}

    def contenders() -> list[int]:
        ok = [(_value(values[i]), price[i]) for i in order if i in price and math.isfinite(_value(values[i]))]
        left = [i for _, i in priced if i not in values]
        if not ok:
            return left
        best = min(v for v, _ in ok)
        scale = math.exp(sum(math.log(v / e) for v, e in ok) / len(ok))
        return [i for i in left if lower_bound(price[i], scale, error, len(ok)) < best * (1.0 - win_margin)]

    while len(order) < budget and (left := contenders()):
        runs.run(left[: (1 if not order else max(1, parallel))][: budget - len(order)])
    unmeasured = sum(1 for _, i in priced if i not in values)
    if not priced:
        stopped = "the estimate prices no candidate"
    elif contenders():
        stopped = f"the budget of {budget} simulation(s) ran out"
    elif unmeasured:
        stopped = (f"the estimate rules out the {unmeasured} candidate(s) left "
                   f"(none could beat the best by more than {100 * win_margin:.0f}%)")
    else:
        stopped = "every priced candidate measured"
    return runs.result(stopped)
