"""Losses and similarity: each reduces (mean, sum, batchmean) or keeps the per-element values
(`reduction='none'`). The contract's level-1 family reads the loss's arguments; the registry gives
the shape a loss passes on in a graph (a loss written out as an expression, `1 - cos(a, b)`
averaged, is a graph of elementwise nodes and a reduction, not an entry here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.ops.base import OpError, OpKind, Shape, axis, broadcast


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


def _loss(name: str, shape: Any, modules: tuple[str, ...] = (), params: tuple[str, ...] = ("reduction",),
          arity: int = 2) -> OpKind:
    return OpKind(name, "loss", shape, None, functions=(name,), modules=modules, params=params, arity=arity,
                  pattern="D")


KINDS = (
    _loss("mse_loss", _reduced, ("MSELoss",)), _loss("l1_loss", _reduced, ("L1Loss",)),
    _loss("smooth_l1_loss", _reduced, ("SmoothL1Loss",), ("reduction", "beta")),
    _loss("huber_loss", _reduced, ("HuberLoss",), ("reduction", "delta")),
    _loss("kl_div", _reduced, ("KLDivLoss",), ("reduction", "log_target")),
    _loss("cross_entropy", _cross_entropy, ("CrossEntropyLoss",), ("weight", "ignore_index", "reduction",
                                                                   "label_smoothing")),
    _loss("hinge_embedding_loss", _reduced, ("HingeEmbeddingLoss",), ("margin", "reduction")),
    _loss("cosine_embedding_loss", _triplet, ("CosineEmbeddingLoss",), ("margin", "reduction"), 3),
    _loss("triplet_margin_loss", _triplet, ("TripletMarginLoss",), ("margin", "p", "eps", "swap", "reduction"), 3),
    OpKind("cosine_similarity", "reduction", _cosine_similarity, None, functions=("cosine_similarity",),
           modules=("CosineSimilarity",), params=("dim", "eps"), arity=2),
    OpKind("pairwise_distance", "reduction", _pairwise, None, functions=("pairwise_distance",),
           modules=("PairwiseDistance",), params=("p", "eps", "keepdim"), arity=2),
)
