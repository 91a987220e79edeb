"""The hard corners: negative and tuple dims, *unpacking, keyword-only init parameters, fp16 and
bf16 inputs, randint/full dtypes, unknown ops, and files that are not task files at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.dims import plan_dims
from pypto_tui.errors import InputError, TaskFileError

EXTRA = Path(__file__).resolve().parent.parent / "fixtures" / "tasks_extra"

# fixture: (family, op, supported, [(shape, dtype)], reduction (axes, keepdim, scaling) or None, asym, output)
EXPECTED = {
    "neg_dim_log_softmax": ("softmax", "log_softmax", True, [((8, 1000), "fp32")], ((1,), True, "none"), False,
                            (8, 1000)),
    "tuple_dims_sum": ("reduction", "sum", True, [((4, 8, 16, 32), "fp32")], ((2, 3), True, "sum"), False,
                       (4, 8, 1, 1)),
    "mean_nonadjacent": ("reduction", "mean", True, [((4, 8, 16, 32), "fp32")], ((1, 3), False, "mean"), False,
                         (4, 16)),
    "star_input_shape_max": ("reduction", "amax", True, [((8, 32, 16384), "fp32")], ((1,), False, "none"), False,
                             (8, 16384)),
    "layer_norm_kwonly": ("norm", "layer_norm", True, [((16, 64, 32, 32), "fp32")], ((1, 2, 3), True, "mean"), False,
                          (16, 64, 32, 32)),
    "group_norm_positional": ("norm", "group_norm", True, [((8, 32, 64, 64), "fp16")], ((1, 2, 3), True, "mean"), False,
                              (8, 32, 64, 64)),
    "instance_norm": ("norm", "instance_norm", True, [((16, 64, 128, 128), "fp32")], ((2, 3), True, "mean"), False,
                      (16, 64, 128, 128)),
    "rms_rsqrt_last": ("norm", "rms_norm", True, [((4, 128, 1024), "fp32")], ((2,), True, "mean"), False,
                       (4, 128, 1024)),
    "gelu_fp16": ("elementwise", "gelu", True, [((32, 4096), "fp16")], None, False, (32, 4096)),
    "leaky_relu_module": ("elementwise", "leaky_relu", True, [((16, 16384), "fp32")], None, False, (16, 16384)),
    "swish_expression": ("elementwise", "swish", True, [((16, 16384), "fp32")], None, False, (16, 16384)),
    "full_bf16_add": ("elementwise", "add", True, [((64, 256), "bf16")] * 2, None, False, (64, 256)),
    "expression_two_inputs": ("elementwise", "expression", True, [((32, 512), "fp32")] * 2, None, True, (32, 512)),
    "hinge_randint": ("loss", "hinge_loss", True, [((128, 1), "fp32")] * 2, ((0, 1), False, "mean"), False, ()),
    "cosine_loss": ("loss", "cosine_similarity", True, [((128, 4096), "fp32")] * 2, ((0,), False, "mean"), False, ()),
    "kl_log_softmax_sum": ("loss", "kl_div", True, [((32, 100), "fp32")] * 2, ((0, 1), False, "sum"), True, ()),
    "cross_entropy_randint": ("loss", "cross_entropy", True, [((64, 10), "fp32"), ((64,), "int64")],
                              ((0,), False, "mean"), True, ()),
    "argmax_neg": ("reduction", "argmax", True, [((16, 256, 256), "fp32")], ((2,), False, "none"), False, (16, 256)),
    "matmul_3d_2d": ("matmul", "matmul", True, [((16, 1024, 2048), "fp32"), ((2048, 768), "fp32")], None, True,
                     (16, 1024, 768)),
    "matmul_transposed_a": ("matmul", "matmul", True, [((4096, 1024), "fp32"), ((4096, 2048), "fp32")], None, True,
                            (1024, 2048)),
    "cumsum_dim": ("scan", "cumsum", True, [((128, 4000), "fp32")], ((1,), True, "none"), False, (128, 4000)),
    "conv2d_module": ("conv", "conv", True, [((16, 3, 256, 256), "fp32")], None, False, (16, 64, 256, 256)),
}


@pytest.fixture(scope="module")
def extra(kb):
    return {name: extract_contract(EXTRA / f"{name}.py", kb) for name in [*EXPECTED, "unknown_op"]}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_extra_contract(name, extra):
    family, op, supported, inputs, red, asym, out = EXPECTED[name]
    c = extra[name]
    assert (c.family, c.op, c.supported) == (family, op, supported), c.reason
    assert [(i.shape, i.dtype) for i in c.tensor_inputs] == inputs
    if red is None:
        assert c.reduction is None
    else:
        assert (c.reduction.axes, c.reduction.keepdim, c.reduction.scaling) == red
    assert c.asymmetric is asym
    assert c.output_shape == out
    assert supported or c.reason  # an unsupported op always says why


def test_negative_dims_are_normalised(extra):
    assert extra["neg_dim_log_softmax"].op_args["dim"] == -1  # the fact as written ...
    assert extra["neg_dim_log_softmax"].reduction.axes == (1,)  # ... the contract's axis
    assert extra["tuple_dims_sum"].reduction.axes == (2, 3)
    assert extra["argmax_neg"].reduction.axes == (2,)
    assert extra["argmax_neg"].output_dtype == "int64"


def test_chained_input_recipe(extra):
    x = extra["neg_dim_log_softmax"].inputs[0]
    assert x.recipe["fn"] == "rand"
    assert [s[0] for s in x.recipe["post"]] == ["mul", "sub", "astype"]
    t = extra["kl_log_softmax_sum"].inputs[1]
    assert t.recipe["post"] == (("softmax", -1),)


def test_keyword_only_init_defaults_and_module_keywords(extra):
    c = extra["layer_norm_kwonly"]
    assert dict(c.init_params) == {"normalized_shape": (64, 32, 32), "eps": 1e-6, "elementwise_affine": False}
    assert c.attributes["ln"]["type"] == "LayerNorm" and c.attributes["ln"]["eps"] == 1e-6
    assert c.op_args["eps"] == 1e-6


def test_positional_module_arguments(extra):
    gn = extra["group_norm_positional"].attributes["gn"]
    assert (gn["num_groups"], gn["num_channels"]) == (4, 32)


def test_star_unpacking_and_arithmetic(extra):
    assert extra["star_input_shape_max"].inputs[0].shape == (8, 32, 16384)


def test_randint_and_full_dtypes(extra):
    targets = extra["cross_entropy_randint"].input("targets")
    assert targets.dtype == "int64" and targets.recipe["high"] == 10
    hinge_t = extra["hinge_randint"].input("targets")
    assert hinge_t.dtype == "fp32"  # randint(...).float() * 2 - 1
    b = extra["full_bf16_add"].input("b")
    assert (b.dtype, b.recipe["fn"], b.recipe["fill"]) == ("bf16", "full", 0.5)


def test_unknown_op_is_partial_not_a_crash(extra):
    c = extra["unknown_op"]
    assert c.family == "unknown" and c.op is None and not c.supported
    assert {"family", "op", "formula", "reduction", "asymmetric", "output_shape"} <= set(c.unknown)
    assert "sort" in c.reason
    assert c.inputs[0].shape == (16, 128)  # what could be read still is
    assert any(f.rule == "P0.contract-first" for f in c.findings)


def test_scans_and_convs_plan(extra, kb):
    assert plan_dims(extra["cumsum_dim"], kb).reduce_axis == 1
    conv = plan_dims(extra["conv2d_module"], kb)  # a conv's planes: (N*C, H, W) in, (N*OC, OH, OW) out
    assert conv.strategy == "conv-im2col" and conv.kernel_shapes == [(48, 256, 256)]
    assert conv.output_kernel_shape == (16 * 64, 256, 256)


def test_matmul_variants(extra, kb):
    p = plan_dims(extra["matmul_3d_2d"], kb)
    assert p.kernel_rank == 2 and p.forward_reshape == [(16384, 2048), None]
    assert p.output_kernel_shape == (16384, 768) and p.output_reshape == (16, 1024, 768)
    ta = extra["matmul_transposed_a"]
    assert ta.op_args["transpose_a"] is True
    assert plan_dims(ta, kb).matmul["m"] == 1024


def test_o3_refuses_non_adjacent_axes(extra, kb):
    p = plan_dims(extra["mean_nonadjacent"], kb)
    assert p.strategy == "single-axis-keep" and p.merged_axes == []
    assert "not adjacent" in p.merge_reason
    assert p.reduce_axes == [1, 3]


def test_o3_merges_tuple_dims_with_keepdim(extra, kb):
    p = plan_dims(extra["tuple_dims_sum"], kb)
    assert p.kernel_shapes == [(4, 8, 512)] and p.reduce_axis == 2
    assert p.output_kernel_shape == (4, 8, 1) and p.output_reshape == (4, 8, 1, 1)


def test_expression_keeps_its_tree(extra):
    c = extra["expression_two_inputs"]
    assert "expr" in c.op_args
    assert c.formula.startswith("out = sigmoid(a) * b - a * 0.25")


@pytest.mark.parametrize("name, fragment", [
    ("syntax_error", "is not valid Python"),
    ("no_model", "has no 'class Model'"),
    ("unresolved_shape", "the shape of input 'x'"),
])
def test_bad_files_raise_one_line(name, fragment, kb):
    with pytest.raises(TaskFileError) as info:
        extract_contract(EXTRA / f"{name}.py", kb)
    msg = str(info.value)
    assert fragment in msg and "\n" not in msg
    assert isinstance(info.value, InputError)


def test_unresolved_shape_partial_when_not_strict(kb):
    c = extract_contract(EXTRA / "unresolved_shape.py", kb, strict=False)
    assert c.family == "elementwise" and c.op == "relu"
    assert "inputs.x.shape" in c.unknown and "output_shape" in c.unknown


def test_missing_file_and_folder(kb, tmp_path):
    with pytest.raises(TaskFileError, match="no such file"):
        extract_contract(tmp_path / "nope.py", kb)
    with pytest.raises(TaskFileError, match="is a folder"):
        extract_contract(tmp_path, kb)


def test_source_text_is_accepted(kb):
    src = (EXTRA / "swish_expression.py").read_text()
    c = extract_contract(src, kb)
    assert c.op == "swish" and c.task_path is None


SOURCES = {
    "no forward": "class Model:\n    pass\n\ndef get_inputs():\n    return []\n",
    "no get_inputs": "import torch\nclass Model:\n    def forward(self, x):\n        return x\n",
    "empty": "",
    "binary junk": "\x00\x01 def (",
}


@pytest.mark.parametrize("label", sorted(SOURCES))
def test_degenerate_sources_raise_task_file_error(label, kb):
    with pytest.raises(TaskFileError):
        extract_contract(SOURCES[label] + "\n", kb)


NEVER_CRASH = [
    "import torch\nclass Model:\n    def forward(self, x):\n        for i in range(3):\n"
    "            x = x + 1\n        return x\n"
    "def get_inputs():\n    return [torch.randn(4, 4)]\n",
    "import torch\nclass Model:\n    def forward(self, x):\n        return self.missing(x)\n"
    "def get_inputs():\n    return [torch.randn(4, 4)]\n",
    "import torch\nN = unknown_name\nclass Model:\n    def __init__(self, d):\n        self.d = d\n"
    "    def forward(self, x):\n        return torch.sum(x, dim=self.d)\n"
    "def get_inputs():\n    return [torch.randn(4, 4)]\ndef get_init_inputs():\n    return [N]\n",
    "import torch\nclass Model:\n    def forward(self, x, y):\n        return torch.einsum('ij,jk->ik', x, y)\n"
    "def get_inputs():\n    return [torch.randn(4, 4), 3]\n",
    "import torch\nclass Model:\n    def forward(self, x):\n        return torch.softmax(x)\n"
    "def get_inputs():\n    return [torch.randn(4, 4, 4)]\n",
    "import torch\nclass Model:\n    def forward(self, x):\n        return torch.max(x, 1)\n"
    "def get_inputs():\n    return [torch.randn(4, 4)]\n",
]


@pytest.mark.parametrize("src", NEVER_CRASH)
def test_odd_forwards_degrade_to_unknown(src, kb):
    c = extract_contract(src, kb, strict=False)
    assert c.family in ("unknown", "elementwise", "reduction", "softmax")
    assert c.unknown or not c.supported or c.family == "softmax"
    c.to_json_dict()  # serialisable whatever happened


def test_init_value_unknown_is_named(kb):
    c = extract_contract(NEVER_CRASH[2], kb, strict=False)
    assert "init_params.d" in c.unknown
    assert "reduction" in c.unknown or "op_args.dim" in c.unknown
