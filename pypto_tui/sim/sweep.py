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

    @property
    def measurements(self) -> int:
        return len(self.measured)

    @property
    def saved(self) -> int:
        return self.candidates - self.measurements


def _value(v: float | None) -> float:
    return math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def guided_sweep_batched(
    candidates: Sequence[T], measure_batch: MeasureBatch[T], *, max_measurements: int | None = None
) -> SweepResult[T]:
    """The sweep, measuring each round's one or two candidates with a single call."""
    cands = list(candidates)
    n = len(cands)
    if n == 0:
        return SweepResult(None, None, (), 0)
    budget = n if max_measurements is None else max(1, min(n, int(max_measurements)))
    values: dict[int, float | None] = {}
    order: list[int] = []

    def run(indices: list[int]) -> None:
        got = list(measure_batch([cands[i] for i in indices]))
        if len(got) != len(indices):
            raise ValueError(f"measure_batch returned {len(got)} values for {len(indices)} candidates")
        for i, v in zip(indices, got, strict=True):
            values[i] = v
            order.append(i)

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

    best_i: int | None = None
    for i in order:
        if values[i] is None or math.isnan(_value(values[i])) or _value(values[i]) == math.inf:
            continue
        if best_i is None or _value(values[i]) < _value(values[best_i]):
            best_i = i
    measured = tuple((cands[i], values[i]) for i in order)
    if best_i is None:
        return SweepResult(None, None, measured, n)
    return SweepResult(cands[best_i], values[best_i], measured, n)


def guided_sweep(
    candidates: Sequence[T], measure: Measure[T], *, max_measurements: int | None = None
) -> SweepResult[T]:
    """The sweep with a one-candidate-at-a-time measure function."""
    return guided_sweep_batched(
        candidates, lambda batch: [measure(c) for c in batch], max_measurements=max_measurements
    )
