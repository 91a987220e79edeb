"""torch.topk's values over the last axis: read from the task (`[0]`, `.values`, tuple unpacking, the
method), scaffolded as one pypto.topk call (TOPK.values), verified against torch through the real
compiler, and a broken twin (the smallest values instead of the largest) caught. What the kernel does
not take (another axis, sorted=False, the indices) is refused with its reason."""

from __future__ import annotations

import numpy as np
import pytest
from family import EXTRA, pipe

from pypto_tui.contract import extract_contract
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.ops import registry
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = "topk_rows.py"


def _task(expr: str, pre: str = "") -> str:
    """A task file whose forward computes `expr` over x (128, 1000), after the statements `pre`."""
    return (f"import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
            f"        super().__init__()\n\n    def forward(self, x):\n{pre}        return {expr}\n\n\n"
            "def get_inputs():\n    return [torch.randn(128, 1000)]\n\n\ndef get_init_inputs():\n    return []\n")


def test_the_contract_reads_topk_values_with_k_values_on_the_axis(kb):
    c = extract_contract(EXTRA / TASK, kb)
    assert (c.family, c.op, c.supported) == ("reduction", "topk", True), c.reason
    assert {k: c.op_args[k] for k in ("k", "dim", "largest", "sorted")} == {"k": 8, "dim": 1, "largest": True,
                                                                          "sorted": True}
    assert c.output_shape == (128, 8) and c.output_dtype == "fp32"
    assert c.reduction is not None and c.reduction.axes == (1,) and c.reduction.keepdim
    assert c.formula == "out[i, j] = top 8 of x[i, j] along j (largest=True, sorted)"
    node = c.graph["nodes"][0]
    assert (node["op"], tuple(node["shape"]), tuple(c.graph["problems"])) == ("topk", (128, 8), ())


@pytest.mark.parametrize("expr, pre", [
    ("torch.topk(x, 8, dim=1)[0]", ""),
    ("torch.topk(x, 8).values", ""),
    ("x.topk(8, 1, True, True)[0]", ""),
    ("values", "        values, _ = torch.topk(x, k=8, dim=-1)\n"),
])
def test_every_spelling_of_the_values_reads_the_same_op(kb, expr, pre):
    c = extract_contract(_task(expr, pre), kb)
    assert (c.op, c.supported, c.output_shape) == ("topk", True, (128, 8)), c.reason
    assert c.reduction is not None and c.reduction.axes == (1,)
    assert c.op_args["k"] == 8 and c.op_args["largest"] is True


def test_the_whole_tuple_is_refused_with_the_reason(kb):
    c = extract_contract(_task("torch.topk(x, 8, dim=1)"), kb)
    assert c.op == "topk" and not c.supported
    assert "returns (values, indices); index it with [0] or .values" in c.reason


@pytest.mark.parametrize("expr", ["torch.topk(x, 8, dim=1)[1]", "torch.topk(x, 8, dim=1).indices", "x.topk(8, 1)[-1]"])
def test_the_indices_are_their_own_kind_with_torchs_int64(kb, expr):
    c = extract_contract(_task(expr), kb)
    assert (c.op, c.supported, c.output_shape, c.output_dtype) == ("topk_indices", True, (128, 8), "int64"), c.reason
    (node,) = c.graph["nodes"]
    assert (node["op"], node["dtype"], tuple(c.graph["problems"])) == ("topk_indices", "int64", ())


def test_the_indices_kernel_casts_topks_int32_positions_to_int64(kb, tmp_path):
    task = tmp_path / "t.py"
    task.write_text(_task("torch.topk(x, 8, dim=1).indices"))
    p = Pipeline(kb, Design(task=str(task)))
    k = kernel_of(p)
    assert k.supported and k.pattern == "topk", k.reason
    assert "values, indices = pypto.topk(x, 8, 1, True)" in k.source
    assert "out.move(pypto.cast(indices, pypto.DT_INT64))" in k.source and "dtype=torch.int64" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


@pytest.mark.torch
def test_the_registry_reference_is_torchs_sorted_values():
    import torch

    x = np.random.default_rng(3).standard_normal((4, 6, 50)).astype(np.float32)
    topk, indices = registry.kind("topk"), registry.kind("topk_indices")
    assert topk is not None and topk.shape([(4, 6, 50)], {"k": 5, "dim": 1}) == (4, 5, 50)
    assert indices is not None and registry.element_of(topk, 1) is indices
    for dim, largest in ((-1, True), (1, False)):
        want = torch.topk(torch.from_numpy(x), 5, dim=dim, largest=largest)
        assert np.array_equal(topk.reference(x, k=5, dim=dim, largest=largest), want.values.numpy())
        assert np.array_equal(indices.reference(x, k=5, dim=dim, largest=largest), want.indices.numpy())


def test_the_scaffold_is_one_topk_call_and_lint_clean(kb):
    p = pipe(kb, TASK)
    k = kernel_of(p)
    assert k.supported and k.pattern == "topk", k.reason
    assert "values, indices = pypto.topk(x, 8, 1, True)" in k.source
    assert "out: pypto.Tensor((d0, 8), pypto.DT_FP32)" in k.source
    assert "out = torch.empty((d0, 8), dtype=torch.float32" in k.source and "return out\n" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_a_large_topk_loops_over_whole_rows(kb):
    k = kernel_of(pipe(kb, TASK, contract_edits={"inputs.x.shape": [65536, 1000]}))
    assert k.supported, k.reason
    assert "x_chunk = pypto.view(x, [BASIC_BATCH, d1], [off, 0])" in k.source
    assert "pypto.assemble(values, [off, 0], out)" in k.source


@pytest.mark.parametrize("edits, why", [
    ({"op_args.dim": 0}, "not the last: pypto.topk works on the last axis only"),
    ({"op_args.sorted": False}, "sorted=False: torch leaves the order of the values unspecified"),
])
def test_what_the_kernel_cannot_match_is_refused(kb, edits, why):
    k = kernel_of(pipe(kb, TASK, contract_edits=edits))
    assert not k.supported and why in k.reason


@pytest.mark.sim
def test_topk_values_and_indices_verify_exactly_against_torch(kb, tmp_path):
    task = tmp_path / "indices.py"
    task.write_text(_task("torch.topk(x, 8, dim=1).indices"))
    values, indices = verify_many([pipe(kb, TASK), Pipeline(kb, Design(task=str(task)))], jobs=1, cache=False)
    assert values.supported and values.passed, values.reason
    assert values.max_abs_err == 0 and values.outputs[0]["dtype"] == "fp32"
    assert indices.supported and indices.passed, indices.reason
    assert indices.outputs[0]["dtype"] == "int64" and "compared exactly" in indices.outputs[0]["reason"]


@pytest.mark.sim
def test_the_smallest_values_fail(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, TASK), "pypto.topk(x, 8, 1, True)", "pypto.topk(x, 8, 1, False)")])
    assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
