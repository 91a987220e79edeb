"""`tile TASK` and `loop TASK` on a chain (issue 21 item 4): every kernel, or one with
--kernel-index, ranked by the same pipeline the app and `scaffold` use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline, module_stages
from pypto_tui.kb import get_kb

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SWIGLU = FIX / "tasks_chain" / "swiglu.py"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "160"})


def test_tile_on_a_chain_lists_every_kernel_with_the_designs_own_pick():
    r = run("tile", str(SWIGLU), "--json", "--top", "3")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    stages = module_stages(Pipeline(get_kb(), Design(task=str(SWIGLU)))).stages
    assert [k["index"] for k in doc["kernels"]] == [s.index for s in stages]
    assert [k["ops"] for k in doc["kernels"]] == [s.ops for s in stages]
    for k, s in zip(doc["kernels"], stages, strict=True):
        assert tuple(k["recommended"]["tile"]) == s.pipeline.chosen_tile()


def test_kernel_index_picks_one_and_an_index_past_the_end_is_refused():
    one = json.loads(run("loop", str(SWIGLU), "--kernel-index", "0", "--json").stdout)
    assert [k["index"] for k in one["kernels"]] == [0] and one["kernels"][0]["recommended"]["loop_count"] >= 1
    r = run("tile", str(SWIGLU), "--kernel-index", "9")
    assert r.exit_code == 2 and "is 3 kernels (0-2)" in r.output
    r = run("tile", str(FIX / "tasks" / "softmax_rows.py"), "--kernel-index", "1")
    assert r.exit_code == 2 and "is one kernel" in r.output
    r = run("tile", "--shape", "64,64", "--kernel-index", "0")
    assert r.exit_code == 2 and "picks a kernel of a task file" in r.output


@pytest.mark.parametrize("task", ["tasks_conv/conv2d_depthwise.py", "tasks/softmax_rows.py"])
def test_tile_task_recommends_what_the_app_uses(task):
    """The depthwise conv's CLI ranked the input's shape while the app ranked the window tile."""
    p = Pipeline(get_kb(), Design(task=str(FIX / task)))
    doc = json.loads(run("tile", str(FIX / task), "--json").stdout)
    assert tuple(doc["recommended"]["tile"]) == p.chosen_tile()
    assert tuple(doc["shape"]) == tuple(p.needs().tiles[0].shape)
    loop = json.loads(run("loop", str(FIX / task), "--json").stdout)
    plan = p.loop_plan()
    want = plan.recommended.loop_count if plan and plan.recommended else None
    assert (loop["recommended"] or {}).get("loop_count") == want


def test_a_chains_roofline_adds_up_its_kernels():
    """sim's roofline for a chain: each kernel's own, and the sum of their bytes, operations and
    bounds (the intermediates each kernel writes and the next reads are counted)."""
    from pypto_tui.cli.sim_cmd import _module_roofline
    from pypto_tui.roofline import try_roofline

    p = Pipeline(get_kb(), Design(task=str(FIX / "tasks_chain" / "rmsnorm_linear.py")))
    total, per = _module_roofline(p)
    stages = module_stages(p).stages
    parts = [try_roofline(s.pipeline.contract(), p.kb)[0] for s in stages]
    assert [k["index"] for k in per] == [s.index for s in stages] and all(parts)
    assert total.work.bytes == sum(r.work.bytes for r in parts)
    assert total.memory_us == pytest.approx(sum(r.memory_us for r in parts))
    assert total.roofline_us == max(total.memory_us, total.vector_us, total.cube_us)
    # the intermediate between the norm's kernels and the projection is read and written
    x_bytes = 128 * 256 * 4
    assert total.work.bytes > 2 * x_bytes + 256 * 512 * 4 + 128 * 512 * 4
    assert _module_roofline(Pipeline(get_kb(), Design(task=str(FIX / "tasks" / "softmax_rows.py")))) == (None, [])


def test_a_chains_task_roofline_moves_its_inputs_weights_and_output_once():
    """The bound any plan of the module must meet: x (read by the norm's first kernel and again by its
    scaling), the gain, the projection's weight and the output, each once through HBM; the plan's own
    adds every intermediate and the second read of x."""
    from pypto_tui.roofline import module_roofline

    p = Pipeline(get_kb(), Design(task=str(FIX / "tasks_chain" / "rmsnorm_linear.py")))
    m = module_roofline(module_stages(p).stages, p.kb)
    x, gain, weight, out = 128 * 256 * 4, 256 * 4, 512 * 256 * 4, 128 * 512 * 4
    assert m.task.work.bytes == x + gain + weight + out
    assert m.plan.work.bytes == sum(r.work.bytes for r in m.parts) > m.task.work.bytes + x
    assert m.task.work.cube_macs == m.plan.work.cube_macs == 128 * 256 * 512


def test_contract_on_a_chain_describes_the_chain_not_its_last_operator():
    # q, k = Linear(x).split(d); softmax(bmm(q, k^T) / sqrt(d)): the task's root is a softmax, but of a
    # product, so the single-operator fields (a softmax of x, shaped as x) would describe another task
    doc = json.loads(run("contract", str(FIX / "tasks_traced" / "shape_unpack.py"), "--json").stdout)
    assert doc["supported"] and doc["family"] == "chain" and doc["op"] is None
    assert doc["formula"] is None and doc["reduction"] is None
    assert doc["output_shape"] == [4, 32, 32] == doc["kernels"][-1]["output_shape"]
    assert [k["op"] for k in doc["kernels"]] == ["matmul", "narrow", "narrow", "bmm", "div", "softmax"]
