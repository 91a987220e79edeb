"""What the operator families' tests share: the folders of our own task fixtures, a design
pipeline over one of them (with any Design fields a test wants to pin), a one-module task written
on the fly, and a conv's or pool's window plan."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pypto_tui.contract.conv import window_spec
from pypto_tui.contract.extract import extract_contract
from pypto_tui.design import Design, Pipeline
from pypto_tui.window import WindowPlan, plan_window

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"
CONV = EXTRA.parent / "tasks_conv"


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(EXTRA / name), **design))


def module_task(folder: Path, module: str, shape: tuple[int, ...]) -> str:
    """A task whose Model applies one torch.nn module, `module` its constructor call (such as
    "MaxPool2d(3, stride=2)"), to one random input of `shape`; the file is named by both."""
    digest = hashlib.sha1(repr((module, shape)).encode()).hexdigest()[:12]
    path = folder / f"task_{digest}.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n        self.op = nn.{module}\n\n    def forward(self, x):\n"
        "        return self.op(x)\n\n\n"
        f"def get_inputs():\n    return [torch.randn{shape}]\n\n\ndef get_init_inputs():\n    return []\n")
    return str(path)


def window_plan(kb, task: str | Path) -> WindowPlan:
    """The window plan of a conv or pool task, read statically."""
    return plan_window(window_spec(extract_contract(Path(task), kb)), limits=kb.limits.window)
