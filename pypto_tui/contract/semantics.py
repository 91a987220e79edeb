"""From the facts (family, op, op_args, input shapes) to everything that follows from them.

`derive` computes the reduction contract, the output shape and dtype, the formula, asymmetry
(with the direction of a divergence) and whether pypto-tui can scaffold the op. It is pure and
cheap, so `edits.apply_edits` re-runs it after every user edit: change `op_args.dim` and the
axes, the count of a mean and the output shape follow.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from pypto_tui.contract import ir
from pypto_tui.contract.conv import derive_window
from pypto_tui.contract.model import DERIVED, Contract, Input, Reduction, Scaling, norm_axes
from pypto_tui.ops import registry
from pypto_tui.ops.base import Operand, OpError, commutes, index_letters, shown
from pypto_tui.ops.reduce import reduced_shape
from pypto_tui.ops.registry import REGISTRY
from pypto_tui.vocabulary import INDEX_DTYPES

# Functions a generic elementwise expression may use and still be scaffolded: the elementwise kinds
# whose registry entry has a kernel form, and those the kernel reads whole along the last axis
# (rotary embeddings' rotate_half, a view-and-concat helper, contract/rope.py).
KERNEL_FUNCS = frozenset(k.name for k in REGISTRY.values() if k.is_elementwise and (k.render or k.row_local))


@dataclass
class _Out:
    reduction: Reduction | None = None
    asymmetric: bool | None = None
    direction: str | None = None
    formula: str | None = None
    output_shape: tuple[int, ...] | None = None
    output_dtype: str | None = None
    supported: bool = True
    reason: str = ""
    unknown: dict[str, str] = field(default_factory=dict)


def _is_derived_key(key: str) -> bool:
    return key.split(".")[0] in DERIVED


def derive(c: Contract) -> Contract:
    """Recompute the derived fields of `c` from its facts (family, op, op_args, inputs)."""
    out = _Out()
    ops = list(c.operands)
    try:
        _dispatch(c, ops, out)
    except _Missing as exc:
        out.unknown.setdefault(exc.field, exc.reason)
    carried = {k: v for k, v in c.unknown.items() if not _is_derived_key(k)}
    # Recogniser reasons (fused pre-processing, composite ops) stay in force.
    if c.op_args.get("fused") or c.op_args.get("composite") or c.op_args.get("returns"):
        out.supported = False
        out.reason = out.reason or c.reason or "the op is part of a larger computation"
    if c.family == "unknown":
        out.supported = False
        out.reason = c.reason or out.reason or "the operator was not recognised"
    if out.supported:
        out.reason = ""
    return replace(
        c, reduction=out.reduction, asymmetric=out.asymmetric, direction=out.direction,
        formula=out.formula, output_shape=out.output_shape, output_dtype=out.output_dtype,
        supported=out.supported, reason=out.reason, unknown={**carried, **out.unknown},
    )


class _Missing(Exception):
    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field, self.reason = field_name, reason


def _need_shape(inp: Input | None, what: str = "output_shape") -> tuple[int, ...]:
    if inp is None:
        raise _Missing(what, "the op has no tensor input")
    if inp.shape is None:
        raise _Missing(what, f"the shape of input '{inp.name}' is unknown")
    return inp.shape


def _reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)



def _at(name: str, letters: Sequence[str]) -> str:
    return f"{name}[{', '.join(letters)}]" if letters else name


def _dim(c: Contract, rank: int, key: str = "dim", default: Any = "__missing__") -> tuple[int, ...]:
    if f"op_args.{key}" in c.unknown:
        raise _Missing("reduction", c.unknown[f"op_args.{key}"])
    dim = c.op_args.get(key, default)
    if dim == "__missing__":
        raise _Missing("reduction", f"'{key}' of {c.op} is not known")
    axes = norm_axes(dim, rank)
    if axes is None:
        raise _Missing("reduction", f"{key}={dim!r} is not an axis of a rank-{rank} input")
    return axes


# ================================================================================ dispatch
def _dispatch(c: Contract, ops: list[Input], out: _Out) -> None:
    fam = c.family
    if fam == "unknown":
        for f in ("formula", "reduction", "asymmetric", "output_shape"):
            out.unknown[f] = c.reason or "the operator was not recognised"
        return
    if not ops and fam != "unknown":
        raise _Missing("output_shape", "the op reads no tensor input")
    x = ops[0]
    out.output_dtype = x.dtype
    handler = {
        "elementwise": _elementwise, "softmax": _softmax, "reduction": _reduction, "norm": _norm,
        "loss": _loss, "matmul": _matmul, "scan": _scan, "conv": derive_window, "pool": derive_window,
        "attention": _attention, "layout": _layout, "recurrent": _recurrent,
    }[fam]
    handler(c, ops, out)
    kind = registry.kind(c.op or "")
    if kind is not None and kind.dtype:  # a conversion (`x.char()`: int8), topk's indices (int64)
        out.output_dtype = kind.dtype


def _view_leaf_shapes(c: Contract, shapes: list[tuple[int, ...]], names: list[str]) -> list[tuple[int, ...]]:
    """The shapes an expression over views broadcasts: each leaf's (after its views) and each input
    the tree reads without one."""
    from pypto_tui.contract import ir
    from pypto_tui.contract import views as V

    known = dict(zip(names, shapes, strict=True))
    try:
        tree, found = V.leaves(ir.from_data(_unfreeze(c.op_args["expr"])), known)
    except V.NotAView as exc:
        raise _Missing("output_shape", str(exc)) from None
    return [leaf.broadcast_shape for leaf in found] + [known[x] for x in ir.inputs_of(tree) if x in known]


def _elementwise(c: Contract, ops: list[Input], out: _Out) -> None:
    from pypto_tui.contract.values import broadcast

    shapes = [_need_shape(o) for o in ops]
    if c.op_args.get("views") is not None:
        shapes = _view_leaf_shapes(c, shapes, [o.name for o in ops])
    both = broadcast(*shapes)
    if both is None:
        raise _Missing("output_shape", f"input shapes {shapes} do not broadcast")
    shape = cast(tuple[int, ...], both)  # known sizes in, known sizes out
    out.output_shape = shape
    out.output_dtype = _promote_all([o.dtype for o in ops])
    names = [o.name for o in ops]
    x = names[0]
    op = c.op or ""
    args = dict(c.op_args)
    kind = registry.kind(op)
    if kind is not None and kind.is_elementwise and kind.formula:
        try:
            body = kind.formula.format(**{**{k: shown(v) for k, v in args.items()}, "x": x, "y": names[-1]})
        except (KeyError, IndexError):
            body = f"{op}({x})"
        out.formula = f"out = {body}  (elementwise over {shape})"
    elif kind is not None and op in ir.INFIX:  # an operator a task writes with its symbol: `x * 2.0`, `a - b`
        if args.get("scalar_input") or args.get("scalar") is not None:
            sc = args.get("scalar_input") or shown(args.get("scalar"))
            lhs, rhs = (x, sc) if args.get("scalar_side", "right") == "right" else (sc, x)
            extra = ""
            sc = c.input(args["scalar_input"]) if args.get("scalar_input") else None
            if sc is not None and sc.value is not None:
                extra = f", {sc.name} = {shown(sc.value)}"
            out.formula = f"out = {_infix(op, lhs, rhs)}  (elementwise over {shape}{extra})"
        else:
            out.formula = f"out = {_infix(op, names[0], names[-1])}  (elementwise over {shape})"
    elif op == "expression" and "expr" in args:
        tree = ir.from_data(_unfreeze(args["expr"]))
        out.formula = f"out = {ir.render(tree)}  (elementwise over {shape})"
        root = registry.kind(tree.name or "") if tree.kind == "call" else None
        if root is not None and root.dtype:  # a conversion last: `.char()` makes the result int8
            out.output_dtype = root.dtype
        funcs = {n.name for n in tree.walk() if n.kind == "call"} - KERNEL_FUNCS
        if args.get("views") is not None:
            from pypto_tui.contract import views as V

            funcs -= {*V.VIEW_CALLS, "size"}
        if funcs:
            out.supported = False
            out.reason = f"the expression uses {', '.join(sorted(funcs))}, which the scaffolds do not translate"
    else:  # a call: `relu(x)`, `maximum(a, b)`
        out.formula = f"out = {op}({', '.join(names)})  (elementwise over {shape})"
    # asymmetry
    commutes = _commutes(op) if len(ops) >= 2 else None
    if len(ops) < 2 or commutes:
        out.asymmetric = False
    elif commutes is False:
        out.asymmetric = True
    else:
        out.asymmetric = _numeric_asymmetry(c, ops)
        if out.asymmetric is None and (args.get("views") is not None or len(set(shapes)) > 1):
            out.asymmetric = True  # the inputs broadcast (or are read through views): their roles are fixed
        if out.asymmetric is None:
            out.unknown["asymmetric"] = "the inputs have different shapes: swapping them is not defined"


def _infix(op: str, lhs: str, rhs: str) -> str:
    """`lhs <symbol> rhs` for an operator a task writes with its symbol (the expression printer's own)."""
    return ir.render(ir.Node("bin", op, (ir.Node("in", lhs), ir.Node("in", rhs))))


@functools.cache
def _commutes(op: str) -> bool | None:
    """Whether swapping the two operands of a binary elementwise kind or a two-tensor loss leaves its
    value unchanged (ops.base.commutes); None for any other op."""
    k = registry.kind(op)
    if k is None or not (k.is_elementwise or k.role == "loss"):
        return None
    return commutes(k)


def _kind_shape(kind: Any, shapes: list[tuple[int, ...]], attrs: Mapping[str, Any]) -> tuple[int, ...]:
    """The registry's output shape, or the contract's missing output shape saying why there is none."""
    try:
        return tuple(kind.shape(shapes, attrs))
    except OpError as exc:
        raise _Missing("output_shape", str(exc)) from None


def _layout(c: Contract, ops: list[Input], out: _Out) -> None:
    """A copy of data into a new arrangement (a transpose, a pad, a gather, a concatenation): the shape is
    the registry's, the formula and the operands' parts its entry's text; the operands' order matters
    whenever there is more than one."""
    kind = registry.kind(c.op or "")
    if kind is None or not kind.formula:
        raise _Missing("formula", f"'{c.op}' is a layout operator with no contract of its own")
    shapes = [_need_shape(o) for o in ops]
    attrs = _layout_attrs(kind, c.op_args, len(shapes[0]))
    shape = _kind_shape(kind, shapes, attrs)
    values = [o for i, o in enumerate(ops) if i not in kind.index_inputs]
    names = [o.name for o in ops]
    fields = {**{k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()},
              "x": names[0], "y": names[-1], "parts": ", ".join(names), "shape": shape}
    out.output_shape = shape
    out.output_dtype = _promote_all([o.dtype for o in values])
    out.formula = kind.formula.format(**fields)
    out.asymmetric = len(ops) > 1 or kind.arity != 1
    out.direction = kind.direction.format(**fields) if kind.direction else None
    for param, why in kind.refuses:
        if c.op_args.get(param) is not None:
            out.supported, out.reason = False, why
    for i in kind.index_inputs:
        if i < len(ops) and ops[i].dtype not in INDEX_DTYPES:
            out.supported = False
            out.reason = f"{c.op}'s index {ops[i].name} is {ops[i].dtype}: torch takes int64 positions"


def _layout_attrs(kind: Any, args: Mapping[str, Any], rank: int) -> dict[str, Any]:
    """The parameters a layout formula shows: each axis (`dim`, `dim0`, ...) counted from 0, each number
    of the type of its default (a fill value of 0 is `0.0`)."""
    attrs = {p: args.get(p, kind.defaults.get(p)) for p in kind.params if p in args or p in kind.defaults}
    for p, v in attrs.items():
        if p.startswith("dim") and isinstance(v, int):
            axes = norm_axes(v, rank)
            if axes is None:
                raise _Missing("output_shape", f"{p}={v!r} is not an axis of a rank-{rank} input")
            attrs[p] = axes[0]
        elif isinstance(kind.defaults.get(p), float):
            if not isinstance(v, int | float) or isinstance(v, bool):
                raise _Missing(f"op_args.{p}", f"{p}={v!r} is not a constant number")
            attrs[p] = float(v)
    return attrs


def _softmax(c: Contract, ops: list[Input], out: _Out) -> None:
    shape = _need_shape(ops[0])
    rank = len(shape)
    dim = c.op_args.get("dim")
    if dim is None and "op_args.dim" not in c.unknown:
        # torch's legacy implicit dim (with a deprecation warning): 0 for rank 0, 1, 3; else 1
        dim = 0 if rank in (0, 1, 3) else 1
        out.unknown.setdefault("reduction", "softmax without dim= uses torch's deprecated implicit dim "
                                            f"({dim} here); confirm it")
    axes = _dim(c, rank, default=dim) if dim is not None else _dim(c, rank)
    if len(axes) != 1:
        raise _Missing("reduction", "softmax takes one dim")
    a = axes[0]
    out.reduction = Reduction(c.op or "softmax", axes, True, "none")
    out.output_shape = shape
    L = index_letters(rank)
    x = ops[0].name
    sub = L.copy()
    sub[a] = "r"
    kind = registry.of_contract(c.op or "softmax")
    form = kind.formula if kind is not None and kind.formula else "exp({x}) / sum_r exp({x_r})"
    body = form.format(x=_at(x, L), x_r=_at(x, sub))
    out.formula = f"out[{', '.join(L)}] = {body}  (over axis {a}, size {shape[a]})"
    out.asymmetric = False


def _reduction(c: Contract, ops: list[Input], out: _Out) -> None:
    x = ops[0]
    shape = _need_shape(x)
    rank = len(shape)
    op = c.op or "sum"
    dim = c.op_args.get("dim")
    if "op_args.dim" in c.unknown:
        raise _Missing("reduction", c.unknown["op_args.dim"])
    axes = norm_axes(dim, rank)
    if axes is None:
        raise _Missing("reduction", f"dim={dim!r} is not an axis of a rank-{rank} input")
    keepdim = bool(c.op_args.get("keepdim", False))
    kind = registry.of_contract(op)
    arg = kind is not None and kind.role == "argreduce"  # an index, not a value
    if arg and dim is None:
        keepdim = False
    own = kind.shape if kind is not None and kind.shape is not reduced_shape else None  # topk: k values on the axis
    kept_shape: tuple[int, ...] = ()
    if own is not None:
        try:
            kept_shape = tuple(own([shape], c.op_args))
        except OpError as exc:
            raise _Missing("output_shape", str(exc)) from None
        keepdim = len(kept_shape) == rank
    count = math.prod(shape[a] for a in axes) if axes else 1
    scaling = cast(Scaling, kind.scaling if kind is not None else "none")
    out.reduction = Reduction(op, axes, keepdim, scaling, count if scaling == "mean" else None)
    out.output_shape = (kept_shape if own is not None else
                        _reduced_shape(shape, axes, keepdim) if dim is not None or not arg else ())
    if arg:
        out.output_dtype = "int64"
    out.asymmetric = False
    L = index_letters(rank)
    kept = L if own is not None else [("0" if i in axes else letter) for i, letter in enumerate(L)] if keepdim else [
        letter for i, letter in enumerate(L) if i not in axes]
    red = ",".join(L[a] for a in axes)
    lhs = _at("out", kept)
    src = _at(x.name, L)
    if c.op_args.get("operand_expr") is not None:
        from pypto_tui.contract import ir

        src = ir.render(ir.from_data(_unfreeze(c.op_args["operand_expr"])))
    corr = c.op_args.get("correction", 1 if c.op_args.get("unbiased", True) else 0)
    form = kind.formula if kind is not None and kind.formula else f"{op}_{{{{{{dim}}}}}} {{x}}"
    out.formula = f"{lhs} = {form.format(**{**c.op_args, 'x': src, 'dim': red, 'count': count, 'correction': corr})}"
    if arg:
        if dim is not None:
            return  # pypto.topk(k=1) (ARG.topk-last-axis)
        out.supported = False
        out.reason = f"{op} over the flattened tensor (no dim) is not scaffolded: it returns an index into x.flatten()"
        return
    if kind is None or kind.unsupported:
        out.supported = False
        out.reason = f"{op} has {kind.unsupported}" if kind is not None else f"{op} is not supported"


def _operands(ops: list[Input]) -> tuple[Operand, ...]:
    return tuple(Operand(o.name, _need_shape(o), o.dtype) for o in ops)


def _norm(c: Contract, ops: list[Input], out: _Out) -> None:
    """A normalisation: what it divides by is its registry entry's statistic."""
    out.output_shape = _need_shape(ops[0])
    out.asymmetric = False
    kind = registry.kind(c.op or "")
    if kind is None or kind.statistic is None or not _apply(c, ops, out, kind):
        out.supported = False
        fused = c.op_args.get("fused") and c.reason  # applied to an expression: the reader said so
        out.reason = fused or (kind.unsupported if kind is not None and kind.unsupported else
                               f"{c.op or ''} is not a norm pypto-tui knows")
        out.unknown["formula"] = out.reason
        return
    for p in ("running_mean", "running_var", "weight", "bias"):
        if isinstance(c.op_args.get(p), str):  # a tensor passed to F.*_norm (module flags are bools)
            out.supported = False
            out.reason = f"the norm takes {p}={c.op_args[p]}, a tensor the contract does not model"


def _apply(c: Contract, ops: list[Input], out: _Out, kind: Any) -> bool:
    """The contract's reduction, formula, output shape and operand roles from the kind's statistic; False
    when the call's arguments do not say it."""
    if "op_args.dim" in c.unknown and "dim" in kind.params:
        raise _Missing("reduction", c.unknown["op_args.dim"])
    try:
        stat = kind.statistic(_operands(ops), c.op_args)
    except OpError as exc:
        raise _Missing("reduction", str(exc)) from None
    if stat is None:
        return False
    inner_op, inner_axes = stat.inner if stat.inner is not None else (None, ())
    out.reduction = Reduction(stat.kind, stat.axes, stat.keepdim, cast(Scaling, stat.scaling), stat.count,
                              inner_op, inner_axes) if stat.kind else None  # a loss with no reduction
    out.formula = stat.formula
    if stat.output_shape is not None:
        out.output_shape = stat.output_shape
    out.asymmetric = stat.asymmetric
    out.direction = stat.direction
    out.unknown.update(stat.unknown)
    if stat.refused:
        out.supported = False
        out.reason = stat.refused
    return True


def _loss(c: Contract, ops: list[Input], out: _Out) -> None:
    """A loss: what it sums is its registry entry's statistic (a pointwise term and a reduction, or a
    per-sample statistic first)."""
    op = c.op or ""
    for o in ops:
        _need_shape(o)
    out.output_dtype = _promote_all([o.dtype for o in ops if o.dtype not in INDEX_DTYPES]) or ops[0].dtype
    kind = registry.kind(op)
    if kind is not None and kind.statistic is not None:  # a loss the registry says the sum of
        _apply(c, ops, out, kind)
        return
    out.supported = False
    out.reason = c.reason or f"{op} has no contract template"
    out.unknown["formula"] = out.reason
    out.unknown["reduction"] = out.reason
    out.unknown["asymmetric"] = out.reason
    out.unknown["output_shape"] = out.reason


def _matmul(c: Contract, ops: list[Input], out: _Out) -> None:
    a = c.op_args
    if c.op == "linear":
        x = _need_shape(ops[0])
        n_out = a.get("out_features")
        out.output_shape = (*x[:-1], n_out) if isinstance(n_out, int) else None
        out.formula = f"out = {ops[0].name} @ W^T + b  (W: ({n_out}, {a.get('in_features')}) learned)"
        out.asymmetric = False
        out.supported = False
        out.reason = "nn.Linear has learned weights the task file does not fix"
        return
    if len(ops) < 2:
        raise _Missing("output_shape", "a matmul needs two tensor operands")
    A, B = ops[0], ops[1]
    sa, sb = _need_shape(A), _need_shape(B)
    out.output_dtype = _promote_all([A.dtype, B.dtype])
    out.asymmetric = True
    ta, tb = bool(a.get("transpose_a")), bool(a.get("transpose_b"))
    ea = _swap_last(sa) if ta else sa
    eb = _swap_last(sb) if tb else sb
    an = f"{A.name}^T" if ta else A.name
    bn = f"{B.name}^T" if tb else B.name
    if c.op == "diag_matmul":
        if a.get("diag_b") and not a.get("diag_a"):  # A @ diag(B): column scaling
            if len(sa) != 2 or len(sb) != 1 or sa[1] != sb[0]:
                raise _Missing("output_shape", f"{A.name} @ diag({B.name}) needs (N, M) and (M,)")
            out.output_shape = sa
            out.formula = f"out[i, j] = {A.name}[i, j] * {B.name}[j]  ({A.name} @ diag({B.name}): a column scaling)"
            return
        if len(sa) != 1 or len(sb) != 2 or sa[0] != sb[0]:
            raise _Missing("output_shape", f"diag({A.name}) @ {B.name} needs ({sb[0] if sb else 'N'},) and (N, M)")
        out.output_shape = sb
        out.formula = f"out[i, j] = {A.name}[i] * {B.name}[i, j]  (diag({A.name}) @ {B.name}: a row scaling)"
        return
    ra, rb = len(ea), len(eb)
    variant = a.get("variant")
    shape: tuple[int, ...]
    if ra == 2 and rb == 2:
        variant = "matvec" if eb[1] == 1 else "2d"
        k_ok = ea[1] == eb[0]
        shape = (ea[0], eb[1])
        formula = f"out[m, n] = sum_k {_mm(A.name, ta, 'm', 'k')} * {_mm(B.name, tb, 'k', 'n')}"
    elif ra == 3 and rb == 3:
        variant = "batched"
        k_ok = ea[2] == eb[1] and ea[0] == eb[0]
        shape = (ea[0], ea[1], eb[2])
        formula = f"out[b, m, n] = sum_k {_mm(A.name, ta, 'm', 'k', 'b')} * {_mm(B.name, tb, 'k', 'n', 'b')}"
    elif ra == rb >= 4 and ea[:-2] == eb[:-2]:
        variant = "nd_batched"
        k_ok = ea[-1] == eb[-2]
        shape = (*ea[:-1], eb[-1])
        lead = ", ".join(f"b{i}" for i in range(ra - 2))
        formula = (f"out[{lead}, m, n] = sum_k {_mm(A.name, ta, 'm', 'k', lead)} * {_mm(B.name, tb, 'k', 'n', lead)}"
                   "  (the leading axes are one batch: q @ k^T over (batch, heads))")
    elif ra >= 3 and rb == 2:
        variant = "3d_2d" if ra == 3 else "nd_2d"
        k_ok = ea[-1] == eb[0]
        shape = (*ea[:-1], eb[1])
        lead = "b" if ra == 3 else ", ".join(f"b{i}" for i in range(ra - 2))
        formula = (f"out[{lead}, m, n] = sum_k {_mm(A.name, ta, 'm', 'k', lead)} * {_mm(B.name, tb, 'k', 'n')}"
                   + ("  (the leading axes are rows of one 2-D product)" if ra > 3 else ""))
    elif ra == 2 and rb == 1:
        variant = "matvec"
        k_ok = ea[1] == eb[0]
        shape = (ea[0],)
        formula = f"out[m] = sum_k {A.name}[m, k] * {B.name}[k]"
    else:
        raise _Missing("output_shape", f"matmul of rank {ra} and rank {rb} operands is not modelled")
    if not k_ok:
        raise _Missing("output_shape", f"{an} {ea} and {bn} {eb} do not chain (inner dims differ)")
    out.output_shape = shape
    post = a.get("post")
    out.formula = formula
    if post:
        out.formula += f", then {post}(out, diagonal={a.get('post_diagonal', 0)})"
        ok = all(_recipe_has(o, post) for o in (A, B)) and not ta and not tb and a.get("post_diagonal", 0) == 0
        if ok:
            out.formula += (f"  (both operands are {post} already, so the mask only zeroes what the product has as "
                            "zeros; the kernel applies it anyway, so any inputs give torch's result)")
        if not isinstance(a.get("post_diagonal", 0), int) or variant != "2d" or ta:
            out.supported = False
            out.reason = (f"{post} of a product is scaffolded for a 2-D product with a constant diagonal and A not "
                          "transposed (TRI.mask-by-cumsum)")
    epilogue = a.get("epilogue")
    if epilogue:  # FUSE.matmul-epilogue: an elementwise tree over the product, on each output tile
        from pypto_tui.contract import ir

        out.formula += f", then out = {ir.render(ir.from_data(_unfreeze(epilogue)), {'__product__': 'out'})}"
    if c.op == "bmm" and variant != "batched":
        raise _Missing("output_shape", "torch.bmm needs two 3-D operands")


def _recipe_has(inp: Input, op: str) -> bool:
    post = (inp.recipe or {}).get("post", ())
    return any(step and step[0] == op for step in post)


def _mm(name: str, transposed: bool, r: str, c: str, batch: str = "") -> str:
    idx = [batch] if batch else []
    idx += [c, r] if transposed else [r, c]
    return f"{name}[{', '.join(idx)}]"


def _swap_last(s: tuple[int, ...]) -> tuple[int, ...]:
    return (*s[:-2], s[-1], s[-2]) if len(s) >= 2 else s


def _scan(c: Contract, ops: list[Input], out: _Out) -> None:
    shape = _need_shape(ops[0])
    out.output_shape = shape
    out.asymmetric = False if len(ops) < 2 else None
    if len(ops) >= 2:
        out.asymmetric = False  # masked scans multiply the operands elementwise
    if c.op_args.get("composite"):
        out.unknown.setdefault("reduction", "the scan is part of a larger expression")
        return
    axes = _dim(c, len(shape))
    out.reduction = Reduction(c.op or "cumsum", axes, True, "none")
    x = ops[0].name
    (d,) = axes
    op = c.op or ""
    base = registry.kind(op.replace("reverse_", "").replace("masked_", "").replace("exclusive_", ""))
    rng = "r >= t" if op.startswith("reverse_") else "r < t" if op.startswith("exclusive_") else "r <= t"
    src = f"{x}[.., r, ..]" if len(ops) < 2 else f"({ops[0].name} * {ops[1].name})[.., r, ..]"
    form = base.formula if base is not None and base.formula else "scan_{{{rng}}} {src}"
    out.formula = f"out[.., t, ..] = {form.format(rng=rng, src=src)}  (along axis {d})"
    if op.startswith("exclusive_"):
        narrow = bool(c.op_args.get("narrow"))
        out.output_shape = exclusive_scan_shape(shape, d, bool(c.op_args.get("trim_last_row")), narrow)
        if narrow:
            out.formula += (f"; the scan reads {x} without its last position along axis {d} and a zero slice goes "
                            f"before it, so the output has {x}'s shape")
            return
        out.formula += (f"; a zero slice is put before {x} along axis {d}, so axis {d} has {shape[d] + 1} positions"
                        + ("; then [:-1] drops the last index of axis 0" + (" (not of the scanned axis)" if d else "")
                           if c.op_args.get("trim_last_row") else ""))


def exclusive_scan_shape(shape: Sequence[int], axis: int, trim_last_row: bool,
                         narrow: bool = False) -> tuple[int, ...]:
    """cat((zero slice, x), axis) then, with `trim_last_row`, [:-1] on axis 0; the `narrow` form
    scans x without its last position along the axis, so the output keeps x's shape."""
    if narrow:
        return tuple(shape)
    out = [s + 1 if i == axis else s for i, s in enumerate(shape)]
    if trim_last_row:
        out[0] -= 1
    return tuple(out)


def _attention(c: Contract, ops: list[Input], out: _Out) -> None:
    out.asymmetric = True
    if c.op == "scaled_dot_product_attention" and len(ops) >= 3 and not c.op_args.get("composite"):
        q, k, v = (_need_shape(o) for o in ops[:3])
        out.output_shape = (*q[:-1], v[-1])
        a = c.op_args
        scale = a.get("scale")
        sc = f"{shown(scale)}" if scale is not None else f"1/sqrt({q[-1]})"
        out.formula = (f"out = softmax({ops[0].name} @ {ops[1].name}^T * {sc}, over the last axis) @ {ops[2].name}"
                       f"  ({q[-2]} queries, {k[-2]} keys of {q[-1]}, values of {v[-1]}, "
                       f"batch {q[:-2] or '()'})")
        why = ""
        if q[:-2] != k[:-2] or k[:-2] != v[:-2] or q[-1] != k[-1] or k[-2] != v[-2]:
            why = f"query {q}, key {k} and value {v} do not line up (same batch, d_q = d_k, one value per key)"
        elif a.get("attn_mask") is not None:
            why = "attention with an attn_mask is not scaffolded"
        elif a.get("dropout_p"):
            why = "attention with dropout is random: not scaffolded (dropout_p=0 is)"
        elif a.get("is_causal"):
            why = "causal attention is not scaffolded"
        if why:
            out.supported = False
            out.reason = why
        return
    out.unknown["output_shape"] = "attention output shapes are not modelled"
    out.unknown["formula"] = "attention is not modelled"


def _recurrent(c: Contract, ops: list[Input], out: _Out) -> None:
    """A recurrent layer: the registry's shape (it checks the weights and states against the sequence)."""
    kind = registry.kind(c.op or "")
    if kind is None or len(ops) != kind.arity:
        raise _Missing("output_shape", f"{c.op} reads {kind.arity if kind else '?'} tensors")
    shapes = [_need_shape(o) for o in ops]
    out.output_shape = _kind_shape(kind, shapes, c.op_args)
    out.asymmetric = True
    x, h = ops[0].name, shapes[2][1]
    steps = shapes[0][1] if c.op_args.get("batch_first") else shapes[0][0]
    what = "the cell state after the last step" if c.op_args.get("emit") == "cell" else "every step's hidden state"
    step = ("gates i, f, g, o = x_t @ W_ih^T + h @ W_hh^T + b, c = f * c + i * g, h = o * tanh(c)" if c.op == "lstm"
            else "gates r, z from x_t @ W_ih^T + h @ W_hh^T + b, n = tanh(x_t W_in + r * (h W_hn)), "
                 "h = (1 - z) * n + z * h")
    order = ", from the last step back" if c.op_args.get("reverse") else ""
    out.formula = (f"out = {c.op}({x}, ...): {steps} time steps{order} of {step} (hidden {h}); {what}, "
                   f"{out.output_shape}")


# ================================================================================ helpers
def _promote_all(dtypes: Sequence[str | None]) -> str | None:
    from pypto_tui.contract.values import _promote

    known = [d for d in dtypes if d]
    if not known:
        return None
    res = known[0]
    for d in known[1:]:
        res = _promote(res, d, "add")
    return res



def _unfreeze(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_unfreeze(x) for x in v]
    if isinstance(v, dict):
        return {k: _unfreeze(x) for k, x in v.items()}
    return v


def _numeric_asymmetry(c: Contract, ops: list[Input]) -> bool | None:
    """Does swapping the first two tensor inputs change the result? Evaluated on random data."""
    if len(ops) < 2 or ops[0].shape != ops[1].shape:
        return None
    try:
        import numpy as np

        from pypto_tui.contract.reference import reference
    except ImportError:  # pragma: no cover - numpy is a dependency
        return None
    rng = np.random.default_rng(1)
    small = (3, 5)
    arrays = {o.name: rng.uniform(0.5, 2.0, size=small) for o in c.tensor_inputs}
    ordered = [arrays[o.name] for o in c.tensor_inputs]
    swapped_map = dict(arrays)
    swapped_map[ops[0].name], swapped_map[ops[1].name] = arrays[ops[1].name], arrays[ops[0].name]
    swapped = [swapped_map[o.name] for o in c.tensor_inputs]
    small_c = replace(c, inputs=tuple(replace(i, shape=small) if i.is_tensor else i for i in c.inputs))
    try:
        r1 = reference(small_c, ordered)
        r2 = reference(small_c, swapped)
    except Exception:
        return None
    return not bool(np.allclose(r1, r2, rtol=1e-9, atol=1e-12, equal_nan=True))
