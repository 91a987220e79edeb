"""compare.py: every element within atol + rtol x |ref|, KernelBench's per-dtype numbers (numpy only)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto_tui.kb import builtin_criteria
from pypto_tui.sim.compare import KERNELBENCH, compare, dtype_name, tolerance_for

LOOSE = {"fp32": (1e-2, 1e-2)}  # KernelBench v0.1


def test_identical_passes_with_zero_error() -> None:
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    c = compare(x, x.copy())
    assert c.passed and c.max_abs_err == 0 and c.max_rel_err == 0 and c.fail_share == 0
    assert (c.dtype, c.atol, c.rtol) == ("fp32", 1e-4, 1e-4)


def test_shape_mismatch_fails() -> None:
    c = compare(np.zeros((4, 8)), np.zeros((8, 4)))
    assert not c.passed and "shape" in c.reason


def test_one_wrong_element_in_a_million_fails() -> None:
    """The count-based rule let 2% of the elements be wrong by any amount: a matmul's last column
    never written passed. Now one element is enough, and the reason says where."""
    ref = np.ones((1000, 1000), dtype=np.float32)
    out = ref.copy()
    out[999, 999] = 1.4e38
    c = compare(out, ref)
    assert not c.passed and c.failing == 1 and c.worst_index == (999, 999)
    assert "1/1000000 elements outside" in c.reason and "(999, 999)" in c.reason


def test_a_never_written_column_fails() -> None:
    ref = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    out = ref.copy()
    out[:, -1] = 0.0
    c = compare(out, ref)
    assert not c.passed and c.failing == 64 and c.worst_index is not None and c.worst_index[1] == 255


def test_the_bound_itself_passes_and_the_next_float_fails() -> None:
    """allclose's bound is inclusive: |a - e| == atol + rtol * |e| passes (exact binary numbers)."""
    tol = {"fp32": (0.25, 0.5)}
    ref = np.array([0.0, 2.0], dtype=np.float32)
    at_bound = np.array([0.25, 3.25], dtype=np.float32)  # 0.25 = 0.25 + 0; 1.25 = 0.25 + 0.5 * 2
    assert compare(at_bound, ref, tolerances=tol).passed
    over = np.nextafter(at_bound, np.float32(np.inf))
    c = compare(over, ref, tolerances=tol)
    assert not c.passed and c.failing == 2


def test_fp32_tolerance_is_kernelbench_1e_4() -> None:
    ref = np.full(100, 10.0, dtype=np.float32)
    assert compare(ref * np.float32(1 + 5e-5), ref).passed  # 5e-4 <= 1e-4 + 1e-3
    assert not compare(ref * np.float32(1 + 2e-4), ref).passed  # 2e-3 > 1.1e-3
    assert compare(ref * np.float32(1 + 2e-4), ref, tolerances=LOOSE).passed


def test_fp16_and_bf16_take_1e_2() -> None:
    ref = np.full(1000, 1.0, dtype=np.float16)
    out = (ref * np.float16(1.01)).astype(np.float16)  # within 1e-2 + 1e-2
    assert compare(out, ref).passed
    assert not compare((ref * np.float16(1.05)).astype(np.float16), ref).passed
    widened = np.full(10, 1.0, dtype=np.float32)
    c = compare(widened * 1.015, widened, dtype="bf16", actual_dtype="bf16")
    assert c.passed and (c.atol, c.rtol) == (1e-2, 1e-2)
    assert not compare(widened * 1.015, widened).passed  # the same numbers as fp32


def test_output_dtype_must_be_the_baselines() -> None:
    ref = np.ones(10, dtype=np.float32)
    c = compare(ref.astype(np.float16), ref)
    assert not c.passed and "dtype mismatch: kernel fp16 vs baseline fp32" in c.reason


def test_nan_where_the_baseline_has_none_fails() -> None:
    ref = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    c = compare(np.array([1.0, np.nan, 3.0], dtype=np.float32), ref)
    assert not c.passed and "NaN" in c.reason and c.worst_index == (1,)
    same = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    assert compare(same, same.copy()).passed


def test_inf_positions_and_signs_must_match() -> None:
    ref = np.array([np.inf, -np.inf, 1.0])
    assert compare(ref.copy(), ref).passed
    c = compare(np.array([-np.inf, np.inf, 1.0]), ref)
    assert not c.passed and "Inf" in c.reason
    c = compare(np.array([np.inf, 5.0, 1.0]), ref)
    assert not c.passed and "Inf" in c.reason


def test_all_non_finite_matching_passes() -> None:
    ref = np.array([np.nan, np.inf])
    assert compare(ref.copy(), ref).passed


def test_bool_outputs_must_match_exactly() -> None:
    ref = np.array([True, False, True])
    assert compare(ref.copy(), ref).passed
    assert not compare(np.array([True, True, True]), ref).passed


def test_integer_outputs_are_compared_exactly() -> None:
    ref = np.arange(1000, dtype=np.int64) % 37
    c = compare(ref.copy(), ref)
    assert c.passed and c.max_abs_err == 0 and "exactly" in c.reason
    out = ref.copy()
    out[5] += 1
    c = compare(out, ref)
    assert not c.passed and "1/1000 int64 elements differ" in c.reason and c.max_abs_err == 1


def test_integer_outputs_must_have_the_baselines_dtype() -> None:
    ref = np.arange(10, dtype=np.int64)
    c = compare(ref.astype(np.int32), ref)
    assert not c.passed and "dtype mismatch: kernel int32 vs baseline int64" in c.reason


def test_int8_is_exact_too() -> None:
    ref = np.full(1000, 100, dtype=np.int8)
    out = ref.copy()
    out[:1] = 99
    assert not compare(out, ref).passed


def test_dtype_names_and_tolerances() -> None:
    assert dtype_name(np.float32) == "fp32"
    assert dtype_name(np.dtype("float16")) == "fp16"
    assert dtype_name("torch.bfloat16") == "bf16"
    assert tolerance_for("fp16") == (1e-2, 1e-2)
    assert tolerance_for("fp64") == KERNELBENCH["fp32"]  # an unlisted float dtype takes fp32's
    assert tolerance_for("fp16", LOOSE) == LOOSE["fp32"]


def test_the_default_pack_carries_kernelbench_numbers_with_their_source(kb) -> None:
    v = kb.verify
    kernelbench = v.get(None)
    assert kernelbench.name == "kernelbench" and v.trials >= 2
    assert dict(kernelbench.tolerances) == KERNELBENCH
    assert "eval.py" in kernelbench.source
    assert v.get("kernelbench-v0.1").tolerances["fp32"] == (1e-2, 1e-2)
    assert dict(builtin_criteria().get(None).tolerances) == KERNELBENCH


@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=1, max_size=200),
       st.integers(0, 200))
def test_verdict_is_allclose_on_every_element(values: list[float], n_bad: int) -> None:
    ref = np.asarray(values, dtype=np.float32)
    out = ref.copy()
    n_bad = min(n_bad, ref.size)
    out[:n_bad] = ref[:n_bad] + np.float32(1.0) + np.abs(ref[:n_bad])
    c = compare(out, ref)
    assert c.passed == (n_bad == 0) == bool(np.allclose(out, ref, atol=1e-4, rtol=1e-4))
    assert c.fail_share == pytest.approx(n_bad / ref.size)
