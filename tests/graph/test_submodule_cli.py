"""A kernel of a whole model by where it runs: `contract --json` names each kernel's submodule, and
`tile`, `loop` and `sim` pick one with `--submodule PATH` (the first kernel inside it, a note on stderr
when it holds several) beside `--kernel-index N`; a path no kernel runs in is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract.submodule import KNOWN_SHOWN, within
from pypto_tui.design import Design, Pipeline, kernel_of, task_kernels
from pypto_tui.kb import get_kb

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BN = FIX / "tasks_chain" / "linear_batchnorm1d.py"  # proj (linear, bias add), then bn's five kernels
SWIGLU = FIX / "tasks_chain" / "swiglu.py"
KERNEL_KEYS = {"index", "ops", "rule", "family", "op", "formula", "output_shape", "inputs", "reduction"}
"""The keys a kernel entry of `contract --json` had before `submodule`: scripts read them."""


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "160"})


def deep_model(tmp_path: Path, layers: int) -> Path:
    """A model of `layers` projections (self.layer0 ...), every other one followed by a ReLU."""
    init = "\n".join(f"        self.layer{i} = nn.Linear(width, width, bias=False)" for i in range(layers))
    calls = "\n".join(f"        x = torch.relu(self.layer{i}(x))" if i % 2 else f"        x = self.layer{i}(x)"
                      for i in range(layers))
    task = tmp_path / f"deep{layers}.py"
    task.write_text(f'''import torch
import torch.nn as nn


class Model(nn.Module):
    """{layers} projections."""

    def __init__(self, width):
        super().__init__()
{init}

    def forward(self, x):
{calls}
        return x


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64]
''')
    return task


def test_contract_json_names_each_kernels_submodule_and_keeps_its_keys():
    doc = json.loads(run("contract", str(BN), "--json").stdout)
    found = task_kernels(Pipeline(get_kb(), Design(task=str(BN))))
    assert [k["submodule"] for k in doc["kernels"]] == [k.submodule for k in found.kernels]
    assert [k["submodule"] for k in doc["kernels"]] == ["proj", "proj", "bn", "bn", "bn", "bn", "bn"]
    assert all(KERNEL_KEYS | {"submodule"} == set(k) for k in doc["kernels"])
    one = json.loads(run("contract", str(FIX / "tasks" / "softmax_rows.py"), "--json").stdout)
    assert [k["submodule"] for k in one["kernels"]] == [""]  # a level-1 task: Model.forward's one kernel


def test_tile_and_loop_pick_the_first_kernel_of_a_submodule_and_say_so():
    r = run("tile", str(BN), "--submodule", "bn", "--json", "--top", "2")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [(k["index"], k["ops"], k["submodule"]) for k in doc["kernels"]] == [(2, "mean", "bn")]
    assert r.stderr.count("\n") == 1 and "holds kernels 2, 3, 4, 5, 6: showing kernel 2" in r.stderr
    same = json.loads(run("tile", str(BN), "--kernel-index", "2", "--json", "--top", "2").stdout)
    assert same["kernels"] == doc["kernels"]  # the kernel --kernel-index 2 shows, its own tile ranking
    r = run("loop", str(SWIGLU), "--submodule", "self.up", "--json")
    assert r.exit_code == 0 and not r.stderr  # one kernel in `up`: nothing to say
    assert [(k["index"], k["submodule"]) for k in json.loads(r.stdout)["kernels"]] == [(1, "up")]


def test_the_text_output_heads_each_kernel_with_its_submodule():
    r = run("loop", str(BN), "--submodule", "proj")
    assert r.exit_code == 0, r.output
    assert "kernel 0 (linear) in proj" in r.stdout and "kernel 1" not in r.stdout


def test_a_submodule_no_kernel_runs_in_is_one_line_naming_the_known_ones(tmp_path):
    r = run("tile", str(BN), "--submodule", "head")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == "pypto-tui: error: --submodule head: no kernel runs in that submodule; known: proj, bn\n"
    task = deep_model(tmp_path, KNOWN_SHOWN + 2)
    r = run("loop", str(task), "--submodule", "layer", "--json")  # whole parts: `layer` is no `layer0`
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = r.stderr.strip()
    assert "\n" not in line and line.endswith(f"layer{KNOWN_SHOWN - 1}, ...")
    assert json.loads(r.stdout)["error"] == line.removeprefix("pypto-tui: error: ")
    r = run("tile", str(FIX / "tasks" / "softmax_rows.py"), "--submodule", "net")
    assert r.exit_code == 2 and "Model.forward" in r.stderr


@pytest.mark.parametrize("args", [
    ("tile", str(BN), "--submodule", "bn", "--kernel-index", "0"),
    ("loop", "--shape", "4096", "--tile", "1024", "--submodule", "bn"),
    ("sim", str(BN), "--submodule", "bn", "--kernel", str(BN)),
    ("sim", str(BN), "--kernel-index", "1", "--fusion", "compare"),
    ("sim", str(FIX / "tasks_chain"), "--submodule", "bn"),
    ("sim", str(BN), "--submodule", "nowhere"),
    ("sim", str(BN), "--kernel-index", "7"),
])
def test_a_kernel_pick_that_cannot_hold_is_refused_in_one_line(args):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("pypto-tui: error: ") and "Traceback" not in r.output


def test_sim_prices_the_picked_kernel_alone(monkeypatch):
    """No compiler runs here: the job sim would hand the workers is caught and answered."""
    from pypto_tui.cli import sim_cmd
    from pypto_tui.sim import jobs, runner

    seen: list[Any] = []

    def fake_run_one(job: Any, **_: Any) -> Any:
        seen.append(job)
        return jobs.SimResult(kind="cost", status="ok", label=job.label, e2e_us=1.5, tasks=3)

    monkeypatch.setattr(runner, "run_one", fake_run_one)
    monkeypatch.setattr(sim_cmd, "_require_sim", lambda: None)
    r = run("sim", str(BN), "--submodule", "bn.", "--loop-count", "2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    stage = task_kernels(Pipeline(get_kb(), Design(task=str(BN)))).kernels[2]
    assert doc["picked"] == {"index": 2, "ops": "mean", "submodule": "bn"} and within(stage.submodule, "bn")
    assert seen[0].kernel_source == kernel_of(stage.pipeline.with_design(loop_count=2)).source
    assert doc["loop_count"] == 2 and doc["result"]["e2e_us"] == 1.5
    assert doc["roofline_us"] is not None and "roofline_kernels" not in doc  # the kernel's own roofline
    text = run("sim", str(BN), "--kernel-index", "0")
    assert text.exit_code == 0 and "kernel 0 (linear) in proj, priced alone" in text.stdout
