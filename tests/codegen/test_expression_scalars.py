"""An expression kernel that reads a number the task's __init__ keeps (`relu(x / self.scale)`) takes it
as a scalar of its factory, and forward hands it `self.scale`: the kernel never reads a name it was not
given (it used to write `x / scale` with no `scale` in scope, a NameError at the first call)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of

TASK = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self, scale: float = 0.05):\n        super().__init__()\n        self.scale = scale\n\n"
        "    def forward(self, x):\n        return {expr}\n\n\n"
        "def get_inputs():\n    return [torch.randn(64, 256)]\n\n\ndef get_init_inputs():\n    return [0.05]\n")


@pytest.mark.parametrize("expr", ["torch.relu(x / self.scale)", "torch.clamp(x * self.scale, -1.0, 1.0) + self.scale"])
def test_an_init_attribute_in_an_expression_is_a_scalar_of_the_kernel(kb, tmp_path: Path, expr: str) -> None:
    task = tmp_path / "t.py"
    task.write_text(TASK.format(expr=expr))
    k = kernel_of(Pipeline(kb, Design(task=str(task))))
    assert k.supported, k.reason
    tree = ast.parse(k.source)
    factory = next(f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name.startswith("create_"))
    assert [a.arg for a in factory.args.args][-1] == "scale"
    assert "float(self.scale))" in k.source
