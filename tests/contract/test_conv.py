"""Convolutions and pooling in the contract: their parameters read statically as op_args, normalised
by contract/conv.py, the output size derived (and checked against torch), the variants that are not
scaffolded said so."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.contract.conv import WindowError, min_sizes, window_spec
from pypto_tui.contract.edits import apply_edits
from pypto_tui.contract.extract import extract_contract

CONV = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv"
FIXTURES = sorted(p.name for p in CONV.glob("*.py"))

TASK = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self{init}):
        super().__init__()
{body}

    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return [{values}]
'''


def task(tmp_path: Path, body: str, expr: str, shape: str, init: str = "", values: str = "") -> Path:
    p = tmp_path / "t.py"
    p.write_text(TASK.format(init=init, body=body, expr=expr, shape=shape, values=values), encoding="utf-8")
    return p


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_reads_and_its_output_size_is_torchs(kb, name):
    torch = pytest.importorskip("torch")
    import importlib.util

    c = extract_contract(CONV / name, kb)
    assert c.family in ("conv", "pool") and c.supported and not c.unknown, (c.reason, c.unknown)
    spec = importlib.util.spec_from_file_location("t", CONV / name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.Model(*mod.get_init_inputs()).to("meta")
    out = model(torch.empty(c.inputs[0].shape, device="meta"))
    assert tuple(out.shape) == c.output_shape
    assert window_spec(c).output_shape == c.output_shape


def test_padding_same_is_uneven_where_torch_is(kb):
    s = window_spec(extract_contract(CONV / "conv2d_same_asymmetric.py", kb))
    # kernel (3, 4), dilation (2, 1): H needs 4 positions of padding (2, 2), W needs 3: (1, 2)
    assert s.padding == ((2, 2), (1, 2)) and s.out_spatial == s.spatial


def test_the_formula_shows_the_output_size_with_its_numbers(kb):
    c = extract_contract(CONV / "conv2d_grouped_strided.py", kb)
    assert c.formula is not None
    assert "OH = floor((H + 1 + 1 - 2*(3 - 1) - 1) / 2) + 1 = floor((40 + 2 - 4 - 1) / 2) + 1 = 19" in c.formula
    assert "groups 2" in c.formula and "b[oc]" in c.formula
    t = extract_contract(CONV / "conv_transpose2d_strided.py", kb).formula or ""
    assert "OH = (H - 1)*2 - 1 - 1 + 1*(3 - 1) + 1 + 1 = (14 - 1)*2 - 2 + 2 + 1 + 1 = 28" in t


def test_ceil_mode_drops_a_window_that_starts_in_the_padding(kb):
    s = window_spec(extract_contract(CONV / "maxpool2d_ceil.py", kb))
    assert s.ceil_mode and s.out_spatial == (25, 24)  # floor would give 24 and 23


def test_the_module_and_its_attribute_are_recorded(kb):
    c = extract_contract(CONV / "conv_transpose2d_strided.py", kb)
    assert c.op == "conv_transpose" and c.op_args["module"] == "ConvTranspose2d" and c.op_args["attr"] == "up"
    s = window_spec(c)
    assert s.weight_shape == (6, 4, 3, 4) and s.groups == 2 and s.bias
    sig = c.signature
    assert sig is not None and [m[0] for m in sig.modules] == ["up"]


def test_positional_init_arguments_bind_to_models_own_parameters(kb, tmp_path):
    """KernelBench 73 passes `groups` where Model expects output_padding: the contract follows Python's
    binding, not the constant's name."""
    init = ", cin, cout, k, stride=1, padding=0, output_padding=0, groups=1"
    body = ("        self.deconv = nn.ConvTranspose3d(cin, cout, kernel_size=(k, k, k), stride=stride, "
            "padding=padding, groups=groups, bias=False)")
    c = extract_contract(task(tmp_path, body, "self.deconv(x)", "2, 8, 4, 5, 6", init, "8, 8, 3, 2, 1, 4"), kb)
    s = window_spec(c)
    assert s.groups == 1 and s.output_padding == (0, 0, 0) and s.output_shape == (2, 8, 7, 9, 11)


def test_an_edit_to_a_conv_field_re_derives_the_output_size(kb):
    c = extract_contract(CONV / "conv2d_grouped_strided.py", kb)
    e = apply_edits(c, {"op_args.stride": 1})
    assert e.output_shape == (4, 12, 38, 70) and "= 38" in (e.formula or "")


@pytest.mark.parametrize("body, expr, shape, reason", [
    ("        self.conv = nn.Conv2d(3, 4, 3, padding=1, padding_mode='circular')", "self.conv(x)", "2, 3, 8, 8",
     "padding_mode='circular'"),
    ("        self.pool = nn.MaxPool2d(2, return_indices=True)", "self.pool(x)[0]", "2, 3, 8, 8", ""),
    ("        self.pool = nn.AdaptiveAvgPool2d(4)", "self.pool(x)", "2, 3, 8, 8", "adaptive"),
    ("        self.w = 1", "F.conv2d(x, x)", "2, 3, 8, 8", ""),
])
def test_variants_without_a_scaffold_say_why(kb, tmp_path, body, expr, shape, reason):
    c = extract_contract(task(tmp_path, body, expr, shape), kb)
    assert not c.supported and c.reason
    assert reason in c.reason


def test_functional_pooling_reads_its_arguments(kb, tmp_path):
    c = extract_contract(task(tmp_path, "        self.k = 3", "F.max_pool1d(x, 3, stride=2, padding=1, dilation=2)",
                              "2, 4, 30"), kb)
    s = window_spec(c)
    assert c.supported and (s.kernel, s.stride, s.padding, s.dilation) == ((3,), (2,), ((1, 1),), (2,))
    assert c.output_shape == (2, 4, 14)


def test_impossible_parameters_are_unknown_with_the_reason(kb, tmp_path):
    c = extract_contract(task(tmp_path, "        self.conv = nn.Conv2d(3, 4, 9)", "self.conv(x)", "2, 3, 5, 5"), kb)
    assert "output_shape" in c.unknown and "empty" in c.unknown["output_shape"]
    with pytest.raises(WindowError):
        window_spec(c)


def test_a_smaller_test_keeps_the_channels_and_two_output_positions(kb):
    c = extract_contract(CONV / "conv2d_grouped_strided.py", kb)
    floors = min_sizes(c)
    # kernel 3 dilated by 2 spans 5, stride 2, padding 1+1: 5 + 2 - 2 = 5 rows give 2 outputs
    assert floors == {40: 5, 72: 5}


def test_a_pointwise_conv_after_a_depthwise_conv_is_one_separable_contract(kb):
    c = extract_contract(CONV / "conv2d_depthwise_separable.py", kb)
    s = window_spec(c)
    assert c.supported and s.depthwise and s.pointwise is not None
    assert (s.pointwise.attr, s.pointwise.in_channels, s.pointwise.out_channels, s.pointwise.bias) == \
        ("pointwise", 8, 12, True)
    assert (s.batch, s.out_channels, *s.out_spatial) == (3, 8, 13, 40) and c.output_shape == (3, 12, 13, 40)
    assert "then the pointwise conv" in (c.formula or "")


@pytest.mark.parametrize("outer, supported, reason", [
    # a 3x3 conv after the depthwise one is not a pointwise stage: fused, as before
    ("nn.Conv2d(4, 6, 3)", False, "applied to an expression"),
    # a pointwise conv after a plain (non-depthwise) conv would need a second cube plan
    ("nn.Conv2d(6, 6, 1)", False, "second cube plan"),
])
def test_chains_that_are_not_depthwise_separable_say_why(kb, tmp_path, outer, supported, reason):
    first = "nn.Conv2d(4, 6, 3)" if "6, 6" in outer else "nn.Conv2d(4, 4, 3, groups=4)"
    body = f"        self.a = {first}\n        self.b = {outer}"
    c = extract_contract(task(tmp_path, body, "self.b(self.a(x))", "2, 4, 9, 9"), kb)
    assert c.supported is supported and reason in (c.reason or "")


def test_a_pointwise_stage_must_take_the_first_convs_channels(kb, tmp_path):
    body = "        self.a = nn.Conv2d(4, 4, 3, groups=4)\n        self.b = nn.Conv2d(4, 6, 1)"
    c = extract_contract(task(tmp_path, body, "self.b(self.a(x))", "2, 4, 9, 9"), kb)
    edited = apply_edits(c, {"op_args.out_channels": 8})
    with pytest.raises(WindowError, match="pointwise conv expects 4 input channels"):
        window_spec(edited)
