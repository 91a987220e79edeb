"""Does the kernel's output match the torch baseline? The ecosystem's count-based rule.

The kernel-generation ecosystem (akg_agents' verifier) does not ask for every element to be
close: it counts the elements whose relative error exceeds a per-dtype limit, and fails the
output only when that count exceeds limit x N. Low-precision dtypes get a budget of a few
stray elements instead of a blanket atol. We follow it, with one deliberate difference: where
the reference is ~0 (|ref| <= 1e-8) the *absolute* error is used, so an exact-zero reference
does not turn a 1e-9 rounding difference into a relative error of 0.1.

Before any counting: shapes must match, NaNs must be at the same positions, and Infs must be
at the same positions with the same signs. Boolean outputs must match exactly, and so must
integer outputs (indices: argmax returns int64 in torch, and an index one off is simply wrong),
with the baseline's dtype: a kernel that returns int32 where torch gives int64 fails. int8 keeps
its count-based limit (quantised values, not indices).

numpy only; the worker converts torch tensors (bf16 via float32) before calling this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Relative-error limit per dtype; also the allowed share of failing elements.
LIMITS: dict[str, float] = {"fp32": 0.02, "fp16": 0.004, "bf16": 0.03, "int8": 0.01}
DEFAULT_LIMIT = 0.02
ZERO_REF = 1e-8
# Integer dtypes compared exactly (indices, counts); int8 is a quantised value type and is not here.
EXACT_INTEGERS = frozenset({"int16", "int32", "int64", "uint8"})

_NUMPY_NAMES = {
    "float32": "fp32", "float16": "fp16", "float64": "fp64", "int8": "int8", "int16": "int16",
    "int32": "int32", "int64": "int64", "uint8": "uint8", "bool": "bool",
}


def dtype_name(dtype: Any) -> str:
    """Short name (fp32, fp16, bf16, int8, ...) for a numpy dtype, torch dtype or string."""
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        dtype = np.dtype(dtype)
    s = dtype.name if isinstance(dtype, np.dtype) else str(dtype).removeprefix("torch.")
    aliases = {"float": "float32", "half": "float16", "bfloat16": "bf16", "double": "float64"}
    s = aliases.get(s, s)
    return _NUMPY_NAMES.get(s, s)


def limit_for(dtype: Any) -> float:
    return LIMITS.get(dtype_name(dtype), DEFAULT_LIMIT)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The verdict for one output. `reason` is one line: why it failed, or a summary if it passed."""

    passed: bool
    reason: str
    max_abs_err: float
    max_rel_err: float
    fail_share: float
    dtype: str = ""
    limit: float = DEFAULT_LIMIT

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "fail_share": self.fail_share,
            "dtype": self.dtype,
            "limit": self.limit,
        }


def compare(
    actual: Any, expected: Any, *, dtype: str | None = None, limit: float | None = None
) -> Comparison:
    """Compare `actual` (the kernel's output) with `expected` (the baseline's).

    `dtype` names the baseline's dtype when the arrays were widened (bf16 arrives as float32);
    `limit` overrides the per-dtype limit.
    """
    act = np.asarray(actual)
    exp = np.asarray(expected)
    name = dtype or dtype_name(exp.dtype)
    lim = float(limit) if limit is not None else LIMITS.get(name, DEFAULT_LIMIT)

    def fail(reason: str, abs_err: float = float("nan"), rel_err: float = float("nan"), share: float = 1.0):
        return Comparison(False, reason, abs_err, rel_err, share, name, lim)

    if act.shape != exp.shape:
        return fail(f"shape mismatch: kernel {tuple(act.shape)} vs baseline {tuple(exp.shape)}")
    n = exp.size
    if n == 0:
        return Comparison(True, "empty output", 0.0, 0.0, 0.0, name, lim)

    if name in EXACT_INTEGERS or dtype_name(act.dtype) in EXACT_INTEGERS:
        return _exact_integers(act, exp, name, lim)

    if exp.dtype == np.bool_ or act.dtype == np.bool_:
        wrong = int(np.count_nonzero(act.astype(bool) != exp.astype(bool)))
        if wrong:
            return fail(f"{wrong}/{n} boolean elements differ", 1.0, float("inf"), wrong / n)
        return Comparison(True, "all boolean elements equal", 0.0, 0.0, 0.0, name, lim)

    a = act.astype(np.float64, copy=False).ravel()
    e = exp.astype(np.float64, copy=False).ravel()

    a_nan, e_nan = np.isnan(a), np.isnan(e)
    if not np.array_equal(a_nan, e_nan):
        return fail(f"NaN positions differ: kernel has {int(a_nan.sum())}, baseline {int(e_nan.sum())}")
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    if not np.array_equal(a_inf, e_inf):
        return fail(f"Inf positions differ: kernel has {int(a_inf.sum())}, baseline {int(e_inf.sum())}")
    if e_inf.any() and not np.array_equal(np.sign(a[a_inf]), np.sign(e[e_inf])):
        return fail("Inf signs differ")

    finite = np.isfinite(e)
    count = int(finite.sum())
    if count == 0:
        return Comparison(True, "no finite elements; NaN/Inf positions match", 0.0, 0.0, 0.0, name, lim)
    af, ef = a[finite], e[finite]
    abs_err = np.abs(af - ef)
    ref = np.abs(ef)
    near_zero = ref <= ZERO_REF
    err = np.where(near_zero, abs_err, abs_err / np.where(near_zero, 1.0, ref))
    max_abs = float(abs_err.max())
    rel_only = err[~near_zero]
    max_rel = float(rel_only.max()) if rel_only.size else 0.0
    failing = int(np.count_nonzero(err > lim))
    allowed = int(count * lim)
    share = failing / count
    if failing > allowed:
        return fail(
            f"{failing}/{count} elements exceed the {name} limit {lim:g} (allowed {allowed}); "
            f"max abs err {max_abs:.3g}, max rel err {max_rel:.3g}",
            max_abs, max_rel, share,
        )
    return Comparison(
        True,
        f"{failing}/{count} elements over {lim:g} (allowed {allowed}); max abs err {max_abs:.3g}",
        max_abs, max_rel, share, name, lim,
    )


def _exact_integers(act: np.ndarray, exp: np.ndarray, name: str, lim: float) -> Comparison:
    """Integer outputs: the same dtype as the baseline and every element equal."""
    got = dtype_name(act.dtype)
    if got != name:
        return Comparison(False, f"dtype mismatch: kernel {got} vs baseline {name} (integer outputs are compared "
                          "exactly, in the baseline's dtype)", float("nan"), float("nan"), 1.0, name, lim)
    wrong = act != exp
    n = exp.size
    count = int(np.count_nonzero(wrong))
    if count:
        diff = np.abs(act.astype(np.int64) - exp.astype(np.int64))
        worst = float(diff.max())
        return Comparison(False, f"{count}/{n} {name} elements differ (compared exactly); max abs diff {worst:g}",
                          worst, float("inf"), count / n, name, lim)
    return Comparison(True, f"all {n} {name} elements equal (compared exactly)", 0.0, 0.0, 0.0, name, lim)
