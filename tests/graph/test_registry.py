"""The operator registry (pypto_tui/ops): one entry per operator kind, found by its PyTorch
spellings, with a shape function and a numpy reference checked against torch."""

from __future__ import annotations

import numpy as np
import pytest

from pypto_tui.ops import REGISTRY, OpError, by_module, by_spelling, kind
from pypto_tui.ops.base import ROLES, broadcast
from pypto_tui.ops.elementwise import BINARY_KINDS, UNARY_KINDS


def test_every_kind_has_a_known_role_and_a_shape_function():
    for k in REGISTRY.values():
        assert k.role in ROLES, k.name
        assert callable(k.shape), k.name


def test_spellings_find_their_kind():
    assert by_module("Linear").name == "linear" and by_module("SiLU").name == "swish"
    assert by_module("BatchNorm2d").name == "batch_norm" and by_module("AdaptiveAvgPool3d").name == "adaptive_avg_pool"
    assert by_spelling("silu").name == "swish" and by_spelling("conv_transpose2d").name == "conv_transpose"
    assert by_spelling("mean", "method").name == "mean" and by_spelling("svdvals") is None
    assert kind("dropout").is_elementwise and not kind("linear").is_elementwise and kind("linear").is_anchor


def test_shape_functions_follow_torch_rules_and_refuse_what_torch_refuses():
    assert kind("linear").shape([(8, 4, 16), (32, 16), (32,)], {}) == (8, 4, 32)
    with pytest.raises(OpError):
        kind("linear").shape([(8, 15), (32, 16)], {})
    assert kind("matmul").shape([(2, 1, 5, 6), (3, 6, 7)], {}) == (2, 3, 5, 7)
    assert kind("matmul").shape([(6,), (6, 7)], {}) == (7,)
    assert kind("sum").shape([(2, 3, 4)], {"dim": (1, -1), "keepdim": True}) == (2, 1, 1)
    assert kind("mean").shape([(2, 3, 4)], {}) == ()
    assert kind("conv_transpose").shape([(1, 8, 5, 5)], {"nd": 2, "kernel_size": 3, "stride": 2, "padding": 1,
                                                         "output_padding": 1, "out_channels": 4}) == (1, 4, 10, 10)
    assert kind("max_pool").shape([(1, 2, 7, 7)], {"nd": 2, "kernel_size": 2, "ceil_mode": True}) == (1, 2, 4, 4)
    assert kind("cat").shape([(2, 3), (2, 5)], {"dim": 1}) == (2, 8)
    with pytest.raises(OpError):
        kind("group_norm").shape([(2, 6, 4)], {"num_groups": 4})
    with pytest.raises(OpError):
        broadcast([(3, 4), (5, 4)])


@pytest.mark.slow
@pytest.mark.parametrize("k", UNARY_KINDS, ids=lambda k: k.name)
def test_unary_references_match_torch(k):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.random.default_rng(0).standard_normal((4, 33)) * 3
    if k.name in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x) + 0.1
    fn = getattr(torch, k.name, None) or getattr(F, k.name, None)
    if k.name == "swish":
        fn = F.silu
    if k.name in ("float", "half", "contiguous", "clone", "detach", "identity"):
        fn = torch.clone
    if k.name == "char":  # x.to(torch.int8): truncation toward zero (the values stay within int8's range)
        x_t = torch.from_numpy(x * 20)
        assert np.array_equal(k.reference(x * 20), x_t.to(torch.int8).numpy())
        return
    if k.name == "rotate_half":  # no torch function: the halves of the last axis, swapped, the first negated
        x_t = torch.from_numpy(x[:, :32])
        assert np.array_equal(k.reference(x[:, :32]), torch.cat((-x_t[..., 16:], x_t[..., :16]), dim=-1).numpy())
        return
    if k.name == "dropout":
        fn = F.dropout  # the module's default training flag is the caller's; F.dropout(x) here is eval-like
        x_t = torch.from_numpy(x)
        assert np.array_equal(k.reference(x), F.dropout(x_t, 0.5, training=False).numpy())
        return
    assert fn is not None, k.name
    if k.name in ("clamp", "clamp_min", "clamp_max"):
        args = {"clamp": {"min": -0.5, "max": 0.7}, "clamp_min": {"min": -0.5}, "clamp_max": {"max": 0.7}}[k.name]
        want = fn(torch.from_numpy(x), **args).numpy()
        got = k.reference(x, **args)
    else:
        want = fn(torch.from_numpy(x)).numpy()
        got = k.reference(x)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-7, equal_nan=True), k.name
    assert k.shape([x.shape], {}) == want.shape


@pytest.mark.slow
@pytest.mark.parametrize("k", [k for k in BINARY_KINDS if k.name != "where"], ids=lambda k: k.name)
def test_binary_references_match_torch_with_broadcasting(k):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 1, 6)) + 2.5, rng.standard_normal((5, 1)) + 2.5
    fn = {"floordiv": torch.floor_divide, "mod": torch.remainder}.get(k.name) or getattr(torch, k.name)
    want = fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.allclose(k.reference(a, b), want), k.name
    assert k.shape([a.shape, b.shape], {}) == want.shape


@pytest.mark.slow
def test_anchor_references_and_shapes_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(2)
    x, w, bias = rng.standard_normal((6, 10)), rng.standard_normal((7, 10)), rng.standard_normal(7)
    want = F.linear(*(torch.from_numpy(v) for v in (x, w, bias))).numpy()
    assert np.allclose(kind("linear").reference(x, w, bias), want)
    t = rng.standard_normal((3, 4, 5))
    tt = torch.from_numpy(t)
    cases = [("softmax", {"dim": 1}, F.softmax(tt, dim=1)), ("log_softmax", {"dim": -1}, F.log_softmax(tt, dim=-1)),
             ("logsumexp", {"dim": (1, 2), "keepdim": False}, torch.logsumexp(tt, dim=(1, 2))),
             ("var", {"dim": 2, "keepdim": True}, torch.var(tt, dim=2, keepdim=True)),
             ("cumsum", {"dim": 1}, torch.cumsum(tt, dim=1)), ("amax", {"dim": 0}, torch.amax(tt, dim=0)),
             ("argmax", {"dim": 2}, torch.argmax(tt, dim=2)),
             ("layer_norm", {"normalized_shape": (5,)}, F.layer_norm(tt, (5,))),
             ("group_norm", {"num_groups": 2}, F.group_norm(tt, 2)),
             ("batch_norm", {}, F.batch_norm(tt, None, None, training=True)),
             ("instance_norm", {}, F.instance_norm(tt))]
    for name, attrs, ref in cases:
        got = kind(name).reference(t, **attrs)
        assert np.allclose(got, ref.numpy(), rtol=1e-6, atol=1e-8), name
        assert kind(name).shape([t.shape], attrs) == tuple(ref.shape), name
    conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2)
    out = conv(torch.zeros(2, 4, 11, 9))
    attrs = {"nd": 2, "in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}
    assert kind("conv").shape([(2, 4, 11, 9)], attrs) == tuple(out.shape)
    assert kind("conv").weights(attrs) == {"weight": tuple(conv.weight.shape), "bias": tuple(conv.bias.shape)}
    pool = F.avg_pool3d(torch.zeros(1, 2, 9, 8, 7), 3, stride=2, padding=1, ceil_mode=True)
    assert kind("avg_pool").shape([(1, 2, 9, 8, 7)], {"nd": 3, "kernel_size": 3, "stride": 2, "padding": 1,
                                                      "ceil_mode": True}) == tuple(pool.shape)
