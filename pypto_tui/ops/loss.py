"""Losses and similarity: each reduces (mean, sum, batchmean) or keeps the per-element values
(`reduction='none'`). The contract's level-1 family reads the loss's arguments; the registry gives
the shape a loss passes on in a graph (a loss written out as an expression, `1 - cos(a, b)`
averaged, is a graph of elementwise nodes and a reduction, not an entry here)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import (
    Operand,
    OpError,
    OpKind,
    Reference,
    Shape,
    Statistic,
    StatisticOf,
    axes_of,
    axis,
    broadcast,
    commutes,
    index_letters,
    shown,
)
from pypto_tui.ops.idiom import Call, Const, Either, Form, Idiom, Match, Tensor, square
from pypto_tui.vocabulary import INDEX_DTYPES


def _reduced(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    if attrs.get("reduction", "mean") == "none":
        return broadcast(list(shapes[:2]))
    return ()


def _cross_entropy(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    if attrs.get("reduction", "mean") == "none":
        x = tuple(shapes[0])
        return (x[0], *x[2:]) if len(x) > 1 else ()
    return ()


def _triplet(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    if attrs.get("reduction", "mean") == "none":
        return tuple(shapes[0][:1])
    return ()


def _cosine_similarity(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    both = broadcast(shapes[:2])
    d = axis(attrs.get("dim", 1), len(both))
    return tuple(s for i, s in enumerate(both) if i != d)


def _pairwise(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    both = broadcast(shapes[:2])
    if not both:
        raise OpError("pairwise distance of 0-d tensors")
    return both[:-1] + ((1,) if attrs.get("keepdim") else ())


def reduce_loss(term: np.ndarray, reduction: str = "mean", batch: int = 1) -> np.ndarray:
    """A loss's per-element terms reduced as `reduction` says (batchmean: the sum over `batch`)."""
    if reduction == "mean":
        return np.asarray(term.mean())
    if reduction == "sum":
        return np.asarray(term.sum())
    if reduction == "batchmean":
        return np.asarray(term.sum() / batch)
    if reduction == "none":
        return term
    raise OpError(f"reduction '{reduction}'")


def _pointwise(term: Any) -> Reference:
    """A loss of (input, target) whose terms are elementwise: reduced with `reduction`, batchmean over
    the input's first axis."""
    def ref(p: np.ndarray, t: np.ndarray, reduction: str = "mean", **attrs: Any) -> np.ndarray:
        return reduce_loss(np.asarray(term(p, t, **attrs)), reduction, p.shape[0] if p.ndim else 1)
    return ref


def _smooth_l1(p: np.ndarray, t: np.ndarray, beta: float = 1.0, **_: Any) -> np.ndarray:
    d = np.abs(p - t)
    return np.asarray(d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta))


def _huber(p: np.ndarray, t: np.ndarray, delta: float = 1.0, **_: Any) -> np.ndarray:
    d = np.abs(p - t)
    return np.asarray(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)))


def _kl_div(inp: np.ndarray, t: np.ndarray, log_target: bool = False, **_: Any) -> np.ndarray:
    """The terms of KL(target || input) with the input given as log-probabilities (0 where target is 0)."""
    if log_target:
        return np.asarray(np.exp(t) * (t - inp))
    with np.errstate(divide="ignore", invalid="ignore"):
        tlogt = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
    return np.asarray(tlogt - t * inp)


def _pdist(u: np.ndarray, v: np.ndarray, p: float, eps: float) -> np.ndarray:
    d = np.abs(u - v + eps)
    if p == math.inf:
        return np.asarray(d.max(axis=-1))
    return np.asarray(np.sum(d**p, axis=-1) ** (1.0 / p))


def _triplet_ref(an: np.ndarray, po: np.ndarray, ne: np.ndarray, margin: float = 1.0, p: float = 2.0,
                 eps: float = 1e-6, swap: bool = False, reduction: str = "mean", **_: Any) -> np.ndarray:
    d_ap, d_an = _pdist(an, po, p, eps), _pdist(an, ne, p, eps)
    if swap:
        d_an = np.minimum(d_an, _pdist(po, ne, p, eps))
    return reduce_loss(np.maximum(d_ap - d_an + margin, 0.0), reduction)


def _cross_entropy_ref(x: np.ndarray, t: np.ndarray, reduction: str = "mean", label_smoothing: float | None = 0.0,
                       **_: Any) -> np.ndarray:
    """Class scores on axis 1 and integer targets (class weights and ignore_index are not modelled)."""
    m = x.max(axis=1, keepdims=True)
    logp = x - (np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m)
    nll = -np.take_along_axis(logp, np.expand_dims(t.astype(np.int64), 1), axis=1).squeeze(1)
    ls = label_smoothing or 0.0
    if ls:
        nll = (1 - ls) * nll - ls * logp.mean(axis=1)
    return reduce_loss(nll, reduction)


def _cosine_similarity_ref(x1: np.ndarray, x2: np.ndarray, dim: Any = 1, eps: float = 1e-8, **_: Any) -> np.ndarray:
    d = axis(dim, x1.ndim)
    n1 = np.maximum(np.sqrt(np.sum(x1 * x1, axis=d, keepdims=True)), eps)
    n2 = np.maximum(np.sqrt(np.sum(x2 * x2, axis=d, keepdims=True)), eps)
    return np.asarray(np.sum((x1 / n1) * (x2 / n2), axis=d))


_LEGACY = ("size_average", "reduce", "reduction")
"""A loss function's last parameters: the legacy size_average / reduce flags, then reduction."""
_TAIL = (("size_average", None), ("reduce", None), ("reduction", "mean"))
"""The loss modules' last parameters, with torch's defaults."""


def _kl_terms(a: Mapping[str, Any], p: str, t: str) -> tuple[str, str]:
    """kl_div's pointwise term and its direction in words (`p` names the first argument's input): both
    depend on the transform the input came through and on log_target."""
    tf = a.get("input_transform")
    if tf == "log":
        q, qlog = p, f"log {p}"
    elif tf == "log_softmax":
        q, qlog = f"softmax({p})", f"log_softmax({p})"
    elif tf is None:
        q, qlog = f"exp({p})", p
    else:
        q, qlog = f"{tf}({p})", f"log {tf}({p})"
    if a.get("log_target"):
        return f"exp({t}) * ({t} - {qlog})", f"KL(exp({t}) || {q})"
    return f"{t} * (log {t} - {qlog})", f"KL({t} || {q})"


Term = Callable[[Mapping[str, Any], str, str], tuple[str, "str | None"]]
"""(the call's arguments, the first operand as indexed, the second) -> the loss's pointwise term, and which
operand plays which part in words (None: the formula says it)."""


def _termwise(name: str, term: Term, asymmetric: Callable[[], bool], broadcasts: bool = False,
              mean_note: str = "") -> StatisticOf:
    """A loss that sums a pointwise term of its two inputs, then scales the sum by its reduction (mean,
    sum, batchmean) or keeps every term (none). `broadcasts`: inputs of different shapes broadcast by the
    ordinary rules (a hinge written out); else torch warns, and the contract asks the user to confirm."""
    def statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
        if len(ops) < 2:
            raise OpError(f"{name} needs two tensors")
        (x, sx), (y, sy) = ((o.name, o.shape) for o in ops[:2])
        shape, unknown = sx, {}
        if sx != sy:
            joint = _joint_shape(sx, sy) if broadcasts else None
            if joint is None:
                unknown["output_shape"] = f"{name} of shapes {sx} and {sy} broadcasts"
            else:
                shape = joint
        rank, numel = len(shape), math.prod(shape)
        letters = index_letters(rank)
        sub = "".join(letters)
        # a broadcast operand is indexed by the trailing letters it has
        p, t = (f"{n}_{''.join(letters[rank - len(sh):])}" if sh else n for n, sh in ((x, sx), (y, sy)))
        body, direction = term(a, p, t)
        if direction is not None:  # said with the operands' own names
            direction = term(a, x, y)[1]
        red = a.get("reduction", "mean")
        everything = tuple(range(rank))
        roles: dict[str, Any] = {"asymmetric": direction is not None or asymmetric(), "direction": direction}
        if red == "mean" and mean_note:
            unknown.setdefault("reduction", mean_note)
        if red == "batchmean":
            batch = shape[0] if rank else 1
            return Statistic("sum", everything, False, "batchmean", batch,
                             f"sum_{sub} {body} / {batch}  (batchmean: divided by the batch size)", unknown,
                             output_shape=(), **roles)
        if red == "mean":
            return Statistic("mean", everything, False, "mean", numel,
                             f"sum_{sub} {body} / {numel}  (mean over all {numel} elements)", unknown,
                             output_shape=(), **roles)
        if red == "sum":
            return Statistic("sum", everything, False, "sum", None, f"sum_{sub} {body}", unknown,
                             output_shape=(), **roles)
        if red == "none":
            return Statistic("", everything, False, "none", None, f"out_{sub} = {body}  (no reduction)", unknown,
                             output_shape=shape, **roles)
        raise OpError(f"reduction={red!r} is not one of mean, sum, batchmean, none")
    return statistic


def _joint_shape(a: Shape, b: Shape) -> Shape | None:
    try:
        return broadcast([a, b])
    except OpError:
        return None


def _formula_term(formula: str, defaults: Mapping[str, Any]) -> Term:
    """The term an entry's formula writes (`({x} - {y})^2`), its parameters filled in."""
    def term(a: Mapping[str, Any], p: str, t: str) -> tuple[str, str | None]:
        given = {k: shown(v) for k, v in {**defaults, **a}.items() if v is not None}
        return formula.format(**{**given, "x": p, "y": t}), None
    return term


# ------------------------------------------------------------------ the contract's statistic
def _triplet_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    """Per sample the distance to the positive minus the distance to the negative plus the margin, floored
    at 0 (the distances over the last axis first), then the reduction over the samples."""
    if len(ops) < 3:
        raise OpError("triplet_margin_loss needs anchor, positive and negative")
    an, po, ne = (o.name for o in ops[:3])
    shape = ops[0].shape
    pnorm, eps, margin, red = a.get("p", 2.0), a.get("eps", 1e-6), a.get("margin", 1.0), a.get("reduction", "mean")
    last = len(shape) - 1
    outer = tuple(range(last))
    per = f"max(d({an}_i, {po}_i) - d({an}_i, {ne}_i) + {shown(margin)}, 0)"
    dist = f"d(u, v) = ||u - v + {shown(eps)}||_{shown(pnorm)} over axis {last} (size {shape[last]})"
    if a.get("swap"):
        per = per.replace(f"d({an}_i, {ne}_i)", f"min(d({an}_i, {ne}_i), d({po}_i, {ne}_i))")
    roles = (f"'{an}' is the anchor: pulled towards '{po}' (positive) and pushed away from '{ne}' (negative); "
             f"swapping '{po}' and '{ne}' changes the loss")
    count = math.prod(shape[:last]) if outer else 1
    if red == "mean":
        return Statistic("mean", outer, False, "mean", count, f"sum_i {per} / {count}, {dist}",
                         inner=("pairwise_distance", (last,)), output_shape=(), asymmetric=True, direction=roles)
    if red == "sum":
        return Statistic("sum", outer, False, "sum", None, f"sum_i {per}, {dist}",
                         inner=("pairwise_distance", (last,)), output_shape=(), asymmetric=True, direction=roles)
    return Statistic("pairwise_distance", (last,), False, "none", None, f"out_i = {per}, {dist}",
                     output_shape=shape[:last], asymmetric=True, direction=roles)


def _cosine_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    """The cosine of the two inputs along dim; one minus it, reduced over the rest, as a loss."""
    if len(ops) < 2:
        raise OpError("cosine_similarity needs two tensors")
    shape = ops[0].shape
    rank = len(shape)
    axes = axes_of(a.get("dim", 1), rank)
    if axes is None or len(axes) != 1:
        raise OpError(f"dim={a.get('dim')!r} is not an axis of a rank-{rank} input")
    (d,) = axes
    x1, x2 = ops[0].name, ops[1].name
    cos = (f"cos_i = sum_d {x1}*{x2} / max(||{x1}|| * ||{x2}||, {shown(a.get('eps', 1e-8))}) over axis {d}")
    rest = tuple(i for i in range(rank) if i != d)
    if a.get("reduction") in ("mean", "sum"):
        count = math.prod(shape[i] for i in rest) if rest else 1
        mean = a["reduction"] == "mean"
        div = f" / {count}" if mean else ""
        return Statistic("mean" if mean else "sum", rest, False, "mean" if mean else "sum", count if mean else None,
                         f"sum_i ({shown(a.get('offset', 1))} - cos_i){div}, {cos}", inner=("cosine_similarity", axes),
                         output_shape=())
    return Statistic("cosine_similarity", axes, False, "none", None, cos,
                     output_shape=tuple(s for i, s in enumerate(shape) if i != d))


def _cross_entropy_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    """Minus the log-softmax of the logits at each sample's class, reduced over the samples (the classes
    are axis 1)."""
    shape, red = ops[0].shape, a.get("reduction", "mean")
    rank = len(shape)
    logits, target = ops[0].name, ops[1].name if len(ops) > 1 else "target"
    if rank < 2:
        raise OpError("cross_entropy expects (N, C) logits")
    rest = tuple(i for i in range(rank) if i != 1)
    count = math.prod(shape[i] for i in rest)
    scaling = red if red in ("mean", "sum") else "none"
    div = f" / {count}" if red == "mean" else ""
    return Statistic(scaling, rest, False, scaling, count if red == "mean" else None,
                     f"-sum_i log_softmax({logits}_i)[{target}_i]{div}  ({shape[1]} classes; targets outside "
                     f"[0, {shape[1]}) such as ignore_index are not excluded)", refused=_cross_entropy_limits(ops, a),
                     inner=("log_softmax", (1,)), output_shape=() if red != "none" else tuple(shape[i] for i in rest),
                     asymmetric=True, direction=f"'{logits}' are logits, '{target}' class indices")


def _cross_entropy_limits(ops: Sequence[Operand], a: Mapping[str, Any]) -> str:
    """Why a cross-entropy is not scaffolded ("" when it is): (N, C) logits, class-index targets,
    no class weights or label smoothing, reduced to one value (LOSS.cross-entropy-gather)."""
    red = a.get("reduction", "mean")
    if len(ops[0].shape) != 2:
        return "cross_entropy is scaffolded for (N, C) logits; spatial targets (N, C, d1, ...) are not"
    if len(ops) > 1 and ops[1].dtype is not None and ops[1].dtype not in INDEX_DTYPES:
        return "cross_entropy with class probabilities as targets is not scaffolded (class indices are)"
    if a.get("weight") is not None:
        return "cross_entropy with class weights is not scaffolded"
    if a.get("label_smoothing"):
        return "cross_entropy with label smoothing is not scaffolded"
    if red not in ("mean", "sum"):
        return f"cross_entropy with reduction={red!r} returns a tensor; mean and sum are scaffolded"
    return ""


# ------------------------------------------------------------------ written-out forms (ops/idiom.py)
_A, _B = Tensor("a"), Tensor("b")
_MARGIN = Call(("sub",), (Const("margin"), Call(("mul",), (_A, _B))))


def _averaged(body: Form) -> Call:
    """mean(body) or sum(body) over every axis: the loss's reduction is the call's name."""
    return Call(("mean", "sum"), (body,), "reduce")


def _reduced_as(m: Match, **more: Any) -> dict[str, Any] | None:
    return {"reduction": m.name("reduce"), **more} if m.whole("reduce") else None


def _at_zero(m: Match) -> bool:
    """clamp(.., min=0) with no max, clamp_min(.., 0), or relu: the hinge's floor."""
    if "clamp" not in m.calls:
        return True
    bounds = m.params("clamp", "min", "max")
    return bounds.get("min") == 0 and bounds.get("max") is None and "op_args.max" not in m.unknown


def _one_minus_cosine(m: Match) -> dict[str, Any] | None:
    if not m.whole("reduce"):
        return None
    red, offset = m.name("reduce"), m.consts["offset"]
    return {**m.params("cos", "dim", "eps"), "form": f"{red}({offset} - cos)", "reduction": red, "offset": offset}


_PAIR = ("a", "b")
_MSE = (Idiom(_averaged(square(Call(("sub",), (_A, _B)))), _reduced_as, _PAIR),)  # mean((a - b) ** 2)
_L1 = (Idiom(_averaged(Call(("abs",), (Call(("sub",), (_A, _B)),))), _reduced_as, _PAIR),)  # mean(|a - b|)
_HINGE = (  # mean(clamp(margin - a * b, min=0)), mean(relu(margin - a * b))
    Idiom(_averaged(Either((Call(("clamp", "clamp_min"), (_MARGIN,), "clamp"), Call(("relu",), (_MARGIN,))))),
          lambda m: _reduced_as(m, margin=m.consts["margin"]) if _at_zero(m) else None, _PAIR),
)
_COSINE = (  # mean(1 - cosine_similarity(a, b, dim, eps)): a loss
    Idiom(_averaged(Call(("sub",), (Const("offset"), Call(("cosine_similarity",), (_A, _B), "cos")))),
          _one_minus_cosine, _PAIR, family="loss"),
)


def _loss(name: str, shape: Any, modules: tuple[str, ...] = (), params: tuple[str, ...] = _LEGACY,
          arity: int = 2, reference: Reference | None = None, functions: tuple[str, ...] | None = None,
          signature: tuple[tuple[str, Any], ...] = (), inputs: tuple[str, ...] = ("input", "target"),
          defaults: Mapping[str, Any] | None = None, formula: str = "", idioms: tuple[Idiom, ...] = (),
          input_transforms: tuple[str, ...] = (), statistic: StatisticOf | None = None) -> OpKind:
    given = {"reduction": "mean", **(defaults or {})}
    kind = OpKind(name, "loss", shape, reference, functions=(name,) if functions is None else functions,
                  modules=modules, params=params, arity=arity, pattern="D", module_signature=signature,
                  inputs=inputs, defaults=given, formula=formula, idioms=idioms,
                  input_transforms=input_transforms, statistic=statistic)
    if statistic is None and formula and arity == 2:  # a sum of the formula's term
        swaps = functools.cache(lambda: not commutes(kind))  # numpy on the reference: once per kind, not per edit
        kind = replace(kind, statistic=_termwise(name, _formula_term(formula, given), swaps,
                                                 broadcasts=not kind.functions))
    return kind


KINDS = (
    _loss("mse_loss", _reduced, ("MSELoss",), reference=_pointwise(lambda p, t, **_: (p - t) ** 2), signature=_TAIL,
          formula="({x} - {y})^2", idioms=_MSE),
    _loss("l1_loss", _reduced, ("L1Loss",), reference=_pointwise(lambda p, t, **_: np.abs(p - t)), signature=_TAIL,
          formula="|{x} - {y}|", idioms=_L1),
    _loss("smooth_l1_loss", _reduced, ("SmoothL1Loss",), (*_LEGACY, "beta"), reference=_pointwise(_smooth_l1),
          signature=(*_TAIL, ("beta", 1.0)), defaults={"beta": 1.0}, formula="smooth_l1({x} - {y}; beta={beta})"),
    _loss("huber_loss", _reduced, ("HuberLoss",), ("reduction", "delta"), reference=_pointwise(_huber),
          signature=(("reduction", "mean"), ("delta", 1.0)), defaults={"delta": 1.0},
          formula="huber({x} - {y}; delta={delta})"),
    _loss("kl_div", _reduced, ("KLDivLoss",), (*_LEGACY, "log_target"), reference=_pointwise(_kl_div),
          signature=(*_TAIL, ("log_target", False)), defaults={"log_target": False},
          input_transforms=("log", "exp", "sigmoid", "log_softmax", "softmax"),
          statistic=_termwise("kl_div", _kl_terms, lambda: True,
                              mean_note="kl_div with reduction='mean' divides by the element count, not the batch "
                                        "(torch warns); confirm it is intended")),
    _loss("cross_entropy", _cross_entropy, ("CrossEntropyLoss",),
          ("weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"),
          reference=_cross_entropy_ref,
          signature=(("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                     ("reduction", "mean"), ("label_smoothing", 0.0)),
          defaults={"ignore_index": -100, "label_smoothing": 0.0}, statistic=_cross_entropy_statistic),
    _loss("hinge_embedding_loss", _reduced, ("HingeEmbeddingLoss",), ("margin", *_LEGACY),
          signature=(("margin", 1.0), *_TAIL), defaults={"margin": 1.0}),
    # the broadcast hinge the contract reads written out, mean(clamp(margin - input * target, min=0)):
    # no torch spelling (F.hinge_embedding_loss is another loss)
    _loss("hinge_loss", _reduced, (), ("margin", *_LEGACY), functions=(), defaults={"margin": 1.0},
          reference=_pointwise(lambda p, t, margin=1.0, **_: np.maximum(margin - p * t, 0.0)),
          formula="max({margin} - {x} * {y}, 0)", idioms=_HINGE),
    _loss("cosine_embedding_loss", _triplet, ("CosineEmbeddingLoss",), ("margin", *_LEGACY), 3,
          signature=(("margin", 0.0), *_TAIL), inputs=("input1", "input2", "target"), defaults={"margin": 0.0}),
    _loss("triplet_margin_loss", _triplet, ("TripletMarginLoss",), ("margin", "p", "eps", "swap", *_LEGACY), 3,
          reference=_triplet_ref, inputs=("anchor", "positive", "negative"),
          signature=(("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False), *_TAIL),
          defaults={"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False}, statistic=_triplet_statistic),
    # a similarity, not a loss, in a graph; the loss pattern (D) writes it, alone or as mean(1 - cos)
    OpKind("cosine_similarity", "reduction", _cosine_similarity, _cosine_similarity_ref,
           functions=("cosine_similarity",), modules=("CosineSimilarity",), params=("dim", "eps"), arity=2,
           pattern="D", module_signature=(("dim", 1), ("eps", 1e-8)), inputs=("x1", "x2"),
           defaults={"dim": 1, "eps": 1e-8}, idioms=_COSINE, statistic=_cosine_statistic),
    OpKind("pairwise_distance", "reduction", _pairwise, None, functions=("pairwise_distance",),
           modules=("PairwiseDistance",), params=("p", "eps", "keepdim"), arity=2, inputs=("x1", "x2")),
)
