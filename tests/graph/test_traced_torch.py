"""The traced front end with torch: the fixtures traced for real (in the task runner), against the static
reader: on every chain fixture, a sample of the level-1 ones and the traced fixtures the static reader
reads too, both front ends give the same kernels (the number of kernel groups and each group's operators)
wherever the traced graph has no problem."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pypto_tui.contract.aten import graph_from_trace
from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.graph import OpGraph
from pypto_tui.plan import decompose, fusion_rules, partition
from pypto_tui.trace.tracer import trace_task

FIX = Path(__file__).resolve().parents[1] / "fixtures"
HAS_TORCH = importlib.util.find_spec("torch") is not None
CHAIN = sorted((FIX / "tasks_chain").glob("*.py"))
LEVEL1_SAMPLE = [FIX / "tasks" / f"{n}.py" for n in ("softmax_rows", "matmul_tall", "batched_matmul", "elu",
                                                      "max_over_dim", "mean_spatial", "group_norm", "rms_norm")]
STATIC_TRACED = [FIX / "tasks_traced" / f"{n}.py" for n in ("shape_unpack", "topk_gate", "topk_gather",
                                                             "vlad_normalize", "embed_norm", "cyclic_shift")]

pytestmark = [pytest.mark.torch, pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch")]


def kernels(g: OpGraph) -> list[list[str]]:
    """Each kernel's operators (sorted: two independent operators of one kernel may come in either order)."""
    d = decompose(g)
    return [sorted(d.node(n).op for n in grp.nodes) for grp in partition(d, fusion_rules(None)).groups]


def traced(path: Path) -> OpGraph:
    t = trace_task(path, timeout=240, use_cache=False)
    assert t.ok, t.message
    return graph_from_trace(t.data)


@pytest.mark.parametrize("task", CHAIN + LEVEL1_SAMPLE + STATIC_TRACED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_both_front_ends_give_the_same_kernels(task):
    c = extract_contract(task)
    assert c.graph is not None
    static = OpGraph.from_data(c.graph)
    g = traced(task)
    if g.problems or static.problems:
        pytest.skip(f"not comparable: {(g.problems or static.problems)[0]}")
    assert g.shape_of(g.output) == static.shape_of(static.output)
    assert kernels(g) == kernels(static)


@pytest.mark.parametrize("name", ["sequential_mlp", "modulelist_loop", "helper_function", "if_attribute",
                                  "shape_unpack", "causal_heads"])
def test_models_the_static_reader_refuses_are_traced(name):
    """The stored traces the fast tests read (tests/fixtures/traces) are what tracing gives today."""
    import json

    g = traced(FIX / "tasks_traced" / f"{name}.py")
    stored = graph_from_trace(json.loads((FIX / "traces" / f"{name}.json").read_text()))
    assert not g.problems
    assert [(n.op, n.inputs, n.shape, dict(n.attrs)) for n in g.nodes] == \
        [(n.op, n.inputs, n.shape, dict(n.attrs)) for n in stored.nodes]


def test_a_trace_is_cached_by_content_and_a_model_torch_refuses_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path / "cache"))
    task = tmp_path / "task.py"
    task.write_text((FIX / "tasks_traced" / "if_attribute.py").read_text())
    first = trace_task(task, timeout=240)
    again = trace_task(task, timeout=240)
    assert first.ok and not first.cached and again.cached and again.data["nodes"] == first.data["nodes"]
    task.write_text(task.read_text().replace("[8, True]", "[8, False]"))  # other content: traced again
    other = trace_task(task, timeout=240)
    assert not other.cached and [n["target"] for n in other.data["nodes"]] == ["aten.convolution.default",
                                                                            "aten.sigmoid.default"]
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                   "        return x.item() + 1 if x.sum().item() > 0 else x\n"
                   "def get_inputs():\n    return [torch.randn(2, 2)]\ndef get_init_inputs():\n    return []\n")
    t = trace_task(bad, timeout=240)
    assert t.status == "error" and t.message.startswith("torch.export failed") and "\n" not in t.message


def test_a_refusal_names_the_line_of_the_task_file(tmp_path):
    """The tracer records the task file's line each node came from; a refusal names it."""
    task = tmp_path / "sorted_rows.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        y = torch.relu(x)\n"
                    "        return torch.sort(y, dim=-1)[0]\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 3, 16, 16)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    g = traced(task)
    assert [p.split(":")[0] for p in g.problems] == ["aten.sort.default in forward, line 8"]


def test_a_task_importing_a_package_this_python_lacks_says_which_and_how_to_get_it(tmp_path, monkeypatch):
    """KernelBench's Mamba2 models import einops: the one line names the package and the install."""
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path / "cache"))
    task = tmp_path / "task.py"
    task.write_text("import torch\nimport not_a_package_here.layers\n\n\nclass Model(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return x\n\n\ndef get_inputs():\n"
                    "    return [torch.randn(2)]\n\n\ndef get_init_inputs():\n    return []\n")
    t = trace_task(task, timeout=120)
    assert not t.ok and "\n" not in t.message
    assert "imports not_a_package_here" in t.message and "pip install not_a_package_here" in t.message
