"""The elementwise kernel forms live in the registry (`OpKind.render`): each one, written out as
pypto text and run on a numpy stand-in for pypto, computes what the kind's own numpy reference does,
and the code generator's adapter reads everything else (parameters, defaults, refusals) from the entry."""

from __future__ import annotations

import types

import numpy as np
import pytest

from pypto_tui.codegen import activations
from pypto_tui.codegen.expr import Ex, code
from pypto_tui.ops.registry import REGISTRY

RENDERED = [k for k in REGISTRY.values() if k.is_elementwise and k.render is not None]


def _cast(x: np.ndarray, dtype: str, mode: str | None = None) -> np.ndarray:
    """pypto.cast as 0.2.0 computes it: to an integer type it rounds unless a mode says otherwise."""
    if np.dtype(dtype).kind in "iu":
        x = np.trunc(x) if mode == "trunc" else np.rint(x)
    return x.astype(dtype)


def _numpy_pypto() -> types.SimpleNamespace:
    """The pypto functions the renders call, as numpy computes them."""
    return types.SimpleNamespace(
        cast=_cast, DT_INT32="int32", DT_INT8="int8", DT_FP32="float32",
        CastMode=types.SimpleNamespace(CAST_RINT="rint", CAST_TRUNC="trunc"),
        sigmoid=lambda x: 1 / (1 + np.exp(-x)), maximum=np.maximum, minimum=np.minimum, log1p=np.log1p,
        exp=np.exp, log=np.log, abs=np.abs, sqrt=np.sqrt, rsqrt=lambda x: 1 / np.sqrt(x),
        reciprocal=lambda x: 1 / x, sin=np.sin, cos=np.cos, sign=np.sign, floor=np.floor, ceil=np.ceil,
        where=np.where, pow=np.power, ge=np.greater_equal, gt=np.greater, le=np.less_equal, lt=np.less,
        eq=np.equal, ne=np.not_equal)


def _run(e: Ex, **tensors: np.ndarray) -> np.ndarray:
    return np.asarray(eval(code(e), {"pypto": _numpy_pypto(), **tensors}))  # our own generated text


@pytest.mark.parametrize("k", RENDERED, ids=lambda k: k.name)
def test_each_render_computes_its_kinds_reference(k):
    rng = np.random.default_rng(3)
    names = ["x", "y", "z"][: k.arity]
    arrays = {n: rng.standard_normal((5, 40)) * 3 for n in names}
    if k.name == "where":  # a mask, then the two branches
        arrays["x"] = arrays["x"] > 0
    if k.name in ("eq", "ne"):  # equal somewhere
        arrays["y"] = np.where(rng.random((5, 40)) < 0.5, arrays["x"], arrays["y"])
    if k.name in ("log", "sqrt", "rsqrt", "log1p"):
        arrays = {n: np.abs(a) + 0.1 for n, a in arrays.items()}
    if k.name == "pow":
        arrays = {"x": np.abs(arrays["x"]) + 0.1, "y": arrays["y"] / 3}
    params = {p: Ex.num(float(k.defaults[p])) for p in k.kernel_params if k.defaults.get(p) is not None}
    if k.name in ("clamp", "clamp_min", "clamp_max"):  # torch requires a bound: give both a value
        params = {p: Ex.num(v) for p, v in {"min": -0.5, "max": 0.7}.items() if p in k.kernel_params}
    got = _run(activations.render(k.name, [Ex.name(n) for n in names], params), **arrays)
    want = k.reference(*arrays.values(), **{p: v.value for p, v in params.items()})
    # exact GELU's erf is Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), scaled by x / 2 (|x| < 10 here)
    atol = 1e-6 if k.name == "gelu" else 2e-7
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=atol, err_msg=k.name)


def test_a_non_default_parameter_reaches_the_render():
    x = np.linspace(-3, 3, 13)
    k = REGISTRY["leaky_relu"]
    got = _run(activations.render("leaky_relu", [Ex.name("x")], {"negative_slope": Ex.num(0.3)}), x=x)
    np.testing.assert_allclose(got, k.reference(x, negative_slope=0.3))
    assert not np.allclose(got, k.reference(x))


def test_the_adapter_reads_parameters_defaults_and_refusals_from_the_entry():
    assert activations.kernel_params("softplus") == ("beta",)  # threshold does not change the kernel
    assert activations.defaults("hardtanh")["min_val"] == -1.0
    assert activations.supports("maximum") and activations.arity("maximum") == 2
    assert not activations.supports("erf") and activations.why_not("erf") == REGISTRY["erf"].unsupported
    assert "no pypto form" in activations.why_not("half")  # no render and no reason: the generic refusal
    assert not activations.supports("sum")  # an anchor is no elementwise render
    with pytest.raises(ValueError, match="erf"):
        activations.render("erf", [Ex.name("x")], {})


def test_a_literal_beta_of_one_drops_softplus_scaling_and_a_named_one_keeps_it():
    one = code(activations.render("softplus", [Ex.name("x")], {"beta": Ex.num(1.0)}))
    named = code(activations.render("softplus", [Ex.name("x")], {"beta": Ex.name("beta", tensor=False)}))
    assert one == "pypto.maximum(x, 0.0) + pypto.log1p(pypto.exp(pypto.abs(x) * (-1.0)))"
    assert "x * beta" in named and named.endswith("/ beta")
