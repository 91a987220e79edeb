"""sweep.py: the guided middle-out search, with fake measure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto_tui.sim.sweep import guided_sweep, guided_sweep_batched

LOOPS = [8, 16, 32, 64, 128]


def table(values: dict[int, float | None]):
    calls: list[int] = []

    def measure(c: int) -> float | None:
        calls.append(c)
        return values[c]

    return measure, calls


def test_u_shape_stops_after_one_ring() -> None:
    # Research note 5c, case B (tile = whole iteration): 8 fails, minimum at 32.
    measure, calls = table({8: None, 16: 3.58, 32: 2.77, 64: 6.45, 128: 10.34})
    r = guided_sweep(LOOPS, measure)
    assert r.best == 32 and r.best_value == 2.77
    assert calls == [32, 16, 64]
    assert (r.measurements, r.candidates, r.saved) == (3, 5, 2)


def test_published_groupnorm_curve() -> None:
    # The rule document's NPU run: 16 is the sweet spot.
    measure, calls = table({8: 649.58, 16: 630.30, 32: 649.42, 64: 804.96, 128: 936.66})
    r = guided_sweep(LOOPS, measure)
    assert r.best == 16
    assert calls == [32, 16, 64, 8]  # left kept improving once, then got worse; right closed at 64


def test_monotone_follows_the_improving_side_to_the_end() -> None:
    # Research note 5c, case A: flat, then better towards 128.
    measure, calls = table({8: 20.12, 16: 20.12, 32: 20.12, 64: 15.06, 128: 12.53})
    r = guided_sweep(LOOPS, measure)
    assert r.best == 128 and calls == [32, 16, 64, 128]


def test_failed_middle_keeps_both_sides_open() -> None:
    measure, _ = table({8: 9.0, 16: 5.0, 32: None, 64: 4.0, 128: 7.0})
    r = guided_sweep(LOOPS, measure)
    assert r.best == 64 and r.best_value == 4.0


def test_all_failed() -> None:
    r = guided_sweep(LOOPS, lambda c: None)
    assert r.best is None and r.best_value is None and r.measurements >= 3


def test_empty_and_single() -> None:
    assert guided_sweep([], lambda c: 1.0).best is None
    r = guided_sweep(["only"], lambda c: 1.0)
    assert r.best == "only" and r.measurements == 1


def test_even_count_starts_at_upper_middle() -> None:
    # 1..128: the documents start at 16/32 on the log scale; n // 2 picks 16.
    calls: list[int] = []
    guided_sweep([1, 2, 4, 8, 16, 32, 64, 128], lambda c: calls.append(c) or float(abs(c - 16)))
    assert calls[0] == 16


def test_batched_measures_both_sides_in_one_call() -> None:
    batches: list[list[int]] = []

    def measure_batch(batch):
        batches.append(list(batch))
        return [abs(c - 32) + 1.0 for c in batch]

    r = guided_sweep_batched(LOOPS, measure_batch)
    assert r.best == 32 and batches == [[32], [16, 64]]


def test_batched_rejects_wrong_length() -> None:
    with pytest.raises(ValueError):
        guided_sweep_batched(LOOPS, lambda batch: [1.0])


def test_budget() -> None:
    r = guided_sweep(LOOPS, lambda c: -float(c), max_measurements=2)
    assert r.measurements == 2


def test_ranked_tiles_work_too() -> None:
    tiles = [(1, 16, 256), (1, 32, 256), (1, 64, 256)]
    e2e = {(1, 16, 256): 19.42, (1, 32, 256): 14.89, (1, 64, 256): 18.68}  # research note 5b
    r = guided_sweep(tiles, e2e.__getitem__)
    assert r.best == (1, 32, 256) and r.measurements == 3


@st.composite
def unimodal(draw):
    """Strictly V-shaped values over n candidates with the minimum anywhere."""
    n = draw(st.integers(1, 12))
    k = draw(st.integers(0, n - 1))
    steps = draw(st.lists(st.floats(0.1, 10), min_size=n, max_size=n))
    vals = [0.0] * n
    for i in range(k - 1, -1, -1):
        vals[i] = vals[i + 1] + steps[i]
    for i in range(k + 1, n):
        vals[i] = vals[i - 1] + steps[i]
    return vals, k


@given(unimodal())
def test_unimodal_finds_the_minimum(case) -> None:
    vals, k = case
    calls: list[int] = []
    r = guided_sweep(list(range(len(vals))), lambda i: calls.append(i) or vals[i])
    assert r.best == k
    assert len(calls) == len(set(calls))  # never measures twice
    mid = len(vals) // 2
    assert r.measurements <= min(len(vals), abs(k - mid) + 3)


@given(st.lists(st.one_of(st.none(), st.floats(0, 100)), min_size=1, max_size=15))
def test_any_values_best_is_best_measured(values) -> None:
    r = guided_sweep(list(range(len(values))), lambda i: values[i])
    assert r.measurements <= len(values)
    measured = [v for _, v in r.measured if v is not None]
    if measured:
        assert r.best_value == min(measured)
        assert values[r.best] == r.best_value
    else:
        assert r.best is None
