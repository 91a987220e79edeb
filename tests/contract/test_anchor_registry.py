"""The contract reads the anchor operators (reductions, scans, softmax, norms, losses, convs, pools,
attention) from their registry entries: module constructors, call signatures and defaults, which
spellings name which kind, and what a reduction scales by and why a kernel does not take it."""

from __future__ import annotations

from support import contract

from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, MODULE_SIGS, REQUIRED, bind_module
from pypto_tui.ops import base as ops_base
from pypto_tui.ops.registry import REGISTRY


def test_every_anchor_module_binds_by_its_entrys_constructor():
    for k in REGISTRY.values():
        if not k.is_anchor or not k.module_signature:
            continue
        want = tuple((p, REQUIRED if d is ops_base.REQUIRED else d) for p, d in k.module_signature)
        for m in k.modules:
            if m != "AvgPool1d":  # torch's AvgPool1d has no divisor_override: its own row
                assert MODULE_SIGS[m] == want, m
    params, problems = bind_module("GroupNorm", [8], {"eps": 1e-3})
    assert params["num_groups"] == 8 and params["eps"] == 1e-3 and params["affine"] is True
    assert problems == ["missing required argument 'num_channels'"]
    assert "divisor_override" not in dict(MODULE_SIGS["AvgPool1d"])


def test_anchor_calls_bind_by_the_entrys_inputs_then_params():
    assert FUNC_SIGS["triplet_margin_loss"][:4] == ("anchor", "positive", "negative", "margin")
    assert FUNC_SIGS["conv2d"] == ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    assert FUNC_DEFAULTS["amax"] == {"dim": (), "keepdim": False}
    c = contract("F.smooth_l1_loss(input=x, target=y, beta=0.5)", "x, y")  # keywords bind by torch's names
    assert (c.family, c.op) == ("loss", "smooth_l1_loss") and c.op_args["beta"] == 0.5
    assert c.op_args["operands"] == ("x", "y")


def test_a_loss_whose_call_had_no_signature_row_is_read():
    """F.cosine_embedding_loss had a loss spelling but no call signature: reading it raised KeyError."""
    c = contract("F.cosine_embedding_loss(a, b, t, margin=0.5)", "a, b, t")
    assert (c.family, c.op) == ("loss", "cosine_embedding_loss")
    assert c.op_args["margin"] == 0.5 and c.op_args["operands"] == ("a", "b", "t")


def test_norm_modules_and_functions_name_their_kind():
    c = contract("self.n(x)", body="\n        self.n = nn.InstanceNorm1d(16)", shape="4, 16, 32")
    assert (c.family, c.op) == ("norm", "instance_norm") and "training" not in c.op_args
    c = contract("self.n(x)", body="\n        self.n = nn.BatchNorm1d(16)", shape="4, 16, 32")
    assert (c.family, c.op, c.op_args["training"]) == ("norm", "batch_norm", True)
    c = contract("F.instance_norm(x, eps=1e-3)", shape="4, 16, 32")
    assert (c.op, c.op_args.get("eps")) == ("instance_norm", 1e-3) and "momentum" not in c.op_args


def test_reductions_scale_and_refuse_by_their_entries():
    c = contract("torch.nansum(x, dim=1)")
    assert (c.family, c.op, c.reduction.scaling, c.supported) == ("reduction", "nansum", "sum", False)
    assert c.reason == "nansum has no verified PyPTO reduction (pypto 0.2.0 has sum, amax, amin, prod)"
    c = contract("torch.max(x, dim=1)[0]")
    assert c.supported and c.formula == "out[i] = max_{j} x[i, j]"
    c = contract("torch.var(x, dim=1, unbiased=False)")
    assert c.reduction.scaling == "mean" and c.formula.endswith("(divisor 256 - 0)")


def test_a_scans_formula_is_its_entrys_combining_operation():
    from pypto_tui.ops.registry import REGISTRY as KINDS

    for name, word in (("cumsum", "sum"), ("cumprod", "prod"), ("logcumsumexp", "logsumexp")):
        assert KINDS[name].formula.startswith(word)
    c = contract("torch.cumprod(x.flip(1), dim=1).flip(1)")
    assert c.op == "reverse_cumprod" and c.formula is not None
    assert c.formula.startswith("out[.., t, ..] = prod_{r >= t} x[.., r, ..]"), c.formula
