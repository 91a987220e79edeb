"""A swap of two neighbouring axes as block copies (TRANSPOSE.block-copy): read from the task in both
spellings (transpose and a two-axis permute), laid out as (A, P x Q, R) -> (A, Q, P x R), refused where
the rows are not whole 32-byte rows or the axes are not neighbours, scaffolded as one view and one
assemble per block, verified against torch through the real compiler, and a broken twin caught."""

from __future__ import annotations

import pytest
from family import EXTRA, pipe

from pypto_tui.contract import extract_contract
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.dims import plan_dims
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = "channel_shuffle.py"


def _task(expr: str, shape: tuple[int, ...] = (4, 3, 5, 16)) -> str:
    """A task whose forward returns `expr` over x of `shape`."""
    dims = ", ".join(map(str, shape))
    return ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
            f"        super().__init__()\n\n    def forward(self, x):\n        return {expr}\n\n\n"
            f"def get_inputs():\n    return [torch.randn({dims})]\n\n\n"
            "def get_init_inputs():\n    return []\n")


def test_the_contract_reads_a_channel_shuffle_as_a_swap_of_two_axes(kb):
    c = extract_contract(pypto_path(), kb)
    assert (c.family, c.op, c.supported) == ("layout", "transpose", True), c.reason
    assert (c.op_args["dim0"], c.op_args["dim1"]) == (1, 2)
    assert c.output_shape == (10, 80, 3, 28, 28) and c.reduction is None


def pypto_path():
    return EXTRA / TASK


def _write(folder, text: str) -> str:
    path = folder / "task.py"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("expr", ["x.transpose(1, 2)", "torch.transpose(x, 2, 1)", "x.permute(0, 2, 1, 3)"])
def test_every_spelling_reads_the_same_block_layout(kb, expr):
    c = extract_contract(_task(expr), kb)
    assert (c.op, c.supported, c.output_shape) == ("transpose", True, (4, 5, 3, 16)), c.reason
    plan = plan_dims(c, kb)
    assert plan.strategy == "swap-blocks", plan.reason
    assert plan.kernel_shapes == [(4, 15, 16)] and plan.output_kernel_shape == (4, 5, 48)


def test_a_swap_of_axes_that_are_not_neighbours_has_no_block_layout(kb):
    c = extract_contract(_task("x.transpose(1, 3)"), kb)
    plan = plan_dims(c, kb)
    assert plan.strategy is None and plan.kernel_shapes == []
    assert any("not adjacent" in f.message for f in plan.findings), plan.findings


def test_rows_shorter_than_32_bytes_have_no_block_layout(kb, tmp_path):
    c = extract_contract(_task("x.transpose(1, 2)", (4, 3, 5, 6)), kb)
    plan = plan_dims(c, kb)
    assert plan.strategy is None
    assert any("24 bytes, not whole 32-byte rows" in f.message for f in plan.findings), plan.findings
    k = kernel_of(Pipeline(kb, Design(task=_write(tmp_path, _task("x.transpose(1, 2)", (4, 3, 5, 6))))))
    assert not k.supported and "not whole 32-byte rows" in (k.reason or ""), k.reason


def test_the_scaffold_copies_one_block_per_group_and_is_lint_clean(kb):
    p = pipe(kb, TASK)
    k = kernel_of(p)
    assert k.supported and k.pattern == "transpose", k.reason
    assert "x: pypto.Tensor((a, p * q, r), pypto.DT_FP32)" in k.source
    assert "for i in range(p):" in k.source
    assert "block_all = pypto.view(x, [a, q, r], [0, i * q, 0])" in k.source
    assert "pypto.assemble(block_all, [0, 0, i * r], out)" in k.source
    assert "return out.reshape(x.shape[0], x.shape[2], x.shape[1], x.shape[3], x.shape[4])" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


@pytest.mark.sim
def test_a_channel_shuffle_verifies_exactly_against_torch(kb):
    (r,) = verify_many([pipe(kb, TASK)], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason
    assert r.max_abs_err == 0 and r.design_kept


@pytest.mark.sim
def test_a_block_read_from_the_wrong_rows_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, TASK), "[0, i * q, 0]", "[0, i * p, 0]")])
    assert r.status != J.OK and r.passed is False, (r.label, r.status, r.error)


@pytest.mark.sim
def test_a_swap_that_copies_along_q_verifies_too(kb, tmp_path):
    """P > Q: the blocks are x[:, :, q] (P, R), landing at rows q x P of the output."""
    p = Pipeline(kb, Design(task=_write(tmp_path, _task("x.transpose(1, 2)", (4, 6, 3, 16)))))
    k = kernel_of(p)
    assert k.supported and "for i in range(q):" in k.source, k.reason
    (r,) = verify_many([p], jobs=1, cache=False)
    assert r.passed and r.max_abs_err == 0, r.reason


def test_a_swap_of_the_last_axis_is_one_pypto_transpose(kb, tmp_path):
    """The trailing rows of a swap of the last axis are single elements: no block copy, one
    pypto.transpose of the (A, P, Q) layout (TRANSPOSE.last-axis)."""
    c = extract_contract(_task("x.transpose(2, 3)"), kb)
    plan = plan_dims(c, kb)
    assert plan.strategy == "swap-blocks", plan.reason
    assert plan.kernel_shapes == [(12, 5, 16)] and plan.output_kernel_shape == (12, 16, 5)
    p = Pipeline(kb, Design(task=_write(tmp_path, _task("x.transpose(2, 3)"))))
    k = kernel_of(p)
    assert k.supported and k.pattern == "transpose", k.reason
    assert "pypto.assemble(pypto.transpose(x_all, 1, 2), [0, 0, 0], out)" in k.source
    assert "return out.reshape(x.shape[0], x.shape[1], x.shape[3], x.shape[2])" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


@pytest.mark.parametrize(("name", "swaps"), [("far_swap.py", [(2, 3), (1, 2), (2, 3)]),
                                             ("rotate_axes.py", [(0, 1)])])
def test_a_permutation_is_a_chain_of_neighbouring_swaps(kb, name, swaps):
    """far_swap moves every axis on its own; rotate_axes, permute(2, 0, 1), keeps axes 0 and 1 together, so it
    is one swap of (4 x 96, 160): a free reshape, one transpose of the last axis, a free reshape."""
    from pypto_tui.design import task_kernels

    found = task_kernels(pipe(kb, name))
    assert found.supported and found.chain, found.reason
    got = [(k.pipeline.contract().op_args["dim0"], k.pipeline.contract().op_args["dim1"]) for k in found.kernels]
    assert got == swaps


@pytest.mark.sim
@pytest.mark.parametrize("name", ["tokens_first.py", pytest.param("rotate_axes.py", marks=pytest.mark.exhaustive),
                                  "far_swap.py"])
def test_last_axis_swaps_and_permutations_verify_exactly(kb, name):
    (r,) = verify_many([pipe(kb, name)], jobs=1, cache=False)
    assert r.supported and r.passed and r.design_kept, r.reason
    assert r.max_abs_err == 0 and r.kernels_run == r.kernels_defined >= 1


@pytest.mark.sim
def test_a_last_axis_swap_given_back_the_wrong_shape_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, "tokens_first.py"), "return out.reshape(x.shape[0], x.shape[2], x.shape[1])",
                          "return out.reshape(x.shape[0], x.shape[1], x.shape[2]).transpose(1, 2)")])
    assert r.status != J.OK and r.passed is False, (r.label, r.status, r.error)


def test_a_bias_moved_heads_first_is_one_last_axis_swap(kb):
    """(49, 49, 6).permute(2, 0, 1): axis by axis, the second swap would move rows of 49 fp32 (196 bytes, no
    whole 32-byte rows: refused); as runs, it is one transpose of (2401, 6)."""
    from pypto_tui.design import task_kernels

    found = task_kernels(pipe(kb, "heads_first_bias.py"))
    assert found.supported, found.reason
    assert [k.ops for k in found.kernels] == ["transpose", "add"]
    assert found.kernels[0].pipeline.contract().inputs[0].shape == (2401, 6)


@pytest.mark.sim
def test_a_bias_moved_heads_first_verifies(kb):
    (r,) = verify_many([pipe(kb, "heads_first_bias.py")], jobs=1, cache=False)
    assert r.supported and r.passed and r.design_kept, r.reason
    assert r.kernels_run == r.kernels == 2 and r.max_abs_err == 0
