"""What every window kernel writes with: the generated module's names for a plan (sizes,
shapes, offsets), the expression helpers and the tap window views the conv and pool kernels share."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, literal, name
from pypto_tui.codegen.spec import TensorParam

if TYPE_CHECKING:
    from pypto_tui.window import WindowPlan


CUBE_ROWS = 16        # the cube tiles are chosen for a block of rows/16 rows (the ladder's first count)
PHASE_COLUMNS_RUN = 2048  # the least run of a phase-plane conv's column tile (CONV.flat-phases)
# pypto 0.2.0 checks the names it reads when it traces a kernel, so the modules the harness builds
# need only these besides their own parameters
MODULE_GLOBALS = frozenset({"nn", "torch", "True", "False", "None", "math"})


# ------------------------------------------------------------------------------------ names
def axis_letters(nd: int) -> tuple[str, ...]:
    return ("L",) if nd == 1 else ("H", "W") if nd == 2 else ("D", "H", "W")


def dim_names(nd: int) -> list[str]:
    return ["n", "c", *({1: ["length"], 2: ["h", "w"], 3: ["d", "h", "w"]}[nd])]


@lru_cache(maxsize=4096)
def expr(text: str) -> cst.BaseExpression:
    """Parsed once per text and shared (libcst nodes are immutable): a conv or pool's kernels repeat the
    same extents and offsets, and a model repeats the same module constructor, hundreds of times."""
    return cst.parse_expression(text)


def expr_list(items: list[str]) -> cst.List:
    return cst.List([cst.Element(expr(i)) for i in items])


def product(items: list[str]) -> str:
    items = [i for i in items if i != "1"] or ["1"]
    return " * ".join(items)


class Names:
    """The generated module's names for one plan: per-axis sizes and the shapes the kernels use."""

    def __init__(self, plan: WindowPlan) -> None:
        self.plan = plan
        self.nd = plan.nd
        self.L = axis_letters(plan.nd)
        self.sizes = dim_names(plan.nd)[2:]
        self.o = [f"O{a}" for a in self.L]
        self.q = [f"Q{a}" for a in self.L]
        self.lo = [f"LO_{a}" for a in self.L]
        self.hi = [f"HI_{a}" for a in self.L]
        # POOL.phase-split: a phase-split axis holds S phases of P positions each (P = ceil(Q / S))
        self.phase = [plan.phases(i) for i in range(plan.nd)]
        self.p = [f"P{a}" for a in self.L]
        phases = [p for p, on in zip(self.p, self.phase, strict=True) if on]
        if plan.phase_planes:  # CONV.flat-phases: a phase plane's extents
            phases = list(self.p)
        band = ["OWP"] if plan.band_matmul else []  # POOL.band-matmul: the band's columns
        self.geometry = [*self.o, *self.q, *self.lo, *self.hi, *phases, *band, "ROWS", "BLOCKS", "LAST", "SPREAD"]
        # a 3-D pool keeps its views 4-D to the end: its output is (N*C, O0, O1, O2)
        self.natural = plan.strategy == "pool-taps" and plan.nd == 3

    def step(self, i: int) -> int:
        return self.plan.axes[i].step

    def unit(self) -> str:
        return product(self.o[1:]) if self.nd > 1 else "1"

    def out_block(self, ch: str) -> list[str]:
        if self.natural:
            return [ch, "ROWS", *self.o[1:]]
        return [ch, "ROWS", "UNIT"] if self.nd > 1 else [ch, "1", "ROWS"]

    def out_offsets(self, row0: str) -> list[str]:
        if self.natural:
            return [row0, "r0", "0", "0"]
        return [row0, "r0", "0"] if self.nd > 1 else [row0, "0", "r0"]

    def out_shape(self, channels: str) -> list[str]:
        if self.natural:
            return [f"n * {channels}", *self.o]
        return [f"n * {channels}", self.o[0], self.unit()] if self.nd > 1 else [f"n * {channels}", "1", self.o[0]]

    def prepared(self) -> list[str]:
        """The prepared planes' extents: Q, or S x P on a phase-split axis (POOL.phase-split)."""
        return [f"{self.step(i)} * {self.p[i]}" if self.phase[i] else self.q[i] for i in range(self.nd)]

    def planes_shape(self, extents: list[str]) -> list[str]:
        return ["n * c", "1", extents[0]] if self.nd == 1 else ["n * c", *extents]


def unpack_geometry(nm: Names, fn: str, dims: list[str]) -> Stmts:
    targets = ", ".join(nm.geometry)
    return [cst.parse_statement(f"{targets} = {fn}({', '.join(dims)})\n")]


def factory_prelude(unpack: Stmts, extra: list[str]) -> Stmts:
    return [*unpack, *(cst.parse_statement(line + "\n") for line in extra)]


def given_sizes(plan: WindowPlan, nm: Names, after: int = -1) -> list[str]:
    """The extents the pre kernel is handed: the input's, each strided axis S times longer once the
    insertion kernels put its zeros in (CONV.insert-matmul, CONV.insert-rows); `after`: only the
    axes after it (the extents a row kernel of that axis reads)."""
    sizes = list(nm.sizes)
    if plan.inserts_flat:
        for i, a in enumerate(plan.axes):
            if a.insert > 1 and i > after:
                sizes[i] = f"{sizes[i]} * STRIDE[{i}]"
    return sizes


def fill_word(plan: WindowPlan) -> str:
    return "-inf" if plan.fill == float("-inf") else "zero"


def plane_shape(nd: int, ext: list[str]) -> list[str]:
    return ["1", "1", ext[0]] if nd == 1 else ["1", *ext]


# ------------------------------------------------------------------------------------ window views
def tap_window(b: Builder, plan: WindowPlan, nm: Names, src: str, ch: str, first: str, taps: list[str],
            win: Any, win4: Any) -> Stmts:
    """One tap's window of a block of output rows under the window tile (CONV.window-tile), each
    stride taken by index_select (CONV.stride-view): it ends as `win`, (ch, ROWS, O1[, O2]) (1-D:
    (ch, 1, ROWS)), in the view's own rank."""
    nd = plan.nd
    steps = [nm.step(i) for i in range(nd)]
    ext = ["1" if plan.depth_slices else f"ROWS * {steps[0]}" if steps[0] > 1 and not nm.phase[0] else "ROWS"] + [
        f"{nm.o[i]} * {steps[i]}" if steps[i] > 1 and not nm.phase[i] else nm.o[i] for i in range(1, nd)]
    row = f"r0 * {steps[0]} + {taps[0]}" if steps[0] > 1 else f"r0 + {taps[0]}"
    if nm.phase[0]:  # POOL.phase-split along the rows: the tap's phase, then the block's rows in it
        row = f"({taps[0]} % {steps[0]}) * {nm.p[0]} + {taps[0]} // {steps[0]} + r0"
    # POOL.phase-split: the tap's phase, then its position in the phase
    at = [f"({taps[i]} % {steps[i]}) * {nm.p[i]} + {taps[i]} // {steps[i]}" if nm.phase[i] else taps[i]
          for i in range(nd)]
    if nd == 1:
        shape, offsets, axes = [ch, "1", ext[0]], [first, "0", row], [2]
    else:
        shape, offsets, axes = [ch, *ext], [first, row, *at[1:]], [1 + i for i in range(nd)]
    out: Stmts = [set_tile(win4 if nd == 3 else win)]
    out += b.tmpl("window_view", dst=name("win"), src=name(src), shape=expr_list(shape), offsets=expr_list(offsets))
    for i in range(nd):
        if plan.gathers(i):
            out += b.tmpl("window_stride", dst=name("win"), src=name("win"), axis=literal(axes[i]),
                          index=name(index_name(nm, i)))
    return out


def index_name(nm: Names, i: int) -> str:
    return f"keep_{nm.L[i].lower()}"


def tap_indices(b: Builder, plan: WindowPlan, nm: Names, rows_axis: bool = True) -> Stmts:
    """The kept positions of every strided axis (CONV.stride-view); axis 0 counts the block's rows."""
    out: Stmts = []
    for i in range(plan.nd):
        if not plan.gathers(i):
            continue
        s = nm.step(i)
        count = f"ROWS * {s}" if i == 0 and rows_axis else f"{nm.o[i]} * {s}"
        out += b.tmpl("window_index", tile=name("INDEX_TILE"), index=name(index_name(nm, i)), count=expr(count),
                      stride=literal(s))
    return out


def set_tile(tile: Any) -> cst.BaseStatement:
    return cst.parse_statement(f"pypto.set_vec_tile_shapes(*{tile.node.value})  # pypto-lint: ignore[lint.tile_waste]"
                               "  CONV.window-tile: sized for the window views\n")


def tensor_param(pname: str, shape: list[str], b: Builder) -> TensorParam:
    return TensorParam(pname, tuple(expr(v) for v in shape), b.ctx.dtype)


def block_loop(b: Builder, loop_name: str, total: str, count: str,
               block: Callable[[str, str, str], Stmts]) -> tuple[Stmts, Stmts]:
    """A kernel's loop over `total` in `count` blocks (P6.loop-tail): the factory's loop sizes
    (BASIC_BATCH, MAIN_ITERS, TAIL_OFFSET, TAIL), and the pypto.loop over the full blocks followed by
    the tail block, each written by `block(size, offset, suffix)`."""
    sizes = b.tmpl("loop_prelude", total=expr(total), count=expr(count))
    return sizes, b.loop("i", loop_name, block("BASIC_BATCH", "off", "chunk"), block("TAIL", "TAIL_OFFSET", "tail"))
