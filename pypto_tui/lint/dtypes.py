"""Every PyPTO dtype's width, so that no kernel's dtype is unknown to the lint.

The pack's `limits.toml` prices the dtypes the tile tools use (fp32, fp16, ...); a kernel may
declare any of PyPTO's (`DT_UINT8`, `DT_INT4`, the fp8 and mx formats of its tests). The widths
below are PyPTO's own table (`framework/include/tilefwk/data_type.h`, DTYPE_DESC: bytes, bits;
hicann/pypto @ 883e7dfb), by the lint's spelling of a dtype (`DT_FP4_E2M1` -> 'fp4_e2m1').
A dtype narrower than a byte (int4, hf4, the unpacked fp4s) has no whole byte width: a rule that
prices bytes skips it and says so with an info finding.
"""

from __future__ import annotations

from collections.abc import Mapping

PYPTO_DTYPE_BITS: Mapping[str, int] = {
    "int4": 4, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "bool": 8,
    "fp8": 8, "fp16": 16, "fp32": 32, "bf16": 16, "double": 64, "fp64": 64,
    "hf4": 4, "hf8": 8, "fp8e4m3": 8, "fp8e4m3fn": 8, "fp8e5m2": 8, "fp8e8m0": 8,
    "fp4_e2m1x2": 8, "fp4_e1m2x2": 8, "fp4_e2m1": 4, "fp4_e1m2": 4,
}


def dtype_sizes(pack: Mapping[str, int]) -> dict[str, int]:
    """Bytes per element of every dtype a whole byte wide: the pack's, then PyPTO's."""
    out = {d: bits // 8 for d, bits in PYPTO_DTYPE_BITS.items() if bits % 8 == 0}
    out.update(pack)
    return out


def sub_byte(dtype: str | None) -> bool:
    """A PyPTO dtype narrower than a byte (two elements share one)."""
    return dtype is not None and PYPTO_DTYPE_BITS.get(dtype, 8) < 8


__all__ = ["PYPTO_DTYPE_BITS", "dtype_sizes", "sub_byte"]
