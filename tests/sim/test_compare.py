"""compare.py: the count-based, per-dtype tolerance (numpy only, no torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto_tui.sim.compare import LIMITS, compare, dtype_name, limit_for


def test_identical_passes_with_zero_error() -> None:
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    c = compare(x, x.copy())
    assert c.passed and c.max_abs_err == 0 and c.max_rel_err == 0 and c.fail_share == 0
    assert c.dtype == "fp32" and c.limit == 0.02


def test_shape_mismatch_fails() -> None:
    c = compare(np.zeros((4, 8)), np.zeros((8, 4)))
    assert not c.passed and "shape" in c.reason


def test_count_based_threshold_fp32() -> None:
    ref = np.ones(1000, dtype=np.float32)
    out = ref.copy()
    out[:20] = 2.0  # 20 elements at rel err 1.0; allowed = int(1000 * 0.02) = 20
    c = compare(out, ref)
    assert c.passed and c.fail_share == pytest.approx(0.02)
    out[20] = 2.0  # 21 > 20
    c = compare(out, ref)
    assert not c.passed and "21/1000" in c.reason and c.max_rel_err == pytest.approx(1.0)


def test_small_relative_error_is_not_counted() -> None:
    ref = np.full(100, 10.0, dtype=np.float32)
    out = ref * 1.019  # under fp32's 0.02
    assert compare(out, ref).passed
    assert not compare(ref * 1.03, ref).passed


def test_fp16_limit_is_tighter() -> None:
    ref = np.full(1000, 1.0, dtype=np.float16)
    out = (ref * np.float16(1.01)).astype(np.float16)  # 1% error: fine for fp32, not fp16
    assert not compare(out, ref).passed
    assert compare(out.astype(np.float32), ref.astype(np.float32)).passed


def test_dtype_override_for_widened_bf16() -> None:
    ref = np.full(1000, 1.0, dtype=np.float32)
    out = ref * 1.025  # 2.5%: over fp32's 0.02, under bf16's 0.03
    assert not compare(out, ref).passed
    c = compare(out, ref, dtype="bf16")
    assert c.passed and c.limit == 0.03


def test_near_zero_reference_uses_absolute_error() -> None:
    ref = np.zeros(100, dtype=np.float32)
    out = np.full(100, 1e-9, dtype=np.float32)
    assert compare(out, ref).passed  # abs err 1e-9 <= 0.02
    out[:3] = 0.5  # abs err 0.5 > 0.02 on 3 elements, allowed int(100*0.02) = 2
    assert not compare(out, ref).passed


def test_nan_positions_must_match() -> None:
    ref = np.array([1.0, np.nan, 3.0])
    assert compare(np.array([1.0, np.nan, 3.0]), ref).passed
    c = compare(np.array([1.0, 2.0, np.nan]), ref)
    assert not c.passed and "NaN" in c.reason


def test_inf_positions_and_signs_must_match() -> None:
    ref = np.array([np.inf, -np.inf, 1.0])
    assert compare(ref.copy(), ref).passed
    c = compare(np.array([-np.inf, np.inf, 1.0]), ref)
    assert not c.passed and "sign" in c.reason
    c = compare(np.array([np.inf, 5.0, 1.0]), ref)
    assert not c.passed and "Inf positions" in c.reason


def test_all_non_finite_matching_passes() -> None:
    ref = np.array([np.nan, np.inf])
    assert compare(ref.copy(), ref).passed


def test_bool_outputs_must_match_exactly() -> None:
    ref = np.array([True, False, True])
    assert compare(ref.copy(), ref).passed
    assert not compare(np.array([True, True, True]), ref).passed


def test_explicit_limit_override() -> None:
    ref = np.ones(10)
    assert compare(ref * 1.5, ref, limit=0.6).passed


def test_dtype_names() -> None:
    assert dtype_name(np.float32) == "fp32"
    assert dtype_name(np.dtype("float16")) == "fp16"
    assert dtype_name("torch.bfloat16") == "bf16"
    assert dtype_name("torch.float32") == "fp32"
    assert limit_for("int8") == LIMITS["int8"] == 0.01
    assert limit_for("int64") == 0.02  # the ecosystem's default


@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=1, max_size=200),
    st.integers(0, 200),
)
def test_verdict_matches_count_rule(values: list[float], n_bad: int) -> None:
    ref = np.asarray(values, dtype=np.float32)
    out = ref.copy()
    n_bad = min(n_bad, ref.size)
    out[:n_bad] = ref[:n_bad] + np.where(np.abs(ref[:n_bad]) <= 1e-8, 1.0, np.abs(ref[:n_bad]))
    c = compare(out, ref)
    assert c.passed == (n_bad <= math.floor(ref.size * 0.02))
    assert c.fail_share == pytest.approx(n_bad / ref.size)


def test_integer_outputs_are_compared_exactly() -> None:
    """argmax indices: one index off in 1000 is wrong, though a 2% budget would let it pass."""
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
    c = compare(ref.astype(np.float32), ref)
    assert not c.passed and "dtype mismatch" in c.reason


def test_int8_keeps_its_count_based_limit() -> None:
    ref = np.full(1000, 100, dtype=np.int8)
    out = ref.copy()
    out[:5] = 50  # 5 of 1000 over the limit, allowed int(1000 * 0.01) = 10
    assert compare(out, ref).passed
