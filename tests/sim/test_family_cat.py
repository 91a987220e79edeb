"""torch.cat as a copy kernel (CAT.rows-copy): read from the task, laid out as rows, scaffolded as one view
and one assemble per part, verified against torch through the real compiler (alone and inside a chain of
convs), and a broken twin (a part landing at the wrong column offset) caught."""

from __future__ import annotations

import numpy as np
import pytest
from family import EXTRA, pipe

from pypto_tui.contract import extract_contract
from pypto_tui.design import Design, Pipeline, kernel_of, task_kernels
from pypto_tui.dims import plan_dims
from pypto_tui.lint.engine import lint_source
from pypto_tui.ops import registry
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = "cat_channels.py"
CHAIN = EXTRA.parent / "tasks_chain" / "inception_cat.py"


def _task(expr: str) -> str:
    """A task whose forward returns `expr` over a (4, 8, 6) and b (4, 3, 6)."""
    return ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
            f"        super().__init__()\n\n    def forward(self, a, b):\n        return {expr}\n\n\n"
            "def get_inputs():\n    return [torch.randn(4, 8, 6), torch.randn(4, 3, 6)]\n\n\n"
            "def get_init_inputs():\n    return []\n")


def test_the_contract_reads_a_concatenation_whose_order_matters(kb):
    c = extract_contract(EXTRA / TASK, kb)
    assert (c.family, c.op, c.supported) == ("layout", "cat", True), c.reason
    assert c.op_args["dim"] == 1 and c.output_shape == (10, 96, 28, 28) and c.reduction is None
    assert c.asymmetric is True and "in the order a, b" in (c.direction or "")


@pytest.mark.parametrize("expr", ["torch.cat((a, b), dim=1)", "torch.cat([a, b], 1)", "torch.concat((a, b), -2)"])
def test_every_spelling_reads_the_same_rows_layout(kb, expr):
    c = extract_contract(_task(expr), kb)
    assert (c.op, c.supported, c.output_shape) == ("cat", True, (4, 11, 6)), c.reason
    plan = plan_dims(c, kb)
    assert plan.strategy == "concat-rows" and plan.alternatives == []
    assert plan.kernel_shapes == [(4, 48), (4, 18)] and plan.output_kernel_shape == (4, 66)


def test_a_cat_along_axis_0_is_one_row(kb):
    plan = plan_dims(extract_contract(_task("torch.cat((a, a[:, :3]), 1)"), kb), kb)
    assert plan.strategy is None or plan.strategy != "concat-rows"  # a part that is an expression is no pattern
    c = extract_contract(_task("torch.cat((a.reshape(4, 48), b.reshape(4, 18)), dim=0)"), kb)
    assert c.op != "cat" or not c.supported or c.output_shape is not None


def test_the_registry_reference_is_numpys_concatenation():
    x, y = np.ones((2, 3, 4), np.float32), np.zeros((2, 5, 4), np.float32)
    cat = registry.kind("cat")
    assert cat is not None and cat.shape([(2, 3, 4), (2, 5, 4)], {"dim": 1}) == (2, 8, 4)
    assert np.array_equal(cat.reference(x, y, dim=1), np.concatenate((x, y), axis=1))


def test_the_scaffold_copies_each_part_to_its_column_block_and_is_lint_clean(kb):
    p = pipe(kb, TASK)
    k = kernel_of(p)
    assert k.supported and k.pattern == "cat", k.reason
    assert "out: pypto.Tensor((rows, w0 + w1), pypto.DT_FP32)" in k.source
    assert "pypto.assemble(a_all, [0, 0], out)" in k.source and "pypto.assemble(b_all, [0, w0], out)" in k.source
    assert "a_rows = a.reshape(a.shape[0], -1).contiguous()" in k.source
    assert "return out.reshape(a.shape[0], a.shape[1] + b.shape[1], a.shape[2], a.shape[3])" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_a_large_cat_loops_over_chunks_of_rows(kb):
    k = kernel_of(pipe(kb, TASK, contract_edits={"inputs.a.shape": [4096, 32, 28, 28],
                                                 "inputs.b.shape": [4096, 64, 28, 28]}))
    assert k.supported, k.reason
    assert "b_chunk = pypto.view(b, [BASIC_BATCH, w1], [off, 0])" in k.source
    assert "pypto.assemble(b_chunk, [off, w0], out)" in k.source


def test_a_cat_inside_a_chain_is_a_kernel_of_its_own(kb):
    found = task_kernels(Pipeline(kb, Design(task=str(CHAIN))))
    assert found.supported, found.reason
    assert [k.ops for k in found.kernels] == ["conv", "conv", "cat", "relu"]


@pytest.mark.sim
def test_a_concatenation_verifies_exactly_against_torch(kb):
    (r,) = verify_many([pipe(kb, TASK)], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason
    assert r.max_abs_err == 0


@pytest.mark.sim
def test_a_part_at_the_wrong_offset_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, TASK), "pypto.assemble(b_all, [0, w0], out)",
                          "pypto.assemble(b_all, [0, w0 - 8], out)")])
    assert r.status != J.OK and r.passed is False, (r.label, r.status, r.error)


MANY = "cat_many.py"


def _nesting(source: str) -> int:
    """The deepest chain of binary operations in a module's text (a sum written out nests one level a term)."""
    import ast

    def depth(node: ast.AST) -> int:
        inner = max((depth(c) for c in ast.iter_child_nodes(node)), default=0)
        return inner + 1 if isinstance(node, ast.BinOp) else inner

    return depth(ast.parse(source))


def test_many_parts_take_their_columns_from_a_table_the_factory_fills(kb):
    """Twelve parts: the column offsets are `COLUMN[i]`, summed once in the factory, and forward sums the
    widths flat, so no expression of the module grows with the part count (256 parts once nested 255
    levels, past what the reader and the lint take)."""
    p = pipe(kb, MANY)
    k = kernel_of(p)
    assert k.supported and k.pattern == "cat", k.reason
    assert "COLUMN = [sum(WIDTHS[:i]) for i in range(len(WIDTHS))]" in k.source
    assert "pypto.assemble(x11_all, [0, COLUMN[11]], out)" in k.source
    assert "out: pypto.Tensor((rows, width), pypto.DT_FP32)" in k.source
    assert "return out.reshape(x0.shape[0], -1, x0.shape[2], x0.shape[3])" in k.source
    assert _nesting(k.source) <= 3
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


@pytest.mark.sim
def test_many_parts_verify_and_a_wrong_column_in_the_table_fails(kb, broken_twins):
    (r,) = verify_many([pipe(kb, MANY)], jobs=1, cache=False)
    assert r.supported and r.passed and r.max_abs_err == 0, r.reason
    (bad,) = broken_twins([(pipe(kb, MANY), "COLUMN = [sum(WIDTHS[:i]) for i in range(len(WIDTHS))]",
                            "COLUMN = [sum(WIDTHS[:i]) + (i == 7) * 8 for i in range(len(WIDTHS))]")])
    assert bad.status != J.OK and bad.passed is False, (bad.label, bad.status, bad.error)
