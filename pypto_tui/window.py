"""The im2col plan: how a conv or pool becomes kernel work pypto 0.2.0 can run on a CPU.

`pypto.conv` cannot run in 0.2.0's simulator (CONV.not-runnable), so a conv is computed as an
implicit matmul: for one image and one group, the taps' windows of the input are stacked into a
column buffer (C/G * prod(K) rows, OH*OW columns) and one `pypto.matmul` multiplies it by the
group's weights, (OC/G) x (C/G * prod(K)). A pool, and a depthwise conv, reduce over their taps
with vector ops instead (no matmul). This module computes that plan from the contract's
`WindowSpec`, for the strategy the dimension step chose:

- `im2col`: conv and transposed conv. A transposed conv is the conv of the input with zeros
  inserted between its elements (stride - 1 per gap), padded by dilation*(kernel-1) - padding,
  taken with the taps in reverse order and each group's weights transposed (CONV.transposed).
- `depthwise-taps`: groups == channels == out channels; a sum over the taps of window * weight.
- `pool-taps`: max or average pooling: a max (or sum) over the window's taps, each tap one strided
  view of the input (a separable form, one axis at a time over views of the previous axis's
  result, is miscompiled by 0.2.0 once the loop has several blocks: POOL.tap-views).

Every variant reads the input through one "prepared" tensor: padded (zeros, or -inf for a max
pool), zero-inserted for a transposed conv, and long enough that a window block of R output rows
is one constant-shape view (R*stride rows from r0*stride + k*dilation). Strides are taken inside
the view by a reshape to (.., O, stride) and a view of the first of each stride (CONV.stride-view).
A pre kernel builds it one (image, channel) plane at a time; when nothing needs padding, the input
is used as it is.

The work runs over *items* (an image and a group, or an image and a block of channels) and, in
each, blocks of output rows (axis 0 of the output's spatial axes): the loop step decides the rows
per block on the documents' log scale; the items multiply the iterations.

Pure Python, no libcst: the pipeline, the app and the code generator all read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pypto_tui.contract.conv import WindowSpec
from pypto_tui.kb import WindowLimits

STRATEGIES = ("im2col", "depthwise-taps", "pool-taps")
# The strategy each dimension-plan strategy id stands for (strategies.toml rows of reshape "window").
STRATEGY_OF_ID: Mapping[str, str] = {
    "conv-im2col": "im2col", "conv-transposed-zero-insert": "im2col", "conv-depthwise-taps": "depthwise-taps",
    "pool-tap-views": "pool-taps",
}




@dataclass(frozen=True)
class AxisPlan:
    """One spatial axis: the input, the prepared input and the windows read from it.

    The prepared axis is `lo` fill positions, the data (the input, each element followed by
    `insert - 1` zeros for a transposed conv), then fill up to `prepared`. Output position o reads
    prepared positions `base + o*step + k*dilation` for tap k (reversed for a transposed conv).
    """

    size: int
    out: int
    kernel: int
    step: int
    dilation: int
    insert: int
    lo: int
    base: int
    prepared: int

    @property
    def data(self) -> int:
        return self.size * self.insert

    @property
    def hi(self) -> int:
        return self.prepared - self.lo - self.data

    @property
    def view(self) -> int:
        """The extent of one window view of all `out` positions: out*step (the stride is taken by a
        reshape to (out, step) inside it)."""
        return self.out * self.step

    def needs_fill(self) -> bool:
        return self.lo > 0 or self.hi > 0 or self.insert > 1


def _axis(spec: WindowSpec, i: int) -> AxisPlan:
    size, k, s, d = spec.spatial[i], spec.kernel[i], spec.stride[i], spec.dilation[i]
    lo_pad, _ = spec.padding[i]
    out = spec.out_size(i)
    if spec.transposed:
        q = d * (k - 1) - lo_pad  # zeros before the zero-inserted input; negative: rows cropped
        lo, base, step, insert = max(q, 0), max(-q, 0), 1, s
    else:
        lo, base, step, insert = lo_pad, 0, s, 1
    need = base + out * step + d * (k - 1)  # the last window block ends here (stride views included)
    prepared = max(lo + size * insert, need)
    return AxisPlan(size, out, k, step, d, insert, lo, base, prepared)


@dataclass(frozen=True)
class WindowPlan:
    """The im2col (or tap-reduction) plan for one conv or pool (see the module docstring)."""

    spec: WindowSpec
    strategy: str
    axes: tuple[AxisPlan, ...]
    channels_per_item: int
    items_per_image: int
    # the pack's block sizes (limits.toml [window]) every derived size below reads
    limits: WindowLimits
    # CONV.flat-taps: each tap's window is one contiguous view of the planes read flat (H*W), so no
    # strided window is copied into the column buffer; the decision is flat_taps(spec)'s, made here
    flat: bool = False

    # ------------------------------------------------------------------ derived
    @property
    def nd(self) -> int:
        return self.spec.nd

    @property
    def taps(self) -> int:
        return self.spec.taps

    @property
    def fill(self) -> float:
        return float("-inf") if self.spec.kind == "max_pool" else 0.0

    @property
    def prepare(self) -> bool:
        """A pre kernel builds the prepared input (padding, zero insertion, room for stride views, the
        stride phases of POOL.phase-split)."""
        return any(a.needs_fill() or self.phases(i) for i, a in enumerate(self.axes))

    @property
    def pads_in_blocks(self) -> bool:
        """The pre kernel writes blocks of whole planes (CONV.pad-blocks): the data assembled at its
        offset and each border as one fill slab, where one plane per iteration grew each plane by
        concats. A transposed conv's zeros come in from the flat insertion kernels (inserts_flat), or
        where those do not apply, one plane at a time."""
        return all(a.insert <= 1 for a in self.axes) or self.inserts_flat  # the zeros already in

    @property
    def prepare_planes(self) -> int:
        """Planes per iteration of a block pre kernel (CONV.pad-blocks): up to the pack's prepare_planes,
        and no more than its prepare_elements padded elements (a 3-D volume is a block on its own)."""
        plane = math.prod(a.prepared for a in self.axes)
        return max(1, min(self.spec.batch * self.spec.in_channels, self.limits.prepare_planes,
                          self.limits.prepare_elements // plane))

    @property
    def plane_blocks(self) -> bool:
        """Whether the pool's loop takes blocks of planes (POOL.plane-blocks; pool_planes says how
        many, one where a plane is large): every pool but an average with a count map, which is per
        plane."""
        return self.strategy == "pool-taps" and (self.spec.kind == "max_pool" or self.divisor is not None)

    @property
    def test_planes(self) -> int | None:
        """The fewest (image, channel) planes a test of this pool runs, or None when it need not keep
        the block (POOL.plane-blocks): more than two blocks, so a block past the first runs (a kernel
        whose blocks all start at plane 0 passed with the 8 planes of one block). None for one plane
        an item, and for a block bounded by a large plane (pool_planes): any smaller test plane takes
        a larger block."""
        planes = self.spec.batch * self.spec.in_channels
        full = min(self.limits.pool_planes, planes)
        if not self.plane_blocks or self.channels_per_item <= 1 or self.channels_per_item < full:
            return None
        return 2 * self.channels_per_item + 1

    @property
    def band_matmul(self) -> bool:
        """Whether a 2-D average pool takes its W axis as one matmul (POOL.band-matmul): the output
        column o is the sum of the input columns in its window, times 1/count, a band matrix (W x
        OWP) applied to every input row on the cube, padding columns simply absent from the band;
        its H axis is then a sum of plain row views. Needs a constant divisor (the band holds it)
        and a stride along W (with stride 1 the band is W x W and the cube does W times the work).
        Measured with pypto 0.2.0 SIM: KernelBench 45 (kernel 11, stride 11) at (2, 64, 32, 128)
        146.9 -> 24.8 us; kernel 3, stride 2, padding 1 at (2, 16, 32, 64) 117.7 -> 21.3 us."""
        return (self.strategy == "pool-taps" and self.nd == 2 and self.spec.kind == "avg_pool"
                and self.divisor is not None and self.axes[1].step > 1 and not self.spec.ceil_mode)

    @property
    def band_align(self) -> int:
        """What the band's columns are a multiple of: whole 32-byte rows (the pack's
        alignment in fp32 elements)."""
        return self.limits.align_elements

    @property
    def band_width(self) -> int:
        """OWP: the band's output columns, OW rounded up to whole 32-byte rows."""
        return math.ceil(self.axes[-1].out / self.band_align) * self.band_align

    @property
    def band_planes(self) -> int:
        """Planes per iteration of the band kernel (POOL.band-matmul): as many as the pack's band_rows
        input rows hold, so each matmul has a long M (the cube's fixed cost per matmul is shared)."""
        return max(1, min(self.spec.batch * self.spec.in_channels, self.limits.band_rows // self.axes[0].size))

    @property
    def band_matmul_shape(self) -> tuple[int, int, int] | None:
        """(M, K, N) of the band matmul (POOL.band-matmul): a block of planes' input rows by the band."""
        if not self.band_matmul:
            return None
        return (self.band_planes * self.axes[0].size, self.axes[1].size, self.band_width)

    @property
    def inserts_flat(self) -> bool:
        """Whether a transposed conv inserts its zeros over the whole input, one axis at a time, before
        the padding (CONV.insert-matmul, CONV.insert-rows): the last axis by a matmul, every axis
        before it by appending S - 1 zero rows of the inner extent to each row of a flat view. Else
        (a last axis under 8 elements wide per block) one plane at a time by concats."""
        a = self.axes[-1]
        return (self.spec.transposed and any(x.insert > 1 for x in self.axes)
                and (a.insert <= 1 or self.insert_block >= self.limits.align_elements))

    @property
    def inserts_by_matmul(self) -> bool:
        """Whether a transposed conv inserts its last axis's zeros with a matmul (CONV.insert-matmul):
        read flat in blocks of insert_block elements, the input times E (B x B*S), E[j, j*S] = 1, is
        the input with S - 1 zeros after each element, in memory order. The per-plane concat it
        replaces grew a (positions, 1) column by (positions, S - 1) zeros, tiles with a last dim of
        one element: KernelBench 79 (1-D, stride 2) at (2, 32, 2048) spent 3148.9 of its 3191.2 us
        there. The other axes' zeros are whole rows and keep the concat."""
        return self.inserts_flat and self.axes[-1].insert > 1

    @property
    def insert_block(self) -> int:
        """B: the input's last axis read in blocks of B elements (the largest of 16, 8, 4, 2, 1 that
        divides it) for the insertion matmul (CONV.insert-matmul); under 8 (32 bytes) the width keeps
        the concat."""
        return next(b for b in (self.limits.insert_block, 8, 4, 2, 1) if self.axes[-1].size % b == 0)

    @property
    def insert_chunk_elements(self) -> int:
        """Elements one iteration of a zero-row insertion kernel writes at most (CONV.insert-rows)."""
        return self.limits.prepare_elements

    @property
    def insert_matmul_shape(self) -> tuple[int, int, int] | None:
        """(M, K, N) of one iteration of the insertion matmul (CONV.insert-matmul)."""
        if not self.inserts_by_matmul:
            return None
        rows = self.spec.batch * self.spec.in_channels * math.prod(a.size for a in self.axes) // self.insert_block
        return (min(rows, self.limits.insert_rows), self.insert_block, self.insert_block * self.axes[-1].insert)

    @property
    def reverse_taps(self) -> bool:
        return self.spec.transposed

    @property
    def depth_slices(self) -> bool:
        """A 2-D or 3-D pool strided along its first spatial axis runs one output slice (a row, a
        depth slice) per block (POOL.depth-slices): its offset along that axis is then a scalar in
        each tap's view, never a gather. 3-D: 0.2.0's pass-verify loses its rows at a gather along
        the depth axis of the rank-4 views. 2-D: the gather along the rows is most of the kernel's
        time (KernelBench 45 at (2, 64, 32, 128): the tap kernel 4136.7 -> 402.1 us SIM; the pack's
        ops.toml [op.avg_pool] holds the measurement)."""
        return self.strategy == "pool-taps" and self.nd >= 2 and self.axes[0].step > 1 and not self.phases(0)

    def phases(self, i: int) -> bool:
        """Whether the pre kernel stores axis i split by stride phase (POOL.phase-split): prepared
        position q at (q % S) * ceil(Q / S) + q // S, so every tap's window along the axis is one
        contiguous view of the output's extent and the pool kernel gathers nothing; the pre kernel
        gathers each phase once. Every strided axis of a pool with a constant divisor (a count map
        reads positions in the plain layout) that takes no band (POOL.band-matmul): in 3-D the axes
        after the first (the first is a scalar offset per output slice, POOL.depth-slices: 0.2.0's
        pass-verify lost rows at a gather along the depth of rank-4 views), in 2-D both, so a block
        of many output rows reads plain views (with W alone split, one output row per iteration left
        each tap a single row of OW positions: KernelBench 45 at (2, 64, 32, 128) 408 -> 622 us)."""
        if self.strategy != "pool-taps" or self.axes[i].step <= 1 or self.nd == 1:
            return False
        if not (self.spec.kind == "max_pool" or self.divisor is not None) or self.band_matmul:
            return False
        return i >= 1 or self.nd == 2

    def gathers(self, i: int) -> bool:
        """Whether the kernel takes axis i's stride with a gather (CONV.stride-view): every strided
        axis but a depth slice's, whose offset is a scalar (POOL.depth-slices), a phase-split one's
        (POOL.phase-split), a banded pool's (POOL.band-matmul: the band takes W's stride) and a conv's
        over phase planes (CONV.flat-phases: the pre kernel gathers each phase once)."""
        return (self.axes[i].step > 1 and not (i == 0 and self.depth_slices) and not self.phases(i)
                and not self.band_matmul and not self.phase_planes)

    @property
    def phase_planes(self) -> bool:
        """A strided conv read flat over its stride phases (CONV.flat-phases, flat_phased)."""
        return self.strategy == "im2col" and self.flat and any(a.step > 1 for a in self.axes)

    @property
    def phase_lengths(self) -> tuple[int, ...]:
        """Positions per axis of one phase plane (CONV.flat-phases): the output's count plus the taps'
        reach in phase positions, out + dilation*(kernel - 1) // stride; the prepared extent holds
        stride x that (it reaches out*stride + dilation*(kernel - 1)); the last axis's is rounded up
        to whole 32-byte blocks, and its prepared extent with it (plan_window)."""
        lengths = [a.out + a.dilation * (a.kernel - 1) // a.step for a in self.axes]
        align = self.limits.align_elements  # a row of the phase planes: whole 32-byte blocks, so any block
        lengths[-1] = math.ceil(lengths[-1] / align) * align  # of rows is an aligned tile's run
        return tuple(lengths)

    @property
    def flat_pitch(self) -> int:
        """The row pitch of the planes a flat form reads: a phase plane's width (CONV.flat-phases), else
        the prepared width (CONV.flat-taps)."""
        return self.phase_lengths[-1] if self.phase_planes else self.axes[-1].prepared

    def phase_multiple(self, i: int) -> int:
        """What axis i's phase length is a multiple of (POOL.phase-split; see phase_multiple)."""
        return phase_multiple(self.axes[i].step, i == self.nd - 1, self.limits.align_elements)

    def view_extent(self, i: int) -> int:
        """Axis i's extent in one tap's window view: the output's count on a phase-split axis, else
        out * step (the stride is gathered from the view)."""
        return self.axes[i].out if self.phases(i) else self.axes[i].view

    @property
    def rows(self) -> int:
        """Output rows per item: the first spatial axis (the loop cuts it into blocks)."""
        return self.axes[0].out

    @property
    def row_unit(self) -> int:
        """Output positions per row: the product of the other spatial axes (1 for a 1-D op)."""
        return math.prod(a.out for a in self.axes[1:])

    @property
    def repeat(self) -> int:
        """Items: every block of rows repeats for each (image, group) or (image, channel block); a
        pool's blocks of planes (POOL.plane-blocks) span images, the last one shifted back."""
        if self.plane_blocks:
            return math.ceil(self.spec.batch * self.spec.in_channels / self.channels_per_item)
        return self.spec.batch * self.items_per_image

    @property
    def matmul(self) -> tuple[int, int, int] | None:
        """(M, K, N) of the implicit matmul for one image and group (im2col only)."""
        if self.strategy != "im2col":
            return None
        s = self.spec
        return (s.out_per_group, s.in_per_group * self.taps, self.column_positions)

    @property
    def pointwise_matmul(self) -> tuple[int, int, int] | None:
        """(M, K, N) of the pointwise stage's matmul for one image (all its output positions)."""
        p = self.spec.pointwise
        if p is None:
            return None
        return (p.out_channels, p.in_channels, self.rows * self.row_unit)

    @property
    def column_positions(self) -> int:
        """Columns of one image and group: its output positions, or on flat planes (CONV.flat-taps,
        CONV.flat-phases) the span a tap's view covers, every row but the last at the planes' pitch
        (the positions past a row's end are computed and never stored), which is what the kernel's
        columns and its matmul's N hold."""
        if self.strategy == "im2col" and self.flat and self.nd == 2:
            return (self.rows - 1) * self.flat_pitch + self.row_unit
        return self.rows * self.row_unit

    @property
    def column_elements(self) -> int:
        """The column buffer of one image and group (im2col), or one item's window stack."""
        return self.channels_per_item * self.taps * self.column_positions

    @property
    def row_elements(self) -> int:
        """Elements of the largest window view per output row (the tap-reduction strategies)."""
        return self.axes[0].step * math.prod(self.view_extent(i) for i in range(1, self.nd))

    @property
    def divisor(self) -> float | None:
        """The average pool's constant divisor, or None when it varies per position (a count map)."""
        s = self.spec
        if s.kind != "avg_pool":
            return None
        if s.divisor_override:
            return float(s.divisor_override)
        constant = True
        for a, (lo, hi) in zip(self.axes, s.padding, strict=True):
            last_end = (a.out - 1) * a.step + a.kernel  # in padded coordinates
            if not s.count_include_pad and (lo > 0 or hi > 0):
                constant = False
            if last_end > a.size + lo + hi:
                constant = False
        return float(s.taps) if constant else None

    # ------------------------------------------------------------------ words
    def strategy_text(self) -> str:
        s = self.spec
        if self.strategy == "im2col" and s.transposed:
            ins = [a.insert for a in self.axes]
            how = (f"zero insertion (stride {tuple(ins)}: {tuple(i - 1 for i in ins)} zero(s) between inputs), "
                   "then a stride-1 conv with the taps reversed and each group's weights transposed")
            return f"transposed conv as im2col: {how}"
        if self.strategy == "im2col" and self.phase_planes:
            return ("implicit matmul on flat stride-phase planes: a pre kernel stores each stride phase of the padded "
                    "planes as a plane of its own; per block of rows, one contiguous view per tap of its phase's plane "
                    "read flat, stacked, one matmul per image and group, each output row stored from it")
        if self.strategy == "im2col" and self.flat:
            return ("implicit matmul on flat planes: per block of rows, one contiguous view per tap of the planes "
                    "read as rows of H*W, stacked, one matmul per image and group, each output row stored from it")
        if self.strategy == "im2col":
            return "im2col: one window view per tap, stacked, then one matmul per image and group"
        if self.strategy == "depthwise-taps" and s.pointwise:
            return ("depthwise-separable: a sum over the taps of window x per-channel weight (vector ops), then "
                    "the pointwise conv as one matmul per image and block of rows")
        if self.strategy == "depthwise-taps" and self.flat:
            return ("depthwise on flat planes: per image and block of rows, a sum over the taps of one contiguous "
                    "view of all the image's planes read as rows of H*W x the channels' tap weights (vector ops), "
                    "each output row stored from it")
        if self.strategy == "depthwise-taps":
            return "depthwise: a sum over the taps of window x per-channel weight (vector ops, no matmul)"
        if self.band_matmul:
            return (f"pooling by a band matmul: each input row times a ({self.axes[1].size} x {self.band_width}) band "
                    f"on the cube takes W's {s.kernel[1]} taps and the divisor, then a sum of {s.kernel[0]} plain row "
                    "views takes H's")
        op = "max" if s.kind == "max_pool" else "sum"
        return f"pooling by taps: a {op} over the window's {self.taps} taps, each one strided view of the input"

    def rows_table(self) -> list[tuple[str, str]]:
        """The plan as labelled lines (the Dimensions step and `contract` show them)."""
        s = self.spec
        n = s.batch
        out: list[tuple[str, str]] = [("strategy", self.strategy_text())]
        out.append(("output size", "; ".join(s.size_formulas())))
        if self.matmul is not None:
            M, K, N = self.matmul
            k_txt = "x".join(str(k) for k in s.kernel)
            positions = f"{' * '.join(str(a.out) for a in self.axes)} output positions"
            if N != self.rows * self.row_unit:  # flat planes: whole rows at the pitch, the tail of each dropped
                positions = (f"({self.rows} - 1) * {self.flat_pitch} + {self.row_unit} positions, rows at the planes' "
                             f"pitch of {self.flat_pitch} (the {self.flat_pitch - self.row_unit} past each row's end "
                             "are computed and never stored)")
            out.append(("implicit matmul",
                        f"per image and group: W ({M} x {K}) @ columns ({K} x {N}); "
                        f"{M} = OC/G = {s.out_channels}/{s.groups}, {K} = C/G*prod(K) = {s.in_per_group}*{k_txt}, "
                        f"{N} = {positions}; {n * s.groups} such matmul(s)"))
            b = self.column_elements * 4
            out.append(("column buffer", f"{self.column_elements} elements ({_bytes(b)}) per image and group, "
                                         f"{_bytes(b * n * s.groups)} for the whole batch: built block by block"))
        else:
            out.append(("tap reduction", f"{self.taps} tap(s) ({'x'.join(map(str, s.kernel))}); "
                                         f"{self.channels_per_item} channel(s) per item"))
        prep = []
        for name, a in zip(s.axis_names(), self.axes, strict=True):
            parts = [f"{a.lo} + {a.size}" + (f"x{a.insert}" if a.insert > 1 else "") + f" + {a.hi} = {a.prepared}"]
            if a.base:
                parts.append(f"windows start at {a.base}")
            prep.append(f"{name}: {', '.join(parts)}")
        fill = "-inf" if self.fill == float("-inf") else "zeros"
        out.append(("prepared input", ("a pre kernel pads with " + fill + ": " if self.prepare else
                                       "the input as it is (no padding needed): ") + "; ".join(prep)))
        per_item = ("group(s)" if self.strategy == "im2col" else f"item(s) of all {self.channels_per_item} planes"
                    if self.flat else "channel(s), one plane per item")
        items = f"{self.repeat} = {n} image(s) x {self.items_per_image} " + per_item
        if self.plane_blocks:
            items = (f"{self.repeat} = ceil({n} image(s) x {s.in_channels} channel(s) / {self.channels_per_item}): "
                     f"blocks of {self.channels_per_item} planes (POOL.plane-blocks)")
        out.append(("items", items + f"; each item's {self.rows} output row(s) of {self.row_unit} position(s) are "
                                     "cut into blocks by the loop"))
        if s.pointwise:
            p = s.pointwise
            out.append(("pointwise stage",
                        f"self.{p.attr}: per image and block of rows, W2 ({p.out_channels} x {p.in_channels}) @ "
                        f"the first conv's output ({p.in_channels} x positions), "
                        f"{n} matmul(s) of {self.rows * self.row_unit} position(s) each, in a second kernel "
                        "(CONV.pointwise-stage)"))
        if s.kind == "avg_pool":
            d = self.divisor
            out.append(("divisor", f"{d:g} (every window counts {'its padding' if s.count_include_pad else 'fully'})"
                        if d is not None else "per position: a count map (count_include_pad=False or ceil_mode "
                                              "windows past the padding)"))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "kind": self.spec.kind, "nd": self.nd, "taps": self.taps,
            "matmul": list(self.matmul) if self.matmul else None, "column_elements": self.column_elements,
            "pointwise_matmul": list(self.pointwise_matmul) if self.pointwise_matmul else None,
            "channels_per_item": self.channels_per_item, "items_per_image": self.items_per_image,
            "repeat": self.repeat, "rows": self.rows, "row_unit": self.row_unit, "prepare": self.prepare,
            "flat": self.flat,
            "fill": "-inf" if self.fill == float("-inf") else 0.0, "divisor": self.divisor,
            "axes": [{"size": a.size, "out": a.out, "kernel": a.kernel, "step": a.step, "dilation": a.dilation,
                      "insert": a.insert, "lo": a.lo, "hi": a.hi, "base": a.base, "prepared": a.prepared}
                     for a in self.axes],
            "lines": [list(r) for r in self.rows_table()],
        }


def _bytes(b: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b} B"




def phase_multiple(stride: int, last: bool, align: int) -> int:
    """What a phase's length is a multiple of (POOL.phase-split): on the last axis, so that the
    stride's phases together (stride x length) fill whole 32-byte blocks, and the pre kernel's tile,
    which takes that axis whole, has an aligned last dim."""
    return align // math.gcd(stride, align) if last else 1


def phase_length(prepared: int, stride: int, last: bool, align: int) -> int:
    """Positions per phase of a phase-split axis of `prepared` padded positions."""
    m = phase_multiple(stride, last, align)
    per_phase = math.ceil(prepared / stride)
    return math.ceil(per_phase / m) * m


def flat_taps(spec: WindowSpec) -> bool:
    """Whether a conv takes the flat-plane form (CONV.flat-taps): a 2-D conv with stride 1 on both
    axes, not transposed. With stride 1, output row r, column o of tap (i, j) reads flat position
    (r + i*DH)*QW + o + j*DW of its plane, so one tap's window over a block of rows is one contiguous
    view of ROWS*QW - (QW - OW) positions (the QW - OW positions past each row's end are computed and
    never stored). Measured on KernelBench 63 at x=(2, 16, 64, 64): 87.75 -> 47.86 us SIM, every pass
    PASS (benchmarks/probes/conv_implicit). A stride would make the view strided again: a strided 2-D
    conv reads its stride phases as planes of their own instead (flat_phased); a 1-D or 3-D conv and a
    transposed conv keep im2col (not measured in this form).

    A depthwise conv (CONV.depthwise-flat) takes the same views for its tap sum, all of an image's
    planes per item; its depthwise-separable form keeps the plane views (its pointwise stage reads
    the first kernel's output as it is written today; not measured in this form)."""
    return spec.is_conv and spec.nd == 2 and not spec.transposed and all(s == 1 for s in spec.stride) and \
        not (spec.depthwise and spec.pointwise)


def flat_phased(spec: WindowSpec, limits: WindowLimits) -> bool:
    """Whether a strided conv takes the flat-plane form over its stride phases (CONV.flat-phases): a
    2-D conv (not transposed, not depthwise) strided on some axis. A pre kernel stores each stride
    phase (a, b) of the padded planes as its own plane (PH x PW), so tap (i, j) reads phase (i*DH % SH,
    j*DW % SW) at row i*DH // SH, column j*DW // SW, and its window over a block of rows is one
    contiguous view, as a stride-1 conv's (CONV.flat-taps). Measured on KernelBench 50 at (2, 3, 224,
    224) (stride 4, 11 x 11): 227.8 -> 134.9 us SIM, every pass PASS. The gain shrinks as the channels
    per group grow (their windows are long runs for im2col too): up to the pack's phase_planes_channels,
    or one tap (a 1 x 1 downsampling conv gathers a quarter of its input otherwise)."""
    return (spec.is_conv and spec.nd == 2 and not spec.transposed and not spec.depthwise
            and any(s > 1 for s in spec.stride)
            and (spec.in_per_group <= limits.phase_planes_channels or spec.taps == 1))


def default_strategy(spec: WindowSpec) -> str:
    if spec.kind in ("max_pool", "avg_pool"):
        return "pool-taps"
    return "depthwise-taps" if spec.depthwise else "im2col"


def plan_window(spec: WindowSpec, strategy: str | None = None, *, limits: WindowLimits) -> WindowPlan:
    """The plan for `spec` with `strategy` (default: im2col for convs, taps for depthwise and pools),
    its blocks sized by the pack's `limits`.
    Raises ValueError when the strategy cannot compute this op."""
    strategy = strategy or default_strategy(spec)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown window strategy '{strategy}'")
    if spec.kind in ("max_pool", "avg_pool") and strategy != "pool-taps":
        raise ValueError(f"{spec.kind} is computed by the pool-taps strategy")
    if spec.is_conv and strategy == "pool-taps":
        raise ValueError("a conv is computed by im2col (or depthwise taps)")
    if strategy == "depthwise-taps" and not spec.depthwise:
        raise ValueError("the depthwise strategy needs groups == in_channels == out_channels")
    if spec.pointwise and strategy != "depthwise-taps":
        raise ValueError("a depthwise-separable conv is computed by depthwise taps, then its pointwise stage "
                         "(which takes the cube)")
    axes = tuple(_axis(spec, i) for i in range(spec.nd))
    if strategy == "im2col":
        plan = WindowPlan(spec, strategy, axes, spec.in_per_group, spec.groups, limits,
                          flat=flat_taps(spec) or flat_phased(spec, limits))
        if plan.phase_planes:
            # CONV.flat-phases: the padded rows hold stride x the (aligned) phase width, and the phase
            # kernel's tile takes them whole, in whole 32-byte blocks
            last, align = axes[-1], limits.align_elements
            rows = math.ceil(max(last.prepared, last.step * plan.phase_lengths[-1]) / align) * align
            plan = replace(plan, axes=(*axes[:-1], replace(last, prepared=rows)))
        return plan
    if strategy == "depthwise-taps" and flat_taps(spec):
        # CONV.depthwise-flat: the flat views are plain (C, 1, positions) views with no reshape, so an
        # item takes all of an image's planes at once
        return WindowPlan(spec, strategy, axes, spec.in_channels, 1, limits, flat=True)
    # the tap strategies take one channel plane per item: their window views then never merge channels
    # with rows, which 0.2.0 tiles by copying whole blocks (CONV.window-tile)
    plan = WindowPlan(spec, strategy, axes, 1, spec.in_channels, limits)
    if any(plan.phases(i) for i in range(spec.nd)):
        # a phase-split axis holds S phases of ceil(Q / S) positions each (POOL.phase-split)
        rounded = tuple(replace(a, prepared=a.step * phase_length(a.prepared, a.step, i == spec.nd - 1,
                                                                  limits.align_elements))
                        if plan.phases(i) else a for i, a in enumerate(axes))
        plan = replace(plan, axes=rounded)
    if plan.plane_blocks:
        plan = replace(plan, channels_per_item=pool_planes(plan))
    return plan


def pool_planes(plan: WindowPlan) -> int:
    """Planes per item of a pool (POOL.plane-blocks): up to the pack's pool_planes of the N*C planes (a
    block spans images: the kernel sees N*C planes), and no more than prepare_elements prepared elements,
    as the pre kernel's blocks: a large plane has work enough on its own, and a block of them would
    need test shapes past the verify limit to keep the design (KernelBench 43 at its own shape: 5.7 M
    elements against 0.7 M). A banded pool's planes are its banded rows (QH x OWP). A count map (1,
    OH, OW) is per plane: one plane per item."""
    plane = plan.axes[0].prepared * plan.band_width if plan.band_matmul else math.prod(a.prepared for a in plan.axes)
    lim = plan.limits
    return max(1, min(lim.pool_planes, plan.spec.batch * plan.spec.in_channels, lim.prepare_elements // plane))
