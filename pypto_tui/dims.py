"""The dimension plan (rules P1-P3, O3): kernel rank and the reshapes `forward` does around the call.

The strategy comes from the pack's rank-strategy table (strategies.toml), matched on the
contract's family, op and whether the reduction spans several axes; the code only knows the
*reshape vocabulary* (flatten, keep, groups, batch_channel_rest, rows, merge_reduce, matmul). A
reshape is applied only when it keeps the contract: every kernel axis must group original axes
of one role (kept, reduced per sample, reduced across samples), so flattening a softmax or
merging non-adjacent reduce axes is refused with the reason. A user may pick another strategy;
the findings then say which rule the choice breaks.

No libcst here: the one-shot `tile`/`loop` commands import this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from pypto_tui.contract.model import Contract, norm_axes
from pypto_tui.errors import InputError
from pypto_tui.examples import StrategyRef, Task, ex, examples
from pypto_tui.findings import Finding, cites, rule_finding
from pypto_tui.kb import KnowledgeBase, Strategy
from pypto_tui.ops.roles import traits
from pypto_tui.shapes import fmt_dims

if TYPE_CHECKING:
    from pypto_tui.window import WindowPlan

Shape = tuple[int, ...]
MERGEABLE = ("sum", "nansum", "mean", "max", "min", "amax", "amin", "prod", "logsumexp", "var", "std")


@dataclass
class DimPlan:
    """How the forward reshapes the inputs, and what the kernel sees.

    `axis_map[k]` lists the original axes (of the first operand) that kernel axis k covers;
    `merged_axes` are the entries that cover more than one. `reduce_axis` is the kernel axis to
    reduce (for two-phase losses the per-sample one; for BatchNorm the innermost of `reduce_axes`).
    """

    strategy: str | None
    reshape: str | None
    kernel_rank: int | None
    forward_reshape: list[Shape | None] = field(default_factory=list)
    kernel_shapes: list[Shape] = field(default_factory=list)
    output_kernel_shape: Shape | None = None
    output_reshape: Shape | None = None
    reduce_axis: int | None = None
    reduce_axes: list[int] = field(default_factory=list)
    axis_map: list[list[int]] = field(default_factory=list)
    merged_axes: list[list[int]] = field(default_factory=list)
    merge_reason: str = ""
    alternatives: list[str] = field(default_factory=list)
    dtype: str | None = None
    matmul: dict[str, Any] | None = None
    rule: str | None = None
    note: str = ""
    findings: list[Finding] = field(default_factory=list)
    # an elementwise expression whose operands broadcast: each operand's kernel shape (size 1 where
    # it is widened) by operand name, and the output's shape before the kernel axes merged it
    broadcast: dict[str, Any] | None = None
    # a conv's or pool's im2col plan (pypto_tui.window), made once here with the layout that needs it:
    # the pattern's needs and its code read this one, never plan it again (not in the JSON: its
    # layout lines are, through the pattern's Needs)
    window: WindowPlan | None = field(default=None, compare=False)

    @property
    def shape(self) -> Shape | None:
        """The main kernel input shape (what `tile`/`loop` take as --shape)."""
        return self.kernel_shapes[0] if self.kernel_shapes else None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "reshape": self.reshape, "kernel_rank": self.kernel_rank,
            "forward_reshape": [list(s) if s is not None else None for s in self.forward_reshape],
            "kernel_shapes": [list(s) for s in self.kernel_shapes],
            "output_kernel_shape": list(self.output_kernel_shape) if self.output_kernel_shape is not None else None,
            "output_reshape": list(self.output_reshape) if self.output_reshape is not None else None,
            "reduce_axis": self.reduce_axis, "reduce_axes": list(self.reduce_axes),
            "merged_axes": [list(m) for m in self.merged_axes], "merge_reason": self.merge_reason,
            "axis_map": [list(m) for m in self.axis_map], "alternatives": list(self.alternatives),
            "dtype": self.dtype, "matmul": self.matmul, "rule": self.rule, "note": self.note,
            "findings": [f.to_dict() for f in self.findings],
            **({"broadcast": self.broadcast} if self.broadcast is not None else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        return self.to_json_dict()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DimPlan:
        def shp(v: Any) -> Shape | None:
            return None if v is None else tuple(int(x) for x in v)

        return cls(
            strategy=d.get("strategy"), reshape=d.get("reshape"), kernel_rank=d.get("kernel_rank"),
            forward_reshape=[shp(s) for s in d.get("forward_reshape", [])],
            kernel_shapes=[shp(s) or () for s in d.get("kernel_shapes", [])],
            output_kernel_shape=shp(d.get("output_kernel_shape")), output_reshape=shp(d.get("output_reshape")),
            reduce_axis=d.get("reduce_axis"), reduce_axes=list(d.get("reduce_axes", [])),
            axis_map=[list(m) for m in d.get("axis_map", [])], merged_axes=[list(m) for m in d.get("merged_axes", [])],
            merge_reason=d.get("merge_reason", ""), alternatives=list(d.get("alternatives", [])),
            dtype=d.get("dtype"), matmul=d.get("matmul"), rule=d.get("rule"), note=d.get("note", ""),
            findings=[Finding(**f) for f in d.get("findings", [])], broadcast=d.get("broadcast"),
        )


class _NotApplicable(Exception):
    """This reshape would change what the contract computes (the message says how)."""


@dataclass
class _Layout:
    kernel_shapes: list[Shape]
    forward_reshape: list[Shape | None]
    axis_map: list[list[int]]
    reduce_axes: list[int]
    reduce_axis: int | None
    output_kernel_shape: Shape | None
    matmul: dict[str, Any] | None = None
    merge_reason: str = ""
    broadcast: dict[str, Any] | None = None
    window: WindowPlan | None = None


# ================================================================================ roles
def _roles(c: Contract, rank: int) -> list[str]:
    """Per original axis: kept | outer (reduced across samples) | inner (reduced per sample)."""
    roles = ["kept"] * rank
    r = c.reduction
    if r is None:
        return roles
    for a in r.axes:
        if 0 <= a < rank:
            roles[a] = "outer" if r.inner_axes else "reduced"
    for a in r.inner_axes:
        if 0 <= a < rank:
            roles[a] = "inner"
    if c.op == "group_norm" and rank > 1:
        g = c.op_args.get("num_groups")
        if isinstance(g, int) and g > 1:
            roles[1] = "split"  # the channel axis is cut between samples' groups and their statistics
    return roles


def _check_groups(axis_map: Sequence[Sequence[int]], roles: Sequence[str], what: str) -> None:
    if "split" in roles:
        raise _NotApplicable(f"{what} cannot express groups: the channel axis is split between the rows "
                             "and the statistics (use the groups reshape)")
    for group in axis_map:
        kinds = {roles[a] for a in group}
        if len(kinds) > 1:
            axes = ", ".join(str(a) for a in group)
            raise _NotApplicable(f"{what} would merge axes {axes}, which play different roles "
                                 f"({', '.join(roles[a] for a in group)}): the result would change")


def _kernel_reduce(axis_map: Sequence[Sequence[int]], roles: Sequence[str]) -> list[int]:
    return [k for k, group in enumerate(axis_map) if group and roles[group[0]] != "kept"]


def _primary_reduce(axis_map: Sequence[Sequence[int]], roles: Sequence[str]) -> int | None:
    """The kernel axis to reduce first: the per-sample one, else the innermost reduced one."""
    inner = [k for k, g in enumerate(axis_map) if g and roles[g[0]] == "inner"]
    if inner:
        return inner[-1]
    red = _kernel_reduce(axis_map, roles)
    return red[-1] if red else None


def _shape_of(shape: Shape, axis_map: Sequence[Sequence[int]]) -> Shape:
    return tuple(math.prod(shape[a] for a in group) for group in axis_map)


def _output_kernel(c: Contract, kernel: Shape, axis_map: Sequence[Sequence[int]], roles: Sequence[str]) -> Shape:
    """The kernel's output in the kernel's own layout."""
    out = c.output_shape
    if out is None:
        return kernel
    if traits(c.family).output_keeps_rank:  # a scan keeps its rank; an exclusive scan's axis grows by its zero slice
        return tuple(out)
    if math.prod(out) == math.prod(kernel) and traits(c.family).output_in_kernel_layout:
        return kernel
    if not out:
        return (1,)
    red = set(_kernel_reduce(axis_map, roles))
    keep = c.reduction.keepdim if c.reduction else False
    shaped = tuple((1 if k in red else s) for k, s in enumerate(kernel)) if keep else tuple(
        s for k, s in enumerate(kernel) if k not in red)
    if keep and len(out) == len(kernel) and math.prod(out) != math.prod(shaped):
        return tuple(out)  # the reduced axis keeps several values (topk's k): the contract's own shape
    return shaped or (1,)


# ================================================================================ reshapes
def _same_shapes(c: Contract) -> Shape:
    shapes = [t.shape for t in c.operands]
    if any(s is None for s in shapes):
        raise _NotApplicable("an input shape is unknown")
    first = shapes[0] or ()
    if any(s != first for s in shapes[1:]):
        raise _NotApplicable(f"the inputs have different shapes {shapes}: a reshape would break broadcasting")
    return first


def _apply(c: Contract, axis_map: list[list[int]], what: str) -> _Layout:
    shape = _same_shapes(c)
    roles = _roles(c, len(shape))
    _check_groups(axis_map, roles, what)
    kernel = _shape_of(shape, axis_map)
    fwd: list[Shape | None] = [(kernel if kernel != shape else None) if t.is_tensor else None for t in c.inputs]
    return _Layout([kernel] * len(c.tensor_inputs), fwd, axis_map, _kernel_reduce(axis_map, roles),
                   _primary_reduce(axis_map, roles), _output_kernel(c, kernel, axis_map, roles))


def _row_local(c: Contract) -> bool:
    """Does the expression call a kind that mixes positions along the last axis (rotate_half)?"""
    from pypto_tui.contract import ir
    from pypto_tui.ops import kind

    data = c.op_args.get("expr")
    if data is None:
        return False
    for n in ir.from_data(data).walk():
        k = kind(n.name) if n.kind == "call" else None
        if k is not None and k.row_local:
            return True
    return False


def _flatten(c: Contract) -> _Layout:
    row_local = _row_local(c)
    if traits(c.family).broadcasts and (c.op_args.get("views") is not None or _shapes_differ(c) or row_local):
        return _broadcast_groups(c, keep_last=row_local)
    shape = _same_shapes(c)
    return _apply(c, [list(range(len(shape)))], "flattening")


def _shapes_differ(c: Contract) -> bool:
    shapes = [t.shape for t in c.operands]
    return None not in shapes and len({tuple(s or ()) for s in shapes}) > 1


def broadcast_operands(c: Contract) -> tuple[dict[str, Shape], list[Shape]]:
    """The kernel operands' shapes by operand name (each view leaf by its id, each input the
    expression reads without a view), before any expand; and the shapes the output broadcasts
    from (after the expands)."""
    from pypto_tui.contract import ir
    from pypto_tui.contract import views as V

    known = {t.name: tuple(t.shape) for t in c.tensor_inputs if t.shape is not None}
    if "expr" not in c.op_args:
        plain = {t.name: known[t.name] for t in c.operands if t.name in known}
        return plain, list(plain.values())
    try:
        tree, found = V.leaves(ir.from_data(_thaw(c.op_args["expr"])), known)
    except V.NotAView as exc:
        raise _NotApplicable(str(exc)) from None
    out = {leaf.id: leaf.shape for leaf in found if leaf.steps}
    for x in ir.inputs_of(tree):
        if x in known:
            out[x] = known[x]
    return out, [leaf.broadcast_shape for leaf in found] + list(out.values())


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    return value


def _broadcast_groups(c: Contract, keep_last: bool = False) -> _Layout:
    """An elementwise expression whose operands broadcast (`A.unsqueeze(1) * B`): the output's axes
    merged into as few kernel axes as keep every operand either whole or of size 1 on each of them.
    pypto widens one axis at a time, so the kernel widens each operand axis by axis; with every
    operand whole this is the 1-D flattening. `keep_last`: the last axis is a kernel axis of its own
    (an expression with a row-local kind such as rotate_half reads across it)."""
    from pypto_tui.ops.base import OpError, broadcast

    operands, widened = broadcast_operands(c)
    try:
        out = broadcast(widened)
    except OpError as exc:
        raise _NotApplicable(str(exc)) from None
    rank = len(out)
    padded = {k: (1,) * (rank - len(s)) + tuple(s) for k, s in operands.items()}
    groups: list[list[int]] = []
    last: tuple[bool, ...] | None = None
    for i in range(rank):
        if out[i] == 1 and groups:
            groups[-1].append(i)
            continue
        status = tuple(p[i] == out[i] for p in padded.values())
        if groups and status == last and not (keep_last and i == rank - 1):
            groups[-1].append(i)
        else:
            groups.append([i])
            last = status
    if not groups:
        groups = [[]]
    kernel = tuple(math.prod(out[a] for a in g) for g in groups)
    shapes = {k: tuple(math.prod(p[a] for a in g) for g in groups) for k, p in padded.items()}
    fwd: list[Shape | None] = [None] * len(c.inputs)
    return _Layout([kernel], fwd, groups, [], None, kernel,
                   broadcast={"operands": {k: list(v) for k, v in shapes.items()}, "output": list(out)})


def _keep(c: Contract) -> _Layout:
    if traits(c.family).operand_layout:
        return _matmul(c)
    shapes = [t.shape for t in c.operands]
    if any(s is None for s in shapes):
        raise _NotApplicable("an input shape is unknown")
    shape = shapes[0] or ()
    roles = _roles(c, len(shape))
    axis_map = [[a] for a in range(len(shape))]
    kernel_shapes = [t.shape or () for t in c.tensor_inputs]
    return _Layout(kernel_shapes, [None] * len(c.inputs), axis_map, _kernel_reduce(axis_map, roles),
                   _primary_reduce(axis_map, roles), _output_kernel(c, shape, axis_map, roles))


def _merge_kept(c: Contract) -> _Layout:
    """The keep layout with each run of adjacent kept axes merged into one: a softmax over the
    channels of (B, C, D, H, W) runs on (B, C, D*H*W), which a vec tile of 4 dims can tile (the
    reduced axis and the order of every element along it are unchanged)."""
    shape = _same_shapes(c)
    roles = _roles(c, len(shape))
    axis_map: list[list[int]] = []
    for a, role in enumerate(roles):
        if axis_map and role == "kept" and roles[axis_map[-1][-1]] == "kept":
            axis_map[-1].append(a)
        else:
            axis_map.append([a])
    return _apply(c, axis_map, "merging the kept axes")


def _groups(c: Contract) -> _Layout:
    shape = _same_shapes(c)
    if c.op not in ("group_norm", "instance_norm") or len(shape) < 2:
        raise _NotApplicable("the group reshape (N*G, C/G*rest) is for GroupNorm and InstanceNorm")
    channels = shape[1]
    g = channels if c.op == "instance_norm" else c.op_args.get("num_groups")
    if not isinstance(g, int) or g <= 0 or channels % g:
        raise _NotApplicable(f"{channels} channels do not split into {g} groups")
    kernel = (shape[0] * g, channels // g * math.prod(shape[2:]))
    # GroupNorm splits C between the two kernel axes (G goes to the rows, C/G to the hidden axis).
    rest = list(range(2, len(shape)))
    axis_map = [[0, 1], rest] if c.op == "instance_norm" else [[0, 1], [1, *rest]]
    fwd: list[Shape | None] = [kernel if t.is_tensor else None for t in c.inputs]
    return _Layout([kernel] * len(c.tensor_inputs), fwd, axis_map, [1], 1, kernel)


def _batch_channel_rest(c: Contract) -> _Layout:
    shape = _same_shapes(c)
    if len(shape) < 3:
        return _keep(c)
    return _apply(c, [[0], [1], list(range(2, len(shape)))], "the (B, C, rest) reshape")


def _rows(c: Contract) -> _Layout:
    shape = _same_shapes(c)
    rank = len(shape)
    r = c.reduction
    if r is None:
        raise _NotApplicable("the rows reshape needs a reduction over the trailing axes")
    trailing = tuple(r.inner_axes) or tuple(r.axes)
    if not trailing or trailing != tuple(range(rank - len(trailing), rank)):
        raise _NotApplicable(f"the reduced axes {list(trailing)} are not the trailing axes of a rank-{rank} input")
    lead = list(range(rank - len(trailing)))
    if not lead:
        raise _NotApplicable("every axis is reduced: there are no rows to keep (flatten instead)")
    axis_map = [lead, list(trailing)]
    roles = _roles(c, rank)
    _check_groups(axis_map, roles, "the rows reshape")
    kernel = (math.prod(shape[a] for a in lead), math.prod(shape[a] for a in trailing))
    fwd: list[Shape | None] = [(kernel if kernel != shape else None) if t.is_tensor else None for t in c.inputs]
    red = [k for k, g in enumerate(axis_map) if roles[g[0]] != "kept"]
    return _Layout([kernel] * len(c.tensor_inputs), fwd, axis_map, red, 1,
                   _output_kernel(c, kernel, axis_map, roles))


def merge_conditions(c: Contract) -> tuple[bool, str]:
    """O3's three conditions for merging the reduce axes into one: (safe, reason)."""
    r = c.reduction
    if r is None or len(r.axes) < 2:
        return False, "not a multi-axis reduction: nothing to merge"
    axes = sorted(r.axes)
    if axes != list(range(axes[0], axes[-1] + 1)):
        return False, (f"axes {axes} are not adjacent: merging them needs a permutation, not a reshape "
                       "(O3 condition 1)")
    if not traits(c.family).merges_reduce_axes or c.op_args.get("fused") or c.op_args.get("operand_expr"):
        return False, "the partial reductions feed other computations (O3 condition 2)"
    if (c.op or r.op) not in MERGEABLE:
        return False, (f"{c.op} over merged axes would change its result (an index into the merged axis is "
                       "not an index into the original ones) (O3 condition 3)")
    shape = c.operands[0].shape if c.operands else None
    size = math.prod(shape[a] for a in axes) if shape else "?"
    return True, (f"axes {axes} are adjacent, no partial result is used elsewhere, and {c.op} over the merged "
                  f"axis of size {size} has the same definition, scaling ({r.scaling}) and output shape "
                  f"{c.output_shape}")


def _merge_reduce(c: Contract) -> _Layout:
    ok, reason = merge_conditions(c)
    if not ok:
        raise _NotApplicable(reason)
    shape = _same_shapes(c)
    assert c.reduction is not None
    axes = sorted(c.reduction.axes)
    axis_map: list[list[int]] = []
    for a in range(len(shape)):
        if a in axes[1:]:
            continue
        axis_map.append(list(axes) if a == axes[0] else [a])
    layout = _apply(c, axis_map, "merging the reduce axes")
    layout.merge_reason = reason
    return layout


def _matmul(c: Contract) -> _Layout:
    if c.op == "diag_matmul":
        return _diag_scaling(c)
    if not traits(c.family).operand_layout or c.op not in ("matmul", "bmm") or len(c.operands) < 2:
        raise _NotApplicable("the matmul layout is for matmul and bmm")
    A, B = c.operands[0], c.operands[1]
    if A.shape is None or B.shape is None:
        raise _NotApplicable("an input shape is unknown")
    sa, sb = A.shape, B.shape
    ta, tb = bool(c.op_args.get("transpose_a")), bool(c.op_args.get("transpose_b"))
    fwd: dict[str, Shape | None] = {A.name: None, B.name: None}
    ka, kb_ = sa, sb
    out_shape = c.output_shape
    if len(sa) >= 3 and len(sb) == 2 and not ta:  # a tensor times a matrix: the leading axes are rows
        ka = (math.prod(sa[:-1]), sa[-1])
        fwd[A.name] = ka
    if len(sb) == 1:
        kb_ = (sb[0], 1)
        fwd[B.name] = kb_
    nd_batch = len(sa) == len(sb) >= 4 and sa[:-2] == sb[:-2]
    if nd_batch:  # (batch, heads, M, K) @ (batch, heads, K, N): the leading axes are one batch
        ka, kb_ = (math.prod(sa[:-2]), *sa[-2:]), (math.prod(sb[:-2]), *sb[-2:])
        fwd[A.name], fwd[B.name] = ka, kb_
    m = ka[-1] if ta else ka[-2]
    k = ka[-2] if ta else ka[-1]
    n = kb_[-2] if tb else kb_[-1]
    if n == 1 and len(ka) == 2 and not ta and not c.op_args.get("post"):
        return _matvec(c, ka, (1, k), m, k)
    batch = ka[0] if len(ka) == 3 else None
    kernel_out: Shape = (batch, m, n) if batch is not None else (m, n)
    info = {"m": m, "k": k, "n": n, "batch": batch, "a_trans": ta, "b_trans": tb}
    shapes = {A.name: ka, B.name: kb_}
    rank = len(ka)
    return _Layout(
        [shapes.get(t.name, t.shape or ()) for t in c.tensor_inputs],
        [fwd.get(t.name) if t.is_tensor else None for t in c.inputs],
        [[a] for a in range(rank)] if ka == sa else
        [list(range(len(sa) - 2)), [len(sa) - 2], [len(sa) - 1]] if nd_batch else
        [list(range(len(sa) - 1)), [len(sa) - 1]], [], None,
        kernel_out if out_shape is None or kernel_out != out_shape else out_shape, info,
    )


def _window(strategy: str) -> Callable[[Contract, KnowledgeBase], _Layout]:
    """Convs and pools (strategies.toml rows with a `window_*` reshape): the kernel sees the input as
    (N*C, *spatial) planes, a 1-D signal as (N*C, 1, L), and writes (N*OC, O0, rest) (1-D: (N*OC, 1, O)).
    Channels of one image are then consecutive planes, so a group's or a block's channels are one
    view; the im2col plan itself (pypto_tui.window) is the pattern's. The layout is why this is here:
    no other reshape keeps the spatial axes apart while merging N and C."""

    def reshape(c: Contract, kb: KnowledgeBase) -> _Layout:
        from pypto_tui.contract.conv import WindowError, window_spec
        from pypto_tui.window import plan_window

        try:
            spec = window_spec(c)
            window = plan_window(spec, strategy, limits=kb.limits.window)
        except (WindowError, ValueError) as exc:
            raise _NotApplicable(str(exc)) from None
        if strategy == "im2col" and (spec.transposed != (c.op or "").startswith("conv_transpose")):
            raise _NotApplicable("mismatched conv kind")
        n, ch, sp = spec.batch, spec.in_channels, spec.spatial
        kernel: Shape = (n * ch, *sp) if spec.nd > 1 else (n * ch, 1, sp[0])
        out = spec.out_spatial
        out_kernel: Shape = (n * spec.out_channels, out[0], math.prod(out[1:])) if spec.nd > 1 else (
            n * spec.out_channels, 1, out[0])
        if strategy == "pool-taps" and spec.nd == 3:  # a 3-D pool keeps its 4-D views to the end
            out_kernel = (n * spec.out_channels, *out)
        fwd: list[Shape | None] = [kernel if t.is_tensor and t.name == c.operands[0].name else None
                                   for t in c.inputs]
        return _Layout([kernel], fwd, [[0, 1], *[[a] for a in range(2, 2 + spec.nd)]], [], None, out_kernel,
                       window=window)

    return reshape


def _transposed_only(c: Contract, kb: KnowledgeBase) -> _Layout:
    if not (c.op or "").startswith("conv_transpose"):
        raise _NotApplicable("zero insertion is the transposed conv's layout")
    return _window("im2col")(c, kb)


def _plain_conv_only(c: Contract, kb: KnowledgeBase) -> _Layout:
    if (c.op or "").startswith("conv_transpose"):
        raise _NotApplicable("a transposed conv needs its zero insertion (conv-transposed-zero-insert)")
    return _window("im2col")(c, kb)
# ---------------------------------------------------------------- more reshapes
def _broadcast_rows(c: Contract) -> _Layout:
    """Two operands where one is the other's trailing dims (hinge's (N, C) predictions and (C,)
    targets): the large one becomes (rows, cols), the small one (1, cols), which the kernel widens
    along one axis (pypto broadcasts one axis at a time)."""
    ops = c.operands
    if len(ops) != 2 or any(o.shape is None for o in ops):
        raise _NotApplicable("the broadcast-rows reshape takes two operands of known shapes")
    shapes = [tuple(o.shape or ()) for o in ops]
    big = 0 if len(shapes[0]) >= len(shapes[1]) else 1
    S, s = shapes[big], shapes[1 - big]
    k = len(s)
    if S == s or k == 0 or k >= len(S) or S[len(S) - k:] != s:
        raise _NotApplicable(f"{shapes[1 - big]} is not the trailing part of {shapes[big]}: no row broadcast")
    rows, cols = math.prod(S[:len(S) - k]), math.prod(s)
    kernel = {ops[big].name: (rows, cols), ops[1 - big].name: (1, cols)}
    axis_map = [list(range(len(S) - k)), list(range(len(S) - k, len(S)))]
    fwd: list[Shape | None] = [kernel[t.name] if t.name in kernel and kernel[t.name] != t.shape else None
                               for t in c.inputs]
    return _Layout([kernel.get(t.name, t.shape or ()) for t in c.tensor_inputs], fwd, axis_map, [0, 1], 1,
                   _output_kernel(c, (rows, cols), axis_map, ["reduced"] * len(S)))


ROW_ELEMENTS = 1024
"""The least a row of `scalar_rows` holds: KernelBench 37's (56, 16, 32, 32) Frobenius norm as rows of its
last axis, (28672, 32), took 53.1 us SIM; as rows of 1024, (896, 1024), 31.9 us (rows of 16384: 31.2)."""


def _scalar_rows(c: Contract) -> _Layout:
    """Operands of one shape reduced to one value (a mean squared error, a Frobenius norm): each as
    (rows, trailing axes), so the kernel sums every row at once and then the column of row sums
    (LOSS.scalar-rows), instead of accumulating one flat axis over a loop. A row is the last axis, or
    as many trailing axes as make ROW_ELEMENTS; a rank-1 operand, or one smaller than a row, flattens."""
    shape = _same_shapes(c)
    if len(shape) < 2:
        raise _NotApplicable("a rank-1 input has no rows: flatten it")
    if c.reduction is not None and len(c.reduction.axes) < len(shape):
        raise _NotApplicable("the rows reshape for one value needs every axis reduced")
    first = len(shape) - 1  # a row is the trailing axes, merged until it holds ROW_ELEMENTS
    while first > 0 and math.prod(shape[first:]) < ROW_ELEMENTS:
        first -= 1
    if first == 0:
        raise _NotApplicable(f"the whole tensor is narrower than a row of {ROW_ELEMENTS} elements: flatten it")
    rows, cols = math.prod(shape[:first]), math.prod(shape[first:])
    kernel = (rows, cols)
    axis_map = [list(range(first)), list(range(first, len(shape)))]
    fwd: list[Shape | None] = [(kernel if kernel != tuple(shape) else None) if t.is_tensor else None
                               for t in c.inputs]
    out = _output_kernel(c, kernel, axis_map, ["reduced"] * len(shape))
    return _Layout([kernel] * len(c.tensor_inputs), fwd, axis_map, [0, 1], 1,
                   (1, 1) if c.output_shape == () else out)  # one value, as the (1, 1) the kernel writes


def _matvec(c: Contract, ka: Shape, row: Shape, m: int, k: int) -> _Layout:
    """A matrix times a vector (N = 1): B as one (1, K) row, so the product is a multiply and a sum
    over K per row of A (MM.matvec-reduce), with no cube (N = 1 has no legal cube tiles)."""
    A, B = c.operands[0], c.operands[1]
    shapes = {A.name: ka, B.name: row}
    fwd = {A.name: None, B.name: row if tuple(B.shape or ()) != row else None}
    return _Layout([shapes.get(t.name, t.shape or ()) for t in c.tensor_inputs],
                   [fwd.get(t.name) if t.is_tensor else None for t in c.inputs], [[0], [1]], [1], 1, (m, 1),
                   {"m": m, "k": k, "n": 1, "batch": None, "a_trans": False, "b_trans": False, "matvec": True})


def _diag_scaling(c: Contract) -> _Layout:
    """diag(a) @ B scales B's rows by a: a becomes a (N, 1) column (A @ diag(b): b a (1, M) row), which
    the kernel widens along one axis; no cube, no diagonal matrix is built (MM.diag-broadcast)."""
    A, B = c.operands[0], c.operands[1]
    if A.shape is None or B.shape is None:
        raise _NotApplicable("an input shape is unknown")
    rows = not (c.op_args.get("diag_b") and not c.op_args.get("diag_a"))
    (vec, vs), (mat, ms) = ((A, A.shape), (B, B.shape)) if rows else ((B, B.shape), (A, A.shape))
    col: Shape = (vs[0], 1) if rows else (1, vs[0])
    shapes = {vec.name: col, mat.name: tuple(ms)}
    return _Layout([shapes[t.name] for t in c.tensor_inputs],
                   [col if t.name == vec.name else None for t in c.inputs],
                   [[0], [1]], [], None, tuple(ms), {"diag_rows": rows})


def _leading_batch(c: Contract) -> _Layout:
    """Every operand (..., S, D) becomes (B, S, D), B the product of the leading axes: attention's
    batch and heads are one batch of independent (S, D) problems (a view in forward, no copy)."""
    shapes = [t.shape for t in c.operands]
    if any(s is None or len(s) < 2 for s in shapes):
        raise _NotApplicable("the leading-batch reshape needs operands of rank >= 2 with known shapes")
    kernel = {t.name: (math.prod((t.shape or ())[:-2]), *(t.shape or ())[-2:]) for t in c.operands}
    first = tuple(shapes[0] or ())
    rank = len(first)
    axis_map = [list(range(rank - 2)), [rank - 2], [rank - 1]] if rank > 2 else [[], [0], [1]]
    out = c.output_shape
    out_kernel: Shape | None = (math.prod(out[:-2]), *out[-2:]) if out is not None and len(out) >= 2 else None
    return _Layout([kernel.get(t.name, t.shape or ()) for t in c.tensor_inputs],
                   [kernel[t.name] if t.name in kernel and kernel[t.name] != t.shape else None for t in c.inputs],
                   axis_map, [], None, out_kernel)


def _concat_rows(c: Contract) -> _Layout:
    """A concatenation along axis d as rows: every part becomes (prod(shape[:d]), prod(shape[d:])), the
    output (rows, sum of the widths), so each part is one contiguous block of every output row and the
    kernel copies it with one view and one assemble per chunk of rows."""
    shapes = [t.shape for t in c.operands]
    if c.op != "cat" or not shapes or any(s is None for s in shapes):
        raise _NotApplicable("the rows layout is for a concatenation of inputs with known shapes")
    first = tuple(shapes[0] or ())
    axes = norm_axes(c.op_args.get("dim", 0), len(first))
    if axes is None:
        raise _NotApplicable(f"dim={c.op_args.get('dim')!r} is not an axis of a rank-{len(first)} input")
    d = axes[0]
    rows = math.prod(first[:d])
    kernel = [(rows, math.prod((s or ())[d:])) for s in shapes]
    by_name = {t.name: k for t, k in zip(c.operands, kernel, strict=True)}
    fwd: list[Shape | None] = [by_name.get(t.name) if t.is_tensor else None for t in c.inputs]
    out = (rows, sum(k[1] for k in kernel))
    return _Layout(list(kernel), fwd, [list(range(d)), list(range(d, len(first)))], [], None, out)


def _take_rows(c: Contract) -> _Layout:
    """An embedding as rows: the index flattened to (n,) positions, the table as (rows, the width of a
    row), the output (n, width): each position picks one contiguous row of the table."""
    shapes = [t.shape for t in c.operands]
    if c.op != "embedding" or len(shapes) != 2 or any(s is None for s in shapes):
        raise _NotApplicable("the take-rows layout is for an index and a table with known shapes")
    index, table = (tuple(s or ()) for s in shapes)
    if len(table) < 2:
        raise _NotApplicable(f"an embedding table has rows: {table} has rank {len(table)}")
    n, width = math.prod(index), math.prod(table[1:])
    kernel = {c.operands[0].name: (n,), c.operands[1].name: (table[0], width)}
    fwd: list[Shape | None] = [kernel.get(t.name) if t.is_tensor else None for t in c.inputs]
    axis_map = [list(range(len(index))), list(range(len(index), len(index) + len(table) - 1))]
    return _Layout([kernel.get(t.name, t.shape or ()) for t in c.tensor_inputs], fwd, axis_map, [], None, (n, width))


def _slice_rows(c: Contract) -> _Layout:
    """x.narrow(d, start, length) as rows: the input becomes (prod(shape[:d]), prod(shape[d:])) and the
    output (the same rows, length x the trailing size), so the part is one contiguous block of every
    input row, at column start x the trailing size: one view and one assemble per chunk of rows."""
    if c.op != "narrow" or len(c.operands) != 1 or c.operands[0].shape is None:
        raise _NotApplicable("the rows layout is for a narrow of one input with a known shape")
    shape = tuple(c.operands[0].shape or ())
    axes = norm_axes(c.op_args.get("dim", 0), len(shape))
    if axes is None:
        raise _NotApplicable(f"dim={c.op_args.get('dim')!r} is not an axis of a rank-{len(shape)} input")
    d = axes[0]
    rows, inner = math.prod(shape[:d]), math.prod(shape[d + 1:])
    kernel = (rows, math.prod(shape[d:]))
    fwd: list[Shape | None] = [kernel if t.is_tensor else None for t in c.inputs]
    return _Layout([kernel], fwd, [list(range(d)), list(range(d, len(shape)))], [], None,
                   (rows, int(c.op_args.get("length", 0)) * inner))


MAX_SWAP_BLOCKS = 64
"""The most blocks a swap of two axes copies per chunk (each one view and one assemble, written out)."""


class SwapBlocks(NamedTuple):
    """A swap of adjacent axes d0, d0 + 1 as block copies: the input is (A, P, Q, R) (the axes before,
    the two swapped, the trailing ones merged), the output (A, Q, P, R). The kernel copies min(P, Q)
    blocks per chunk of A: along P (`by_p`) each block is x[:, p] (Q, R), landing at out[:, :, p]; else
    each is x[:, :, q] (P, R), landing at out[:, q]."""

    A: int
    P: int
    Q: int
    R: int
    by_p: bool

    @property
    def input_kernel(self) -> Shape:
        return (self.A, self.P * self.Q, self.R) if self.by_p else (self.A, self.P, self.Q * self.R)

    @property
    def output_kernel(self) -> Shape:
        return (self.A, self.Q, self.P * self.R) if self.by_p else (self.A, self.Q * self.P, self.R)


def swap_blocks(shape: Shape, d0: int, d1: int) -> SwapBlocks:
    """The block plan of transpose(d0, d1), or _NotApplicable saying why it has none. (Whether the
    trailing rows are long enough to move is the pattern's question: it needs the pack's alignment.)"""
    if d1 != d0 + 1:
        raise _NotApplicable(f"axes {d0} and {d1} are not adjacent: only a swap of neighbouring axes is copied "
                             "in blocks")
    rows = math.prod(shape[d1 + 1:])
    plan = SwapBlocks(math.prod(shape[:d0]), shape[d0], shape[d1], rows, shape[d0] <= shape[d1])
    if rows == 1:  # the last axis moves: one pypto.transpose, no blocks (TRANSPOSE.last-axis)
        return plan._replace(by_p=False)
    if min(plan.P, plan.Q) > MAX_SWAP_BLOCKS:
        raise _NotApplicable(f"{min(plan.P, plan.Q)} blocks per chunk (more than {MAX_SWAP_BLOCKS}): the swap "
                             "has no block copy of a size a kernel writes out")
    return plan


def _swap_layout(c: Contract) -> _Layout:
    """transpose(d0, d0 + 1) laid out for its block copies (SwapBlocks)."""
    if c.op != "transpose" or len(c.operands) != 1 or c.operands[0].shape is None:
        raise _NotApplicable("the block layout is for a transpose of one input with a known shape")
    shape = tuple(c.operands[0].shape or ())
    d0 = int(c.op_args.get("dim0", 0))
    plan = swap_blocks(shape, d0, int(c.op_args.get("dim1", 1)))
    axis_map = ([list(range(d0)), [d0, d0 + 1], list(range(d0 + 2, len(shape)))] if plan.by_p else
                [list(range(d0)), [d0], list(range(d0 + 1, len(shape)))])
    fwd: list[Shape | None] = [plan.input_kernel if t.is_tensor else None for t in c.inputs]
    if plan.R == 1:  # the last axis moves: (A, P, Q) to (A, Q, P) in one pypto.transpose
        return _Layout([(plan.A, plan.P, plan.Q)], fwd, axis_map, [], None, (plan.A, plan.Q, plan.P))
    return _Layout([plan.input_kernel], fwd, axis_map, [], None, plan.output_kernel)


def _pad_rows(c: Contract) -> _Layout:
    """F.pad of one axis d by (before, after) as rows: the input becomes (prod(shape[:d]),
    prod(shape[d:])) and the output (the same rows, (before + n + after) x the trailing size), so each
    input row is one contiguous block of its output row, between two fill blocks. A pad of several
    axes (or a crop) is no one layout: the graph makes it one kernel per axis."""
    from pypto_tui.ops.base import OpError
    from pypto_tui.ops.layout import pad_pairs

    if c.op != "pad" or len(c.operands) != 1 or c.operands[0].shape is None:
        raise _NotApplicable("the rows layout is for a pad of one input with a known shape")
    shape = tuple(c.operands[0].shape or ())
    try:
        pairs = pad_pairs(c.op_args.get("pad"), len(shape))
    except OpError as exc:
        raise _NotApplicable(str(exc)) from None
    touched = [d for d, p in enumerate(pairs) if p != (0, 0)]
    if len(touched) != 1 or min(pairs[touched[0]]) < 0:
        raise _NotApplicable("a pad of one axis by non-negative widths is one kernel; this one is one per axis")
    d = touched[0]
    lo, hi = pairs[d]
    rows, inner = math.prod(shape[:d]), math.prod(shape[d + 1:])
    kernel = (rows, math.prod(shape[d:]))
    fwd: list[Shape | None] = [kernel if t.is_tensor else None for t in c.inputs]
    return _Layout([kernel], fwd, [list(range(d)), list(range(d, len(shape)))], [], None,
                   (rows, (lo + shape[d] + hi) * inner))


def _recurrent_rows(c: Contract) -> _Layout:
    """An LSTM or GRU layer as 2-D tensors: the sequence as (batch, steps x features) when batch-first,
    else (steps x batch, features), so each step's (batch, features) block is one view; the weights as
    they are; each bias as one (1, gates x H) row; h0 (and an LSTM's c0) (batch, hidden). The output is
    laid out as the sequence is (a step's hidden state one assemble), or (batch, hidden) for the final
    cell state."""
    shapes = [t.shape for t in c.operands]
    if len(shapes) not in (6, 7) or any(s is None for s in shapes):
        raise _NotApplicable("the recurrent layout is for an LSTM or GRU layer's tensors with known shapes")
    x, w_ih, w_hh, b_ih, b_hh, *states = (tuple(s or ()) for s in shapes)
    first = bool(c.op_args.get("batch_first"))
    hidden, h0 = w_hh[1], states[0]
    seq: Shape = (x[0], x[1] * x[2]) if first else (x[0] * x[1], x[2])
    kernel = {t.name: k for t, k in zip(c.operands, [seq, w_ih, w_hh, (1, b_ih[0]), (1, b_hh[0]), *states],
                                          strict=True)}
    fwd: list[Shape | None] = [kernel[t.name] if t.name in kernel and kernel[t.name] != t.shape else None
                               for t in c.inputs]
    if c.op_args.get("emit") == "cell":
        out: Shape = (h0[0], hidden)
    else:
        out = (x[0], x[1] * hidden) if first else (x[0] * x[1], hidden)
    return _Layout([kernel.get(t.name, t.shape or ()) for t in c.tensor_inputs], fwd, [[0], [1], [2]], [], None,
                   out)


RESHAPERS = {
    "flatten": _flatten, "keep": _keep, "groups": _groups, "batch_channel_rest": _batch_channel_rest,
    "rows": _rows, "merge_reduce": _merge_reduce, "matmul": _matmul, "broadcast_rows": _broadcast_rows,
    "leading_batch": _leading_batch, "concat_rows": _concat_rows, "swap_blocks": _swap_layout,
    "slice_rows": _slice_rows, "pad_rows": _pad_rows, "recurrent_rows": _recurrent_rows, "take_rows": _take_rows,
    "scalar_rows": _scalar_rows,
}
WINDOW_RESHAPERS: dict[str, Callable[[Contract, KnowledgeBase], _Layout]] = {
    # convs and pools (see _window): their blocks are sized by the pack's [window] limits
    "window_im2col": _plain_conv_only, "window_transposed": _transposed_only,
    "window_depthwise": _window("depthwise-taps"), "window_pool": _window("pool-taps"),
}


def _whole_rows(c: Contract, layout: _Layout, kb: KnowledgeBase) -> None:
    """A swap's blocks move whole trailing rows, each a multiple of the pack's alignment (a row of a
    block is the last axis of every view and assemble)."""
    if c.op_args.get("dim1") == len(c.operands[0].shape or ()) - 1:
        return  # the last axis moves: pypto.transpose, whose rows are the tile's (TRANSPOSE.last-axis)
    rows = layout.kernel_shapes[0][-1] if layout.kernel_shapes else 0
    swap = layout.output_kernel_shape[-1] if layout.output_kernel_shape else 0
    row = min(rows, swap) * kb.dtype_bytes(c.operands[0].dtype or "fp32")
    if row % kb.limits.last_dim_align_bytes:
        raise _NotApplicable(f"the rows after the swapped axes are {row} bytes, not whole "
                             f"{kb.limits.last_dim_align_bytes}-byte rows (a transpose of the last axis is no "
                             "block copy)")


PACK_CHECKS: dict[str, Callable[[Contract, _Layout, KnowledgeBase], None]] = {"swap_blocks": _whole_rows}
"""Layouts whose validity also depends on the pack's numbers (the reshapers read the contract alone)."""


def layout_of(reshape: str, c: Contract, kb: KnowledgeBase) -> _Layout:
    """The contract laid out by one of RESHAPERS (or WINDOW_RESHAPERS, which read the pack), checked
    against the pack where that matters."""
    window = WINDOW_RESHAPERS.get(reshape)
    layout = window(c, kb) if window is not None else RESHAPERS[reshape](c)
    check = PACK_CHECKS.get(reshape)
    if check is not None:
        check(c, layout, kb)
    return layout


# ================================================================================ selection
def _multi_axis(c: Contract) -> bool:
    return c.reduction is not None and len(c.reduction.axes) > 1


def candidates(c: Contract, kb: KnowledgeBase) -> list[Strategy]:
    """Strategies of the pack that match the contract, most specific first."""
    multi = _multi_axis(c)
    scored = []
    for i, s in enumerate(kb.strategies):
        if c.family not in s.families:
            continue
        if s.ops and c.op not in s.ops:
            continue
        if s.multi_axis and not multi:
            continue
        scored.append(((2 if s.ops else 0) + (1 if s.multi_axis else 0), -i, s))
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return [s for _, _, s in scored]


@examples(valid=[ex(c=Task("softmax_rows"), chosen=StrategyRef("single-axis-keep"),
                    recommended=StrategyRef("single-axis-keep"))],
          invalid=[ex(c=Task("elu"), chosen=StrategyRef("single-axis-keep"), recommended=StrategyRef("elementwise-1d"),
                      rule="P3.flatten-elementwise", message="flatten to 1-D"),
                   ex(c=Task("max_over_dim"), chosen=StrategyRef("multi-axis-merge"),
                      recommended=StrategyRef("single-axis-keep"), message="is not the table's choice"),
                   ex(c=Task("max_over_dim"), chosen=None, recommended=None, message="no rank strategy")])
@cites("P3.rank-strategy", "P3.flatten-elementwise")
def rank_strategy(c: Contract, kb: KnowledgeBase, chosen: Strategy | None,
                  recommended: Strategy | None) -> list[Finding]:
    """Does the chosen strategy follow P3's table? (A user's pick may not.)"""
    if chosen is None:
        return [rule_finding(kb, "P3.rank-strategy", f"the pack has no rank strategy for {c.family} / {c.op}: set the "
                             "kernel shapes by hand")]
    if recommended is None or chosen.id == recommended.id:
        return []
    if traits(c.family).broadcasts and chosen.reshape != "flatten":
        return [rule_finding(kb, "P3.flatten-elementwise", f"'{chosen.id}' keeps elementwise work at a higher rank; "
                             f"flatten to 1-D ('{recommended.id}'): there is no data dependence, and the loop depends "
                             "only on auto_tiles")]
    return [rule_finding(kb, "P3.rank-strategy", f"'{chosen.id}' ({chosen.reshape}) is not the table's choice for "
                         f"{c.family} / {c.op}: '{recommended.id}' ({recommended.reshape}); keep a different rank only "
                         "when the semantics need it")]


@examples(valid=[ex(c=Task("mean_spatial"), merged=True), ex(c=Task("max_over_dim"), merged=False)],
          invalid=[ex(c=Task("mean_spatial"), merged=False, message="can be merged")])
@cites("O3.merge-reduce-axes", "CL.merge-evaluated")
def merge_reduce(c: Contract, kb: KnowledgeBase, merged: bool) -> list[Finding]:
    """O3: was merging the reduce axes evaluated, and why was it done or not?"""
    if not _multi_axis(c) or not traits(c.family).merges_reduce_axes:
        return []
    ok, reason = merge_conditions(c)
    if merged:
        return [rule_finding(kb, "CL.merge-evaluated", f"reduce axes merged: {reason}", "info")]
    if ok:
        return [rule_finding(kb, "O3.merge-reduce-axes", f"the reduce axes can be merged ({reason}) but the plan "
                             "reduces them one at a time")]
    return [rule_finding(kb, "CL.merge-evaluated", f"reduce axes not merged: {reason}", "info")]


@cites("P3.rank-strategy", "LOSS.scalar-rows")
def plan_dims(contract: Contract, kb: KnowledgeBase | None = None, strategy: str | None = None) -> DimPlan:
    """The dimension plan for `contract`. `strategy` is a strategy id from the pack (the user's pick)."""
    if kb is None:
        from pypto_tui.kb import get_kb

        kb = get_kb()
    c = contract
    by_id = {s.id: s for s in kb.strategies}
    if strategy is not None and strategy not in by_id:
        raise InputError(f"unknown strategy '{strategy}': this pack has {', '.join(by_id)}")
    cands = candidates(c, kb)
    findings: list[Finding] = []
    layout: _Layout | None = None
    recommended = None
    rejected: list[str] = []
    for s in cands:  # the first applicable candidate is the table's choice
        try:
            layout = layout_of(s.reshape, c, kb)
            recommended = s
            break
        except _NotApplicable as exc:
            rejected.append(f"'{s.id}': {exc}")
    chosen = recommended
    if strategy is not None and (recommended is None or strategy != recommended.id):
        pick = by_id[strategy]
        try:
            layout = layout_of(pick.reshape, c, kb)
            chosen = pick
        except _NotApplicable as exc:
            rule = pick.rule if pick.rule in ("O3.merge-reduce-axes",) else "P3.rank-strategy"
            findings.append(rule_finding(kb, rule, f"strategy '{pick.id}' cannot be applied: {exc}; "
                                         + (f"kept '{recommended.id}'" if recommended else "no plan"), "error"))
    if layout is None:
        why = "; ".join(rejected) if rejected else f"no strategy in the pack matches {c.family} / {c.op}"
        findings.extend(rank_strategy(c, kb, None, None))
        if rejected:
            findings.append(rule_finding(kb, "P3.rank-strategy", f"no strategy applies: {why}"))
        return DimPlan(strategy=None, reshape=None, kernel_rank=None, output_reshape=c.output_shape,
                       dtype=c.operands[0].dtype if c.operands else None, findings=findings,
                       merge_reason=merge_conditions(c)[1] if _multi_axis(c) else "")
    assert chosen is not None
    if (chosen.reshape == "keep" and layout.kernel_shapes and len(layout.kernel_shapes[0]) > kb.limits.max_vec_rank
            and not traits(c.family).operand_layout):
        try:
            merged_layout = _merge_kept(c)
        except (_NotApplicable, InputError, ValueError):
            merged_layout = None
        if merged_layout is not None and len(merged_layout.kernel_shapes[0]) <= kb.limits.max_vec_rank:
            layout = merged_layout
            findings.append(rule_finding(kb, "P3.rank-strategy", (
                f"rank {len(_same_shapes(c))} exceeds the vec tile's {kb.limits.max_vec_rank} dims: forward merges "
                f"each run of kept axes, {' x '.join(str(g) for g in layout.axis_map)} -> "
                f"{fmt_dims(layout.kernel_shapes[0])}"), "info"))
    findings.extend(rank_strategy(c, kb, chosen, recommended))
    merged = [g for g in layout.axis_map if len(g) > 1]
    merged_reduce = chosen.reshape == "merge_reduce"
    findings.extend(merge_reduce(c, kb, merged_reduce))
    if layout.merge_reason:
        merge_reason = layout.merge_reason
    elif _multi_axis(c) and traits(c.family).merges_reduce_axes:
        merge_reason = merge_conditions(c)[1]
    elif merged and c.reduction is not None:
        merge_reason = (f"the '{chosen.reshape}' reshape lays the statistics' axes out as "
                        f"{' and '.join(str(g) for g in merged)}; O3's merge is for reductions")
    else:
        merge_reason = ""
    kernel_rank = len(layout.kernel_shapes[0]) if layout.kernel_shapes else None
    alternatives: list[str] = []
    windowed = chosen.reshape.startswith("window_")  # a conv or pool: only its own layouts apply
    # another family's "keep" row is a fair alternative only when it is generic (no op of its own):
    # cross-entropy's keep is not an alternative for a mean; nor is a row for another op of the family
    # (gather's keep for a cat)
    for s in kb.strategies:
        if s.id == chosen.id or s.reshape == chosen.reshape or (s.ops and c.op not in s.ops) or not (
                c.family in s.families or (s.reshape == "keep" and not s.ops and not windowed
                                           and not traits(c.family).tile_on_output)):
            continue
        try:
            alt = layout_of(s.reshape, c, kb)
        except _NotApplicable:
            continue
        # a conv's strategies share the planes layout and differ in the kernel (im2col or tap sums)
        same = alt.kernel_shapes == layout.kernel_shapes and alt.axis_map == layout.axis_map and not windowed
        if not same and s.reshape not in [by_id[a].reshape for a in alternatives]:
            alternatives.append(s.id)
    describe = ", ".join(
        f"{t.name} {t.shape} -> {k}" for t, k in zip(c.tensor_inputs, layout.kernel_shapes, strict=False)
    )
    findings.insert(0, rule_finding(kb, chosen.rule if chosen.rule.startswith(("P3", "O3")) else "P3.rank-strategy",
                                    f"'{chosen.id}': {describe}; kernel rank {kernel_rank}"
                                    + (f", reduce axis {layout.reduce_axis}" if layout.reduce_axis is not None else ""),
                                    "info"))
    max_rank = kb.limits.max_vec_rank
    if kernel_rank is not None and kernel_rank > max_rank and not traits(c.family).operand_layout:
        findings.append(rule_finding(kb, "P3.rank-strategy", f"kernel rank {kernel_rank} exceeds the vec tile's "
                                     f"{max_rank} dims: merge axes in forward (pick a strategy that reshapes)"))
    return DimPlan(
        strategy=chosen.id, reshape=chosen.reshape, kernel_rank=kernel_rank,
        forward_reshape=layout.forward_reshape, kernel_shapes=layout.kernel_shapes,
        output_kernel_shape=layout.output_kernel_shape, output_reshape=c.output_shape,
        reduce_axis=layout.reduce_axis, reduce_axes=layout.reduce_axes, axis_map=layout.axis_map,
        merged_axes=merged, merge_reason=merge_reason, alternatives=alternatives,
        dtype=c.operands[0].dtype if c.operands else None, matmul=layout.matmul, rule=chosen.rule,
        note=chosen.note, findings=findings, broadcast=layout.broadcast, window=layout.window,
    )


CHECKS = {"dims.rank_strategy": rank_strategy, "dims.merge_reduce": merge_reduce}
APPLIES = {"dims.plan": plan_dims}
