"""`sim TASK --kernel FILE` (issue 22): any module defining ModelNew is compiled in SIM mode with the
task's inputs; an exported module prices exactly as the generated kernel it was exported from, with
the same JSON keys, the roofline among them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app

pytestmark = pytest.mark.sim

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


M, N = 16, 2048


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
'''


def test_an_exported_module_prices_as_the_generated_kernel(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path / "cache"))
    task = tmp_path / "relu_small.py"
    task.write_text(TASK)
    kernel = tmp_path / "relu_kernel.py"
    runner = CliRunner()
    assert runner.invoke(app, ["scaffold", str(task), "-o", str(kernel)]).exit_code == 0
    generated = runner.invoke(app, ["sim", str(task), "--json"])
    from_file = runner.invoke(app, ["sim", str(task), "--kernel", str(kernel), "--json", "--no-cache"])
    assert generated.exit_code == 0 and from_file.exit_code == 0, (generated.stdout, from_file.stdout)
    g, f = json.loads(generated.stdout), json.loads(from_file.stdout)
    assert set(g) <= set(f) and f["kernel"] == str(kernel)
    assert f["result"]["status"] == "ok" and f["result"]["cached"] is False
    assert f["result"]["e2e_us"] == pytest.approx(g["result"]["e2e_us"]) and f["result"]["e2e_us"] > 0
    assert len(f["result"]["kernels"]) == 1
    # the roofline: x and the output once through HBM, 2 x 16 x 2048 x 4 B at 1.6e6 B/µs
    assert f["bound"] == "memory" and f["roofline_us"] == pytest.approx(2 * 16 * 2048 * 4 / 1.6e6)
    assert f["ratio"] == pytest.approx(f["result"]["e2e_us"] / f["roofline_us"]) and f["ratio"] > 1
    text = runner.invoke(app, ["sim", str(task), "--kernel", str(kernel)], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "x the roofline" in text.output and "memory-bound" in text.output
