"""What Model.__init__ reaches beyond its own body goes with the composed module: the task file's
classes, helpers and constants, Model's helper methods, and the class attributes it reads through
self (KernelBench level-3 8_ResNetBasicBlock reads `out_channels * self.expansion`, a class attribute:
ModelNew without it stopped with "'ModelNew' object has no attribute 'expansion'")."""

from __future__ import annotations

import libcst as cst

from pypto_tui.codegen.compose import _with_methods
from pypto_tui.contract.init_body import task_support

SOURCE = '''import torch.nn as nn

WIDTH = 4
OTHER = 9


class Model(nn.Module):
    """A block."""
    expansion = WIDTH // 2
    unused = OTHER

    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c * self.expansion)
        self.act = self._act()

    def _act(self):
        return nn.ReLU() if self.leaky == 0 else nn.LeakyReLU(self.leaky)

    leaky = 0

    def forward(self, x):
        return self.act(self.fc(x))
'''


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def test_the_class_attributes_init_and_its_methods_read_go_with_it_and_what_they_read() -> None:
    s = task_support(SOURCE)
    assert [_code(a) for a in s.attributes] == ["expansion = WIDTH // 2", "leaky = 0"]  # not `unused`
    assert [m.name.value for m in s.methods] == ["_act"]
    # the import __init__ needs and the attribute's constant, not OTHER
    assert [_code(st) for st in s.statements] == ["import torch.nn as nn", "WIDTH = 4"]


def test_modelnew_gets_the_attributes_after_its_docstring_and_runs_them() -> None:
    model_new = cst.parse_module('class ModelNew:\n    """Doc."""\n\n    def __init__(self):\n'
                                 '        self.width = 2 * self.expansion\n')
    s = task_support(SOURCE)
    out = _with_methods(model_new.body[0], s.methods, s.attributes)
    text = cst.Module(body=[out]).code
    assert text.index('"""Doc."""') < text.index("expansion = WIDTH // 2") < text.index("def __init__")
    assert "    \n" not in text  # no whitespace-only line
    namespace: dict[str, object] = {"WIDTH": 4, "nn": None}
    exec(compile(text, "<composed>", "exec"), namespace)  # our own composed text
    assert namespace["ModelNew"]().width == 4  # type: ignore[operator, attr-defined]
