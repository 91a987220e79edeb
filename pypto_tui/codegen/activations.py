"""Elementwise operators written with the ops pypto 0.2.0 has, as `Ex` builders.

Each entry turns one input expression (and the op's scalar parameters, already bound to closure
names or literals) into a pypto expression. Ops pypto lacks are composed from ones it has:
tanh is `2 * sigmoid(2x) - 1` (0.2.0 has no `pypto.tanh`), softplus is the overflow-safe
`max(x, 0) + log1p(exp(-|x|))`. Ops that cannot be written exactly (gelu's erf) are absent, and
the caller reports them as unsupported with the reason from `UNSUPPORTED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pypto_tui.codegen.expr import Ex, call

Builder = Callable[[Ex, Mapping[str, Ex]], Ex]

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805

# Parameter defaults, as torch defines them (used when the contract does not carry a value).
DEFAULTS: dict[str, dict[str, Any]] = {
    "leaky_relu": {"negative_slope": 0.01},
    "elu": {"alpha": 1.0},
    "celu": {"alpha": 1.0},
    "softplus": {"beta": 1.0, "threshold": 20.0},
    "hardtanh": {"min_val": -1.0, "max_val": 1.0},
    "softshrink": {"lambd": 0.5},
    "hardshrink": {"lambd": 0.5},
    "clamp": {"min": None, "max": None},
    "clamp_min": {"min": None},
    "clamp_max": {"max": None},
}

UNSUPPORTED: dict[str, str] = {
    "gelu": "GELU inside a larger expression is not scaffolded (F.gelu(x) on its own is: GELU.exact-erf)",
    "erf": "pypto 0.2.0 has no erf",
    "hardshrink": "needs a comparison mask (where(|x| > lambd, x, 0)); not scaffolded yet",
    "round": "pypto.round takes rank-2..4 tensors only (measured with 0.2.0) and pattern A is 1-D",
}


def _tanh(x: Ex) -> Ex:
    return call("sigmoid", x * 2.0) * 2.0 - 1.0


def _softplus(x: Ex, beta: Ex | None = None) -> Ex:
    bx = x if beta is None or beta.value == 1 else x * beta
    out = call("maximum", bx, 0.0) + call("log1p", call("exp", call("abs", bx) * (-1.0)))
    return out if beta is None or beta.value == 1 else out / beta


def _clamp(x: Ex, lo: Ex | None, hi: Ex | None) -> Ex:
    """None means no bound on that side (torch.clamp's convention); callers drop None params."""
    out = x
    if lo is not None:
        out = call("maximum", out, lo)
    if hi is not None:
        out = call("minimum", out, hi)
    return out


def _hardsigmoid(x: Ex) -> Ex:
    return call("minimum", call("maximum", x + 3.0, 0.0), 6.0) * (1.0 / 6.0)


def _gelu_exact(x: Ex) -> Ex:
    """Exact GELU inside an expression (GELU.exact-erf): erf by Abramowitz & Stegun 7.1.26 on
    |x| / sqrt(2), q = 1 - erf, then x - x q / 2 for x >= 0 and x q / 2 below; the same maths as
    the gelu_erf_terms template, written as one expression (t is recomputed where it recurs)."""
    z = call("abs", x) * 0.7071067811865476
    t = call("reciprocal", z * 0.3275911 + 1.0)
    poly = (((t * 1.061405429 + (-1.453152027)) * t + 1.421413741) * t + (-0.284496736)) * t + 0.254829592
    q = poly * t * call("exp", z * z * (-1.0))
    return call("where", call("ge", x, 0.0), x - x * q * 0.5, x * q * 0.5)


ACTIVATIONS: dict[str, Builder] = {
    "gelu": lambda x, p: _gelu_exact(x),
    "relu": lambda x, p: call("maximum", x, 0.0),
    "relu6": lambda x, p: call("minimum", call("maximum", x, 0.0), 6.0),
    "leaky_relu": lambda x, p: call("maximum", x, 0.0) + call("minimum", x, 0.0) * p["negative_slope"],
    "elu": lambda x, p: call("maximum", x, 0.0) + (call("exp", call("minimum", x, 0.0)) - 1.0) * p["alpha"],
    "celu": lambda x, p: call("maximum", x, 0.0)
    + (call("exp", call("minimum", x, 0.0) / p["alpha"]) - 1.0) * p["alpha"],
    "selu": lambda x, p: (call("maximum", x, 0.0) + (call("exp", call("minimum", x, 0.0)) - 1.0) * SELU_ALPHA)
    * SELU_SCALE,
    "sigmoid": lambda x, p: call("sigmoid", x),
    "tanh": lambda x, p: _tanh(x),
    "softplus": lambda x, p: _softplus(x, p.get("beta")),
    "softsign": lambda x, p: x / (call("abs", x) + 1.0),
    "hardtanh": lambda x, p: _clamp(x, p["min_val"], p["max_val"]),
    "hardsigmoid": lambda x, p: _hardsigmoid(x),
    "hardswish": lambda x, p: x * _hardsigmoid(x),
    "swish": lambda x, p: x * call("sigmoid", x),
    "silu": lambda x, p: x * call("sigmoid", x),
    "mish": lambda x, p: x * _tanh(_softplus(x)),
    "logsigmoid": lambda x, p: call("minimum", x, 0.0) - call("log1p", call("exp", call("abs", x) * (-1.0))),
    "softshrink": lambda x, p: x - _clamp(x, -p["lambd"], p["lambd"]),
    "tanhshrink": lambda x, p: x - _tanh(x),
    "exp": lambda x, p: call("exp", x),
    "log": lambda x, p: call("log", x),
    "abs": lambda x, p: call("abs", x),
    "neg": lambda x, p: -x,
    "sqrt": lambda x, p: call("sqrt", x),
    "rsqrt": lambda x, p: call("rsqrt", x),
    "square": lambda x, p: x * x,
    "reciprocal": lambda x, p: call("reciprocal", x),
    "sin": lambda x, p: call("sin", x),
    "cos": lambda x, p: call("cos", x),
    "log1p": lambda x, p: call("log1p", x),
    # pypto.expm1 only takes rank 2..4 and pattern A is 1-D: exp(x) - 1, as the documents' ELU does
    "expm1": lambda x, p: call("exp", x) - 1.0,
    "sign": lambda x, p: call("sign", x),
    "floor": lambda x, p: call("floor", x),
    "ceil": lambda x, p: call("ceil", x),
    "clamp": lambda x, p: _clamp(x, p.get("min"), p.get("max")),
    "clamp_min": lambda x, p: _clamp(x, p.get("min"), None),
    "clamp_max": lambda x, p: _clamp(x, None, p.get("max")),
    # identity-like calls that can appear inside expressions
    "float": lambda x, p: x,
    "contiguous": lambda x, p: x,
    "clone": lambda x, p: x,
    "detach": lambda x, p: x,
}

SCALAR_PARAMS: dict[str, tuple[str, ...]] = {
    "leaky_relu": ("negative_slope",), "elu": ("alpha",), "celu": ("alpha",), "softplus": ("beta",),
    "hardtanh": ("min_val", "max_val"), "softshrink": ("lambd",), "clamp": ("min", "max"),
    "clamp_min": ("min",), "clamp_max": ("max",),
}


def supports(op: str | None) -> bool:
    return op in ACTIVATIONS


def why_not(op: str | None) -> str:
    if op in UNSUPPORTED:
        return UNSUPPORTED[op]  # type: ignore[index]
    return f"no pypto form for the elementwise op '{op}' yet"
