"""A chain's test sizes (issue 21 with issue 20's strictness): the task's size constants rewritten
as source, and the search that shrinks them while every kernel keeps its design."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.task_sizes import size_constants, size_groups, with_sizes
from pypto_tui.design import Design, Pipeline, module_stages
from pypto_tui.errors import InputError
from pypto_tui.kb import get_kb

CHAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"

SOURCE = """import torch
n = 8
batch_size = 1024
d = 3
rows = cols = 128
depth, height, width = 16, 32, 32
depth = 24
eps = 1e-5
flag = 1
class Model:
    size = 7
def get_inputs():
    inner = 99
    return [torch.rand(batch_size, rows, cols)]
"""


def test_size_constants_are_the_last_whole_number_bound_at_module_level():
    assert size_constants(SOURCE) == {"n": 8, "batch_size": 1024, "d": 3, "rows": 128, "cols": 128, "depth": 24,
                                      "height": 32, "width": 32}


def test_a_chained_assignment_is_one_unit():
    assert ("cols", "rows") not in size_groups(SOURCE)
    assert ("rows", "cols") in size_groups(SOURCE) and ("batch_size",) in size_groups(SOURCE)


def test_with_sizes_changes_only_the_named_last_bindings():
    out = with_sizes(SOURCE, {"batch_size": 2, "depth": 4, "width": 8, "rows": 16, "cols": 16})
    assert "batch_size = 2\n" in out and "rows = cols = 16\n" in out
    assert "depth, height, width = 16, 32, 8\n" in out and "depth = 4\n" in out  # the earlier depth stays
    assert "size = 7" in out and "inner = 99" in out and "n = 8\n" in out
    assert size_constants(out)["batch_size"] == 2


def test_with_sizes_refuses_what_it_cannot_do():
    with pytest.raises(InputError, match="eps is not a size constant"):
        with_sizes(SOURCE, {"eps": 2})
    with pytest.raises(InputError, match="one value"):
        with_sizes(SOURCE, {"rows": 16, "cols": 32})
    with pytest.raises(InputError, match="whole number >= 1"):
        with_sizes(SOURCE, {"batch_size": 0})
    with pytest.raises(InputError, match="does not parse"):
        size_constants("def (")


def test_the_rewritten_task_reads_as_the_same_chain_at_the_new_sizes(tmp_path):
    src = (CHAIN / "linear_gelu_wide.py").read_text()
    small = tmp_path / "t.py"
    small.write_text(with_sizes(src, {"tokens": 4, "d_model": 64, "d_ff": 32}))
    c = extract_contract(small)
    assert c.init_params == {"d_model": 64, "d_ff": 32} and c.inputs[0].shape == (4, 64)
    shapes = {v["id"]: tuple(v["shape"]) for v in c.graph["values"]}
    assert shapes["proj.weight"] == (32, 64)


@pytest.mark.parametrize("name, batch, kept_sizes", [
    ("linear_gelu_wide.py", "tokens", {"d_ff": 4096}),
    ("conv_relu_scale_sizes.py", "images", {"c_in": 16, "c_out": 32, "k": 3}),
])
def test_the_test_sizes_keep_every_kernels_design(name, batch, kept_sizes, tmp_path, monkeypatch):
    from pypto_tui.sim import scaled
    from pypto_tui.sim.module_test import module_test, stage_keeps

    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path))
    p = Pipeline(get_kb(), Design(task=str(CHAIN / name)))
    full = module_stages(p)
    assert full is not None and not full.refused and len(full.stages) >= 2
    found = module_test(p, full)
    assert found.kept, found.notes
    assert batch in found.sizes and found.sizes[batch][1] < found.sizes[batch][0]
    test_values = size_constants(Path(found.pipeline.design.task).read_text())
    assert {k: test_values[k] for k in kept_sizes} == kept_sizes  # what the design needs stays
    # every kernel keeps its tile and cube tiles, and the loop its iterations and tail
    test_stages = module_stages(found.pipeline)
    for keep, stage in zip(stage_keeps(full), test_stages.stages, strict=True):
        if keep.keep is not None:
            g = stage.pipeline.geometry()
            own = tuple(stage.pipeline.needs().tiles[0].shape) if keep.keep.tile_shape else None
            assert not scaled.kept_problems(keep.keep, g.shape, g.matmul, own), stage.ops
    assert found.kernel.supported and "class ModelNew" in found.kernel.source
    assert str(tmp_path) in found.pipeline.design.task  # stored under the cache, not beside the task


def test_a_level1_task_is_no_module():
    p = Pipeline(get_kb(), Design(task=str(CHAIN.parent / "tasks" / "softmax_rows.py")))
    assert module_stages(p) is None


def test_a_list_of_sizes_is_one_size_per_element():
    """`layer_sizes = [16384, 16384]` (KernelBench level 3's MLPs) is two sizes, each shrunk on its own
    and written back into the list; an element below 2 is no size, and a list of other things none."""
    src = ("batch = 128\nlayer_sizes = [16384, 1, 8192]\nnames = ['a', 'b']\n"
           "def get_init_inputs():\n    return [layer_sizes]\n")
    assert size_constants(src) == {"batch": 128, "layer_sizes[0]": 16384, "layer_sizes[2]": 8192}
    assert ("layer_sizes[0]",) in size_groups(src) and ("layer_sizes[2]",) in size_groups(src)
    out = with_sizes(src, {"layer_sizes[2]": 64, "batch": 4})
    assert "layer_sizes = [16384, 1, 64]" in out and "batch = 4" in out and "names = ['a', 'b']" in out
    with pytest.raises(InputError, match="not a size constant"):
        with_sizes(src, {"layer_sizes[1]": 4})


def test_a_slice_that_follows_the_sizes_is_the_same_module_at_any_size() -> None:
    """`q, k, v = qkv.split(n_embd, dim=2)` and a causal mask's `bias[:, :, :T, :T]` slice at offsets and
    lengths that follow the task's sizes: the graph at a smaller width or sequence is the same module, so
    the module test may shrink them (it held KernelBench level-3 44 at its full sequence, x (2, 512, 768),
    where the end-to-end test needed 6.65 GB). A slice of another axis, or another kind of step, is not."""
    from pypto_tui.sim.module_test import _structure

    def graph(width: int, part: int, dim: int = 2, kind: str = "narrow") -> dict:
        step = {"kind": kind, "dim": dim, "start": part * width, "length": width}
        return {"values": [{"id": "x", "kind": "input", "shape": [2, 8, 3 * width]}],
                "nodes": [{"id": "n0", "op": "view", "inputs": ["x"], "shape": [2, 8, width],
                           "attrs": {"steps": [step]}}], "output": "n0"}

    assert _structure(graph(768, 1)) == _structure(graph(96, 1))
    assert _structure(graph(768, 1)) != _structure(graph(96, 1, dim=1))
    assert _structure(graph(768, 1)) != _structure(graph(96, 1, kind="select"))
