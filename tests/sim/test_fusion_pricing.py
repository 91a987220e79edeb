"""`sim TASK --fusion compare` (issue 22 item 4): a chain's chosen plan and its unfused plan (every
operator a kernel of its own, its intermediate through global memory) priced on the same simulator,
per kernel and in total; the chosen plan must not be the slower."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline, module_plan_of

FIX = Path(__file__).resolve().parents[1] / "fixtures"
GEMM_CHAIN = FIX / "tasks_extra" / "gemm_scale_leaky_relu.py"  # linear (+ bias), * scale, leaky_relu
ONE_KERNEL = FIX / "tasks" / "softmax_rows.py"


def test_the_unfused_plan_gives_every_operator_its_own_kernel(kb) -> None:
    p = Pipeline(kb, Design(task=str(GEMM_CHAIN)))
    chosen, unfused = module_plan_of(p), module_plan_of(p.unfused())
    assert chosen is not None and unfused is not None
    assert len(unfused[1].groups) == len(unfused[0].ops) > len(chosen[1].groups)
    assert all(len(g.nodes) == 1 for g in unfused[1].groups)
    assert p.unfused().with_design(tile=None).fuse is False  # a changed decision stays unfused


def test_fusion_needs_a_chain_and_the_generated_module() -> None:
    r = CliRunner().invoke(app, ["sim", str(ONE_KERNEL), "--fusion", "compare"])
    assert r.exit_code == 2 and "one kernel" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["sim", str(GEMM_CHAIN), "--fusion", "fused"])
    assert r.exit_code == 2 and "use chosen, unfused or compare" in r.output


@pytest.mark.sim
def test_compare_prices_both_plans_and_the_chosen_is_not_slower() -> None:
    r = CliRunner().invoke(app, ["sim", str(GEMM_CHAIN), "--fusion", "compare", "--json", "--no-cache"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    f = doc["fusion"]
    chosen, unfused = f["chosen"], f["unfused"]
    assert chosen["status"] == unfused["status"] == "ok"
    assert len(chosen["kernel_us"]) == chosen["kernels"] < unfused["kernels"] == len(unfused["kernel_us"])
    assert chosen["e2e_us"] == pytest.approx(sum(chosen["kernel_us"]), abs=1e-3)  # each rounded to 4 places
    assert f["ratio"] == pytest.approx(chosen["e2e_us"] / unfused["e2e_us"])
    assert f["ratio"] <= 1.0, f  # measured 0.89 on pypto 0.2.0 (8.15 vs 9.16 µs)
    assert doc["result"]["e2e_us"] == chosen["e2e_us"]
