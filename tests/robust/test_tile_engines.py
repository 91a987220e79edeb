"""The candidate ranking has two engines (plain Python for small spaces, numpy for large ones):
they must agree row for row, so which one runs never changes a recommendation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_tui.kb import get_kb
from pypto_tui.tile_space import PYTHON_MAX, _rank_numpy, _rank_python, per_axis
from pypto_tui.tiles import align_unit, rank_candidates

KB = get_kb()
SIZES = st.sampled_from([1, 2, 3, 7, 16, 63, 64, 100, 255, 256, 1000, 1024, 4095, 4096, 16384, 65536, 999983])


def _rows(space):  # type: ignore[no-untyped-def]
    return [(space.tile(r), space.qualified(r), space.sweet(r), space.spend(r)) for r in space.order]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(shape=st.lists(SIZES, min_size=1, max_size=4).map(tuple), dtype=st.sampled_from(["fp32", "fp16", "int8"]),
       rd=st.none() | st.integers(0, 3), reducing=st.none() | st.booleans(), data=st.data())
def test_python_and_numpy_engines_agree(shape, dtype, rd, reducing, data) -> None:  # type: ignore[no-untyped-def]
    rd = None if rd is None or rd >= len(shape) else rd
    is_reducing = (rd is not None) if reducing is None else reducing
    unit = align_unit(KB, dtype)
    values = per_axis(KB, shape, unit)
    preset = tuple(data.draw(st.sampled_from(v)) for v in values) if data.draw(st.booleans()) else None
    b = KB.dtype_bytes(dtype)
    py = _rank_python(KB, shape, values, b, rd, is_reducing, unit, preset)
    np_ = _rank_numpy(KB, shape, values, b, rd, is_reducing, unit, preset)
    assert (py.enumerated, py.empty, py.fallback, py.reachable) == (np_.enumerated, np_.empty, np_.fallback,
                                                                     np_.reachable)
    assert _rows(py) == _rows(np_)
    assert (py.preset_row is None) == (np_.preset_row is None)
    if py.preset_row is not None:
        assert py.tile(py.preset_row) == np_.tile(np_.preset_row) == preset


def test_the_usual_shapes_take_the_python_engine() -> None:
    import math

    for shape in [(16, 256, 256), (16, 16384), (67108864,), (128, 4096), (16, 64, 256, 256)]:
        values = per_axis(KB, shape, align_unit(KB, "fp32"))
        small = math.prod(len(v) for v in values) <= PYTHON_MAX
        assert small or len(shape) == 4, shape
    plan = rank_candidates(KB, (16, 256, 256), "fp32", 1)
    assert plan.recommended is not None and plan.recommended.tile == (1, 16, 256)  # the documents' preset
