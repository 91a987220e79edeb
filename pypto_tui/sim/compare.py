"""Does the kernel's output match the torch baseline? Every element, KernelBench's way.

KernelBench, the suite our users measure against, passes a kernel only when `torch.allclose`
holds on every element of every output, for several random inputs: |kernel - ref| <= atol +
rtol * |ref|, with atol = rtol = 1e-4 for fp32 and 1e-2 for fp16/bf16 (its current eval.py; its
v0.1 used 1e-2 for all). An earlier version of this module let 2% of the elements be arbitrarily
wrong, and planted bugs (a matmul's last column never written, a scan's last column never
computed) passed. So no element is excused here: one element outside the bound fails the output,
and the reason names how many, where the worst one is and by how much.

Before the bound is applied: shapes must match, the kernel's dtype must be the baseline's (a
kernel that returns float16 or int32 where torch gives float32 or int64 is wrong even when the
values round-trip), NaNs must sit at the same positions, and Infs at the same positions with the
same signs (stricter than allclose, which fails any NaN; a baseline that produces NaN is matched
NaN for NaN). Boolean and integer outputs must be equal element for element.

The tolerances are data: the pack's verify.toml names each criterion, its per-dtype (atol, rtol)
and the source of every number (kb.VerifyCriteria); `KERNELBENCH` below is the same table for
callers without a pack. numpy only; the worker converts torch tensors (bf16 via float32, with
the dtype name kept) before calling this.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Tolerance = tuple[float, float]  # (atol, rtol)

# KernelBench's current eval.py (get_tolerance_for_precision); other float dtypes take fp32's.
KERNELBENCH: dict[str, Tolerance] = {"fp32": (1e-4, 1e-4), "fp16": (1e-2, 1e-2), "bf16": (1e-2, 1e-2)}
DEFAULT_CRITERION = "kernelbench"
EXACT_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8"})

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


def tolerance_for(dtype: str, table: Mapping[str, Tolerance] | None = None) -> Tolerance:
    """(atol, rtol) for a dtype name under a criterion's table (KernelBench's by default); a float
    dtype the table does not name takes fp32's numbers."""
    t = KERNELBENCH if table is None else table
    return tuple(t.get(dtype) or t.get("fp32") or KERNELBENCH["fp32"])  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Comparison:
    """The verdict for one output. `reason` is one line: why it failed, or a summary if it passed.
    `fail_share` is the share of elements outside the bound (0.0 when it passed); `limit` is the
    rtol applied (kept for the JSON's readers), `atol`/`rtol` the bound itself."""

    passed: bool
    reason: str
    max_abs_err: float
    max_rel_err: float
    fail_share: float
    dtype: str = ""
    limit: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    failing: int = 0
    worst_index: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "fail_share": self.fail_share,
            "dtype": self.dtype,
            "limit": self.limit,
            "atol": self.atol,
            "rtol": self.rtol,
            "failing": self.failing,
            "worst_index": list(self.worst_index) if self.worst_index is not None else None,
        }


def compare(actual: Any, expected: Any, *, dtype: str | None = None, actual_dtype: str | None = None,
            tolerances: Mapping[str, Tolerance] | None = None) -> Comparison:
    """Compare `actual` (the kernel's output) with `expected` (the baseline's).

    `dtype` and `actual_dtype` name the two sides' dtypes when the arrays were widened (bf16
    arrives as float32); `tolerances` is the criterion's per-dtype (atol, rtol) table.
    """
    act = np.asarray(actual)
    exp = np.asarray(expected)
    name = dtype or dtype_name(exp.dtype)
    got = actual_dtype or dtype_name(act.dtype)
    atol, rtol = (0.0, 0.0) if name in EXACT_DTYPES else tolerance_for(name, tolerances)

    def verdict(passed: bool, reason: str, abs_err: float = float("nan"), rel_err: float = float("nan"),
                share: float = 1.0, failing: int = 0, where: tuple[int, ...] | None = None) -> Comparison:
        return Comparison(passed, reason, abs_err, rel_err, share, name, rtol, atol, rtol, failing, where)

    if act.shape != exp.shape:
        return verdict(False, f"shape mismatch: kernel {tuple(act.shape)} vs baseline {tuple(exp.shape)}")
    if got != name:
        return verdict(False, f"dtype mismatch: kernel {got} vs baseline {name} (the output must have the "
                              "baseline's dtype)")
    n = exp.size
    if n == 0:
        return verdict(True, "empty output", 0.0, 0.0, 0.0)
    if name in EXACT_DTYPES:
        return _exact(act, exp, name, verdict)

    a = act.astype(np.float64, copy=False)
    e = exp.astype(np.float64, copy=False)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    if not np.array_equal(a_nan, e_nan):
        first = _first(a_nan != e_nan)
        return verdict(False, f"NaN positions differ: kernel has {int(a_nan.sum())}, baseline {int(e_nan.sum())} "
                              f"(first at {first})", where=first)
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    if not np.array_equal(a_inf, e_inf) or not np.array_equal(np.sign(a[a_inf]), np.sign(e[e_inf])):
        first = _first((a_inf != e_inf) | (a_inf & (np.sign(a) != np.sign(e))))
        return verdict(False, f"Inf positions or signs differ: kernel has {int(a_inf.sum())}, baseline "
                              f"{int(e_inf.sum())} (first at {first})", where=first)

    finite = np.isfinite(e)
    if not finite.any():
        return verdict(True, "no finite elements; NaN/Inf positions match", 0.0, 0.0, 0.0)
    abs_err = np.abs(np.where(finite, a, 0.0) - np.where(finite, e, 0.0))  # inf - inf is never computed
    bound = atol + rtol * np.abs(np.where(finite, e, 0.0))
    over = abs_err > bound
    failing = int(np.count_nonzero(over))
    max_abs = float(abs_err.max())
    nonzero = finite & (e != 0)
    max_rel = float((abs_err[nonzero] / np.abs(e[nonzero])).max()) if nonzero.any() else 0.0
    count = int(finite.sum())
    if failing:
        worst = np.unravel_index(int(np.argmax(np.where(over, abs_err - bound, -np.inf))), e.shape)
        where = tuple(int(i) for i in worst)
        return verdict(False, f"{failing}/{count} elements outside atol {atol:g} + rtol {rtol:g} x |ref| ({name}); "
                              f"worst at {where}: kernel {float(a[where]):.6g}, baseline {float(e[where]):.6g}; "
                              f"max abs err {max_abs:.3g}", max_abs, max_rel, failing / count, failing, where)
    return verdict(True, f"all {count} elements within atol {atol:g} + rtol {rtol:g} x |ref| ({name}); "
                         f"max abs err {max_abs:.3g}", max_abs, max_rel, 0.0)


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _exact(act: np.ndarray, exp: np.ndarray, name: str, verdict: Callable[..., Comparison]) -> Comparison:
    """Integer and boolean outputs: every element equal (an index one off is simply wrong)."""
    wrong = act != exp
    count = int(np.count_nonzero(wrong))
    n = exp.size
    if count:
        diff = np.abs(act.astype(np.int64) - exp.astype(np.int64))
        where = _first(wrong)
        return verdict(False, f"{count}/{n} {name} elements differ (compared exactly; first at {where}); "
                              f"max abs diff {float(diff.max()):g}", float(diff.max()), float("inf"), count / n,
                       count, where)
    return verdict(True, f"all {n} {name} elements equal (compared exactly)", 0.0, 0.0, 0.0)
