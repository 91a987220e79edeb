"""Parameter lists and defaults of the torch APIs the contract reads, as data.

A static reader cannot ask torch how `nn.GroupNorm(8, 64)` binds its arguments, so the
signatures it needs are written down here (torch 2.x). Binding by these tables is what makes
positional and keyword calls give the same contract (P0.api-semantics: read the call, not the
names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.ops import base as ops_base
from pypto_tui.ops.registry import REGISTRY

_REQ = object()  # marks a required parameter
REQUIRED = _REQ

_LOSS_TAIL = (("size_average", None), ("reduce", None), ("reduction", "mean"))


def _elementwise_rows() -> tuple[dict[str, tuple[tuple[str, Any], ...]], dict[str, tuple[str, ...]],
                                 dict[str, dict[str, Any]]]:
    """The elementwise kinds' rows, read from their registry entries (a new activation is one entry
    there): each module type's constructor, each unary kind's call (the tensor, then its parameters in
    torch's order) and torch's defaults for them."""
    kinds = [k for k in REGISTRY.values() if k.is_elementwise]
    modules = {m: tuple((p, _REQ if d is ops_base.REQUIRED else d) for p, d in k.module_signature)
               for k in kinds for m in k.modules}
    calls = {k.name: ("input", *k.params) for k in kinds if k.arity == 1 and k.params}
    defaults = {k.name: dict(k.defaults) for k in kinds if k.defaults}
    return modules, calls, defaults


_ELEMENTWISE_MODULES, _ELEMENTWISE_CALLS, _ELEMENTWISE_DEFAULTS = _elementwise_rows()

# nn module constructors: type -> ((param, default), ...). REQUIRED marks required ones.
MODULE_SIGS: dict[str, tuple[tuple[str, Any], ...]] = {
    **{f"BatchNorm{d}d": (("num_features", _REQ), ("eps", 1e-5), ("momentum", 0.1), ("affine", True),
                          ("track_running_stats", True)) for d in (1, 2, 3)},
    **{f"InstanceNorm{d}d": (("num_features", _REQ), ("eps", 1e-5), ("momentum", 0.1), ("affine", False),
                             ("track_running_stats", False)) for d in (1, 2, 3)},
    "GroupNorm": (("num_groups", _REQ), ("num_channels", _REQ), ("eps", 1e-5), ("affine", True)),
    "LayerNorm": (("normalized_shape", _REQ), ("eps", 1e-5), ("elementwise_affine", True), ("bias", True)),
    "RMSNorm": (("normalized_shape", _REQ), ("eps", None), ("elementwise_affine", True)),
    "MSELoss": _LOSS_TAIL,
    "L1Loss": _LOSS_TAIL,
    "SmoothL1Loss": (*_LOSS_TAIL, ("beta", 1.0)),
    "HuberLoss": (("reduction", "mean"), ("delta", 1.0)),
    "KLDivLoss": (*_LOSS_TAIL, ("log_target", False)),
    "TripletMarginLoss": (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False), *_LOSS_TAIL),
    "CrossEntropyLoss": (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                         ("reduction", "mean"), ("label_smoothing", 0.0)),
    "HingeEmbeddingLoss": (("margin", 1.0), *_LOSS_TAIL),
    "CosineEmbeddingLoss": (("margin", 0.0), *_LOSS_TAIL),
    "CosineSimilarity": (("dim", 1), ("eps", 1e-8)),
    **_ELEMENTWISE_MODULES,
    "Softmax": (("dim", None),),
    "LogSoftmax": (("dim", None),),
    # conv and pool modules: torch's parameter order (AvgPool1d has no divisor_override)
    **{f"Conv{d}d": (("in_channels", _REQ), ("out_channels", _REQ), ("kernel_size", _REQ), ("stride", 1),
                     ("padding", 0), ("dilation", 1), ("groups", 1), ("bias", True), ("padding_mode", "zeros"),
                     ("device", None), ("dtype", None)) for d in (1, 2, 3)},
    **{f"ConvTranspose{d}d": (("in_channels", _REQ), ("out_channels", _REQ), ("kernel_size", _REQ),
                              ("stride", 1), ("padding", 0), ("output_padding", 0), ("groups", 1),
                              ("bias", True), ("dilation", 1), ("padding_mode", "zeros"), ("device", None),
                              ("dtype", None)) for d in (1, 2, 3)},
    **{f"MaxPool{d}d": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("dilation", 1),
                        ("return_indices", False), ("ceil_mode", False)) for d in (1, 2, 3)},
    "AvgPool1d": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("ceil_mode", False),
                  ("count_include_pad", True)),
    **{f"AvgPool{d}d": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("ceil_mode", False),
                        ("count_include_pad", True), ("divisor_override", None)) for d in (2, 3)},
    **{f"Adaptive{k}Pool{d}d": (("output_size", _REQ),) for k in ("Avg", "Max") for d in (1, 2, 3)},
    "MultiheadAttention": (("embed_dim", _REQ), ("num_heads", _REQ), ("dropout", 0.0), ("bias", True)),
    "Linear": (("in_features", _REQ), ("out_features", _REQ), ("bias", True)),
    "Flatten": (("start_dim", 1), ("end_dim", -1)),
}

_RED = ("input", "dim", "keepdim")
_LOSS2 = ("input", "target", "size_average", "reduce", "reduction")

# Functions and tensor methods: canonical name -> positional parameter order (defaults below).
FUNC_SIGS: dict[str, tuple[str, ...]] = {
    **_ELEMENTWISE_CALLS,
    "softmax": ("input", "dim", "_stacklevel", "dtype"),
    "log_softmax": ("input", "dim", "_stacklevel", "dtype"),
    "sum": ("input", "dim", "keepdim", "dtype"), "mean": ("input", "dim", "keepdim", "dtype"),
    "prod": ("input", "dim", "keepdim", "dtype"), "nansum": ("input", "dim", "keepdim"),
    "max": _RED, "min": _RED, "amax": _RED, "amin": _RED, "argmax": _RED, "argmin": _RED,
    "logsumexp": _RED,
    "var": ("input", "dim", "unbiased", "keepdim"), "std": ("input", "dim", "unbiased", "keepdim"),
    "norm": ("input", "p", "dim", "keepdim", "out", "dtype"),
    "linalg.norm": ("input", "ord", "dim", "keepdim"),
    "linalg.vector_norm": ("input", "ord", "dim", "keepdim"),
    "cumsum": ("input", "dim"), "cumprod": ("input", "dim"), "cummax": ("input", "dim"),
    "cummin": ("input", "dim"), "logcumsumexp": ("input", "dim"),
    "narrow": ("input", "dim", "start", "length"), "select": ("input", "dim", "index"),
    "unsqueeze": ("input", "dim"), "squeeze": ("input", "dim"), "expand": ("input", "size"),
    "kl_div": (*_LOSS2, "log_target"),
    "mse_loss": _LOSS2, "l1_loss": _LOSS2,
    "smooth_l1_loss": (*_LOSS2, "beta"),
    "huber_loss": ("input", "target", "reduction", "delta"),
    "triplet_margin_loss": ("anchor", "positive", "negative", "margin", "p", "eps", "swap",
                            "size_average", "reduce", "reduction"),
    "cosine_similarity": ("x1", "x2", "dim", "eps"),
    "cross_entropy": ("input", "target", "weight", "size_average", "ignore_index", "reduce",
                      "reduction", "label_smoothing"),
    "hinge_embedding_loss": ("input", "target", "margin", "size_average", "reduce", "reduction"),
    "batch_norm": ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"),
    "instance_norm": ("input", "running_mean", "running_var", "weight", "bias", "use_input_stats",
                      "momentum", "eps"),
    "layer_norm": ("input", "normalized_shape", "weight", "bias", "eps"),
    "group_norm": ("input", "num_groups", "weight", "bias", "eps"),
    "rms_norm": ("input", "normalized_shape", "weight", "eps"),
    "normalize": ("input", "p", "dim", "eps"),
    "matmul": ("input", "other"), "mm": ("input", "mat2"), "bmm": ("input", "mat2"),
    "mv": ("input", "vec"),
    "tril": ("input", "diagonal"), "triu": ("input", "diagonal"),
    "diag": ("input", "diagonal"),
    "transpose": ("input", "dim0", "dim1"),
    "pow": ("input", "exponent"),
    "scaled_dot_product_attention": ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale"),
    # conv and pool functions (torch.nn.functional), torch's parameter order
    **{f"conv{d}d": ("input", "weight", "bias", "stride", "padding", "dilation", "groups") for d in (1, 2, 3)},
    **{f"conv_transpose{d}d": ("input", "weight", "bias", "stride", "padding", "output_padding", "groups",
                               "dilation") for d in (1, 2, 3)},
    **{f"max_pool{d}d": ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
       for d in (1, 2, 3)},
    "avg_pool1d": ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"),
    **{f"avg_pool{d}d": ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                         "divisor_override") for d in (2, 3)},
}

FUNC_DEFAULTS: dict[str, dict[str, Any]] = {
    **_ELEMENTWISE_DEFAULTS,
    "kl_div": {"reduction": "mean", "log_target": False},
    "mse_loss": {"reduction": "mean"}, "l1_loss": {"reduction": "mean"},
    "smooth_l1_loss": {"reduction": "mean", "beta": 1.0},
    "huber_loss": {"reduction": "mean", "delta": 1.0},
    "triplet_margin_loss": {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False, "reduction": "mean"},
    "cosine_similarity": {"dim": 1, "eps": 1e-8},
    "cross_entropy": {"reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0},
    "hinge_embedding_loss": {"margin": 1.0, "reduction": "mean"},
    "batch_norm": {"training": False, "momentum": 0.1, "eps": 1e-5},
    "instance_norm": {"use_input_stats": True, "momentum": 0.1, "eps": 1e-5},
    "layer_norm": {"eps": 1e-5}, "group_norm": {"eps": 1e-5}, "rms_norm": {"eps": None},
    "normalize": {"p": 2.0, "dim": 1, "eps": 1e-12},
    "sum": {"dim": None, "keepdim": False}, "mean": {"dim": None, "keepdim": False},
    "prod": {"dim": None, "keepdim": False}, "nansum": {"dim": None, "keepdim": False},
    "max": {"dim": None, "keepdim": False}, "min": {"dim": None, "keepdim": False},
    "amax": {"dim": (), "keepdim": False}, "amin": {"dim": (), "keepdim": False},
    "argmax": {"dim": None, "keepdim": False}, "argmin": {"dim": None, "keepdim": False},
    "logsumexp": {"keepdim": False},
    "var": {"dim": None, "unbiased": True, "keepdim": False},
    "std": {"dim": None, "unbiased": True, "keepdim": False},
    "norm": {"p": "fro", "dim": None, "keepdim": False},
    "linalg.norm": {"ord": None, "dim": None, "keepdim": False},
    "linalg.vector_norm": {"ord": 2, "dim": None, "keepdim": False},
    "tril": {"diagonal": 0}, "triu": {"diagonal": 0}, "diag": {"diagonal": 0},
    "softmax": {"dim": None}, "log_softmax": {"dim": None},
    # conv and pool functions
    **{f"conv{d}d": {"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1} for d in (1, 2, 3)},
    **{f"conv_transpose{d}d": {"bias": None, "stride": 1, "padding": 0, "output_padding": 0, "groups": 1,
                               "dilation": 1} for d in (1, 2, 3)},
    **{f"max_pool{d}d": {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False,
                         "return_indices": False} for d in (1, 2, 3)},
    **{f"avg_pool{d}d": {"stride": None, "padding": 0, "ceil_mode": False, "count_include_pad": True,
                         "divisor_override": None} for d in (1, 2, 3)},
}


def bind(params: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any],
         defaults: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Bind positional and keyword arguments to `params`. Returns (bound, problems)."""
    bound: dict[str, Any] = dict(defaults or {})
    problems: list[str] = []
    for i, a in enumerate(args):
        if i < len(params):
            bound[params[i]] = a
        else:
            problems.append(f"extra positional argument #{i + 1}")
    for k, v in kwargs.items():
        if k in params or not params:
            bound[k] = v
        else:
            bound[k] = v
            problems.append(f"unexpected keyword '{k}'")
    return bound, problems


def bind_module(type_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Bind an nn module constructor call; missing required parameters are reported."""
    sig = MODULE_SIGS.get(type_name)
    if sig is None:
        bound = {f"arg{i}": a for i, a in enumerate(args)}
        bound.update(kwargs)
        return bound, [f"nn.{type_name} is not in the signature table"]
    params = [p for p, _ in sig]
    defaults = {p: d for p, d in sig if d is not _REQ}
    bound, problems = bind(params, args, kwargs, defaults)
    for p, d in sig:
        if d is _REQ and p not in bound:
            problems.append(f"missing required argument '{p}'")
    return bound, problems
