"""Parsing of the shapes, tiles and axes users type: strict, with messages that say how to fix it.

These run on every keystroke in the app and on every CLI call, so they are plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pypto_tui.errors import InputError
from pypto_tui.examples import ex, examples
from pypto_tui.findings import cites

Shape = tuple[int, ...]

MAX_RANK = 32
"""More dimensions than any framework's tensor takes (torch's kernels stop at 25): a typo, not a shape."""
MAX_DIM = 2**40
MAX_ELEMENTS = 2**48
"""Sizes no device holds (2**48 fp32 elements is a petabyte). Past them a shape is a typo; refusing
it keeps every computation on it (enumeration, loop counts) bounded and within int64."""


_ITEM_SEP = re.compile(r"\s*[,x×]\s*|\s+")
"""Between two sizes: a comma, `x` or `×` (spaces around it allowed), or spaces alone."""


def parse_dims(text: str | Sequence[int], what: str = "shape") -> Shape:
    """'16,256,256' / '(16, 256, 256)' / '16x256' / [16, 256] -> (16, 256, 256). Dims must be >= 1."""
    if isinstance(text, str):
        raw = text.strip().strip("()[]").strip()
        parts = _ITEM_SEP.split(raw)
        if len(parts) > 1 and parts[-1] == "":
            parts.pop()  # one trailing comma, as Python writes a 1-D shape: (16,)
        if parts == [""]:
            raise InputError(f"{what} is empty: write it like 16,256,256")
        dims: list[int] = []
        for i, p in enumerate(parts):
            if p == "":
                raise InputError(f"{what} '{clip(text)}' has an empty item (item {i + 1}): write one whole number "
                                 "between each pair of commas, like 16,256,256")
            try:
                value = int(p)
            except ValueError:
                raise InputError(
                    f"{what} '{clip(text)}' has '{clip(p)}', which is not a whole number: write it like 16,256,256"
                ) from None
            dims.append(value)
    else:
        dims = []
        for d in text:
            if isinstance(d, bool) or not isinstance(d, int):
                raise InputError(f"{what} {clip(repr(list(text)))} has {clip(repr(d))}, which is not a whole number")
            dims.append(d)
    return check_shape(dims, what)


def check_shape(dims: Sequence[int], what: str = "shape") -> Shape:
    """`dims` as a shape, refused (InputError) unless every size is a positive whole number and the
    rank and sizes are ones a tensor can have (MAX_RANK, MAX_DIM, MAX_ELEMENTS)."""
    dims = tuple(dims)
    if not dims:
        raise InputError(f"{what} is empty: write it like 16,256,256")
    if len(dims) > MAX_RANK:
        raise InputError(f"{what} has {len(dims)} dimensions: a tensor has at most {MAX_RANK}; "
                         "check the shape (or merge axes)")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise InputError(f"{what} {_fmt(dims)} has {d!r}, which is not a whole number")
        if d <= 0:
            raise InputError(f"{what} {_fmt(dims)} has {d}: every dimension must be a positive whole number")
        if d > MAX_DIM:
            raise InputError(f"{what} has a dimension of {d}: sizes above 2**40 ({MAX_DIM}) are not a tensor any "
                             "device holds; check the shape")
    total = 1
    for d in dims:
        total *= d
    if total > MAX_ELEMENTS:
        raise InputError(f"{what} {_fmt(dims)} has {total} elements: more than 2**48, which no device holds; "
                         "check the shape")
    return dims


@cites("P4.tile-rank")
@examples(valid=[ex(shape=(16, 256), text="1,256"), ex(shape=(16, 256), text=[2, 128])],
          invalid=[ex(shape=(16, 256), text="1,256,1", message="give one tile size per dimension"),
                   ex(shape=(16, 256), text="256", message="has 1 dims")])
def parse_tile_for(shape: Shape, text: str | Sequence[int]) -> Shape:
    """A tile for `shape`: same parsing, plus the rank must match (P4.tile-rank)."""
    tile = parse_dims(text, "tile")
    if len(tile) != len(shape):
        raise InputError(
            f"tile {_fmt(tile)} has {len(tile)} dims but shape {_fmt(shape)} has {len(shape)}: "
            f"give one tile size per dimension (P4.tile-rank)"
        )
    return tile


def normalise_axis(axis: int, rank: int, what: str = "reduce dim") -> int:
    """Negative axes count from the end, as in torch; out-of-range axes are an input error."""
    if not -rank <= axis < rank:
        raise InputError(f"{what} {axis} is out of range for a rank-{rank} shape: use 0..{rank - 1} (or -{rank}..-1)")
    return axis % rank


def clip(text: str, width: int = 60) -> str:
    """A user's value, shortened for an error message (a 25 MB argument must not become the message)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _fmt(dims: Sequence[object]) -> str:
    """A tuple as Python writes it, "(4,)" for one element (also for (low, high) padding pairs)."""
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


fmt_dims = _fmt


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def auto_tiles(shape: Sequence[int], tile: Sequence[int]) -> int:
    """How many tiles the compiler cuts an op into (P4.auto-tiles): prod(ceil(shape / tile))."""
    n = 1
    for s, t in zip(shape, tile, strict=True):
        n *= -(-s // t)
    return n
