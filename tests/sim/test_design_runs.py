"""Generated kernels through the real compiler: every scaffold verifies, broken ones fail, and the
sweeps report both the rules' verdict and the cost model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import selected_params
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.design_runs import cost_job, init_args, input_specs, sweep_tiles, variant
from pypto_tui.sim.runner import run_many, run_one
from pypto_tui.sim.verification import verify, verify_many
from pypto_tui.sim.verify_shapes import reduced_shapes

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
ALL = sorted(p.name for p in TASKS.glob("*.py"))


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(TASKS / name), **design))


def test_reduced_shapes_keep_rank_channels_and_distinct_sizes(kb):
    for name in ALL:
        p = pipe(kb, name)
        full = {i.name: i.shape for i in p.contract().tensor_inputs}
        small = reduced_shapes(p)
        for n, s in small.items():
            assert len(s) == len(full[n])
            assert all(a <= b for a, b in zip(s, full[n], strict=True))
            assert s[-1] >= 32 or s[-1] == full[n][-1]
    gn = reduced_shapes(pipe(kb, "group_norm.py"))["x"]
    assert gn[1] == 64 and gn[1] % 8 == 0  # channels the GroupNorm is built for stay
    mm = reduced_shapes(pipe(kb, "matmul_tall.py"))
    assert mm["A"][0] != mm["A"][1]  # M != K after scaling, so a transposed operand would show


@pytest.fixture(scope="session")  # session: xdist may leave the module and come back
def verified(kb, request):
    """Every selected fixture task verified once, two workers at a time (the machine has two cores)."""
    names = selected_params(request, "test_every_scaffold_verifies_against_its_baseline", "name")
    reports = verify_many([pipe(kb, n) for n in names], jobs=2, cache=False)
    return dict(zip(names, reports, strict=True))


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_every_scaffold_verifies_against_its_baseline(verified, name):
    report = verified[name]
    assert report.supported, report.reason
    assert report.passed, (report.reason, report.max_rel_err, report.fail_share)
    assert report.fail_share == 0.0
    assert report.shapes and all(len(s) for s in report.shapes.values())


def _broken_job(kb, name: str, old: str, new: str) -> J.SimJob:
    p = pipe(kb, name)
    shapes = reduced_shapes(p)
    edits = {f"inputs.{n}.shape": list(s) for n, s in shapes.items()}
    test = variant(p, contract_edits=edits, tile=[1, 16, 64])
    src = kernel_of(test).source
    assert src.count(old) == 1, src
    return J.SimJob(kind="verify", kernel_source=src.replace(old, new),
                    inputs=tuple(input_specs(test, with_recipe=True)), init_args=tuple(init_args(test)),
                    task_file=str(TASKS / name), label="broken")


@pytest.mark.sim
@pytest.mark.parametrize(("old", "new", "what"), [
    ("out.move(pypto.amax(x, 1))", "out.move(pypto.amax(x, 1) * (-1.0))", "wrong sign"),
    ("out.move(pypto.amax(x, 1))", "out.move(pypto.amax(x, 2))", "wrong axis"),
])
def test_broken_kernels_fail_verification(kb, old, new, what):
    result = run_one(_broken_job(kb, "max_over_dim.py", old, new), cache=False)
    assert result.status == J.MISMATCH, (what, result.status, result.error)
    assert result.passed is False


@pytest.mark.sim
def test_softmax_tile_order_in_microseconds(kb):
    p = pipe(kb, "softmax_rows.py")
    tiles = [(1, 8192), (2, 4096), (4, 4096)]
    results = run_many([cost_job(variant(p, tile=list(t)), str(t)) for t in tiles], jobs=2, cache=False)
    us = [r.e2e_us for r in results]
    assert all(r.ok for r in results), [r.error for r in results]
    assert us[0] < us[1] < us[2], us  # measured: 8.80 < 16.21 < 46.30


@pytest.mark.sim
@pytest.mark.slow
def test_tile_sweep_shows_the_cost_model_disagreeing_with_the_1kb_rule(kb):
    report = sweep_tiles(pipe(kb, "max_over_dim.py"), budget=6, challengers=2, cache=False)
    by_label = {r.label: r for r in report.rows}
    rejected = by_label["(1, 256, 64)"]
    assert rejected.measured and not rejected.qualified and "O1.contiguous-1kb" in rejected.rule_verdict
    assert report.best_by_rules.label == "(1, 16, 256)"
    assert report.best_by_cost is rejected
    assert report.best_qualified.label == "(1, 32, 256)"
    assert any("(1, 256, 64)" in d for d in report.disagreements)
    assert report.simulations < report.qualified


@pytest.mark.sim
def test_cli_verify_and_sim_json():
    runner = CliRunner()
    r = runner.invoke(app, ["verify", str(TASKS / "elu.py"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {"supported", "passed", "reason", "max_abs_err", "max_rel_err", "fail_share", "shapes"} <= set(d)
    assert d["passed"] is True and d["shapes"]["x"][0] <= 16
    r = runner.invoke(app, ["sim", str(TASKS / "elu.py"), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)["result"]
    assert res["status"] == "ok" and res["e2e_us"] > 0 and res["tasks"] >= 1


def test_cli_sim_says_what_to_install(monkeypatch):
    from pypto_tui.sim import availability

    def missing():
        raise availability.SimUnavailable("pypto is not installed: pip install 'pypto-tui[sim]'")

    monkeypatch.setattr(availability, "require_sim", missing)
    r = CliRunner().invoke(app, ["sim", str(TASKS / "elu.py")])
    assert r.exit_code == 2
    assert "pip install 'pypto-tui[sim]'" in r.stderr and "Traceback" not in r.output


def test_unsupported_task_is_reported_not_raised(kb):
    extra = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "unrecognised_op.py"
    report = verify(Pipeline(kb, Design(task=str(extra))))
    assert report.supported is False and report.passed is False and report.reason
    r = CliRunner().invoke(app, ["verify", str(extra), "--json"])
    assert r.exit_code == 1 and json.loads(r.stdout)["supported"] is False
