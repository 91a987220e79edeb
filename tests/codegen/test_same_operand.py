"""A binary op whose two operands are one tensor (`x + x`, the residual add of level-2 22 in its
unfused plan) is an expression of one input: a kernel with the parameter twice is not Python."""

from __future__ import annotations

import ast

from pypto_tui.contract.extract import extract_contract
from pypto_tui.design import Design, Pipeline, kernel_of

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return {expr}


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 256)]


def get_init_inputs():
    return []
'''


def test_x_plus_x_reads_one_input(kb, tmp_path) -> None:
    task = tmp_path / "twice.py"
    task.write_text(TASK.format(expr="x + x"))
    c = extract_contract(task)
    assert c.supported and c.family == "elementwise" and tuple(c.op_args["operands"]) == ("x",)
    src = kernel_of(Pipeline(kb, Design(task=str(task)))).source
    ast.parse(src)  # a duplicate parameter would be a SyntaxError here
    assert "out.move(x + x)" in src


def test_two_inputs_stay_a_named_binary_op(kb, tmp_path) -> None:
    task = tmp_path / "pair.py"
    task.write_text(TASK.format(expr="x + y"))
    c = extract_contract(task)
    assert (c.op, tuple(c.op_args["operands"])) == ("add", ("x", "y"))
