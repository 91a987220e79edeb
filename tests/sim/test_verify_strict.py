"""What "verified" means, against planted bugs (issue 20), through the real pypto 0.2.0 compiler.

Each bug below passed the old count-based criterion or its one-tile test shapes: a matmul whose last
columns are never written, a matmul that drops K terms, a scan whose last columns are never computed,
a sum over the first tile of its axis only, and a forward that returns torch's answer instead of the
kernel's. Each is planted in the module pypto-tui scaffolds for a small task, and each must fail
with its reason named, while the unmutated module passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import Criterion, VerifyReport, verify_many

pytestmark = pytest.mark.sim

TASKS = Path(__file__).parent / "fixtures" / "tasks"

MATMUL_CALL = "pypto.matmul(A_chunk, B, pypto.DT_FP32, b_trans=False)"
PLANTS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "matmul": ("matmul_small.py", []),
    "matmul_last_columns_unwritten": ("matmul_small.py", [
        (MATMUL_CALL, "pypto.matmul(A_chunk, pypto.view(B, [k, n - 16], [0, 0]), pypto.DT_FP32, b_trans=False)")]),
    "matmul_k_terms_dropped": ("matmul_small.py", [
        ("A_chunk = pypto.view(A, [BASIC_BATCH, k], [off, 0])",
         "A_chunk = pypto.view(A, [BASIC_BATCH, k - 16], [off, 0])"),
        (MATMUL_CALL, "pypto.matmul(A_chunk, pypto.view(B, [k - 16, n], [0, 0]), pypto.DT_FP32, b_trans=False)")]),
    "matmul_torch_forward": ("matmul_small.py", [("        return out\n", "        return torch.matmul(A, B)\n")]),
    "sum": ("sum_wide_rows.py", []),
    "sum_first_tile_only": ("sum_wide_rows.py", [
        ("pypto.sum(x, 1, keepdim=True)", "pypto.sum(pypto.view(x, [d0, TILE_SHAPE[1]], [0, 0]), 1, keepdim=True)")]),
    "cumsum_last_columns_uncomputed": ("cumsum_rows.py", [
        ("scan_w = min(TILE_SHAPE[1], d1 - scan_c * TILE_SHAPE[1])",
         "scan_w = min(TILE_SHAPE[1], d1 - 8 - scan_c * TILE_SHAPE[1])")]),  # the last chunk 8 short
}


@pytest.fixture(scope="module")
def reports(kb, tmp_path_factory: pytest.TempPathFactory) -> dict[str, VerifyReport]:
    """Scaffold each task once, plant each bug in a copy, verify them all (two workers at a time)."""
    folder = tmp_path_factory.mktemp("plants")
    clean: dict[str, str] = {}
    for task in {t for t, _ in PLANTS.values()}:
        out = folder / f"clean_{task}"
        r = CliRunner().invoke(app, ["scaffold", str(TASKS / task), "-o", str(out)])
        assert r.exit_code == 0, r.output
        clean[task] = out.read_text(encoding="utf-8")
    names, pipelines, kernels = [], [], []
    for name, (task, edits) in PLANTS.items():
        source = clean[task]
        for old, new in edits:
            assert old in source, (name, old)
            source = source.replace(old, new)
        path = folder / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        names.append(name)
        pipelines.append(Pipeline(kb, Design(task=str(TASKS / task))))
        kernels.append(path)
    broken = folder / "sum_broken_inputs.py"  # the same task, its get_inputs() raising
    broken.write_text((TASKS / "sum_wide_rows.py").read_text(encoding="utf-8").replace(
        "    return [torch.randn(64, 65536)]", "    x = torch.randn(64, 65536)\n    raise RuntimeError('no data')\n"
        "    return [x]"), encoding="utf-8")
    names.append("broken_get_inputs")
    pipelines.append(Pipeline(kb, Design(task=str(broken))))
    kernels.append(folder / "sum.py")
    results = verify_many(pipelines, kernels=kernels, jobs=2, timeout_s=900, cache=False,
                          criterion=Criterion(trials=2))  # the seeds are what these tests count
    return dict(zip(names, results, strict=True))


@pytest.mark.parametrize("name", ["matmul", "sum"])
def test_the_unmutated_modules_pass_on_every_element_and_pass(reports, name: str) -> None:
    r = reports[name]
    assert r.passed, r.reason
    assert r.criterion == "kernelbench" and r.trials == 2 and r.trials_run == 2
    assert r.design_kept and r.fail_share == 0.0


@pytest.mark.parametrize(("name", "what"), [
    # never-written memory holds whatever was there: a wrong finite value or a NaN, both caught
    ("matmul_last_columns_unwritten", "elements outside atol 0.0001 + rtol 0.0001|NaN positions differ"),
    ("matmul_k_terms_dropped", "elements outside atol 0.0001 + rtol 0.0001"),
    ("cumsum_last_columns_uncomputed", "elements outside atol 0.0001 + rtol 0.0001|NaN positions differ"),
    ("sum_first_tile_only", "elements outside atol 0.0001 + rtol 0.0001"),
    ("matmul_torch_forward", "forward computes outside the kernels: aten.mm at line"),
])
def test_each_planted_bug_fails_with_its_reason(reports, name: str, what: str) -> None:
    r = reports[name]
    assert not r.passed and r.status == "mismatch", r.reason
    assert any(w in r.reason for w in what.split("|")), r.reason


def test_a_reduction_is_tested_over_two_tiles(reports) -> None:
    r = reports["sum_first_tile_only"]
    assert r.tile is not None and r.shapes["x"][1] >= 2 * r.tile[1]  # else the first tile is the whole axis


def test_the_last_columns_bug_names_a_last_column(reports) -> None:
    out = reports["matmul_last_columns_unwritten"].outputs[0]
    assert out["worst_index"][1] >= reports["matmul_last_columns_unwritten"].shapes["B"][1] - 16


def test_a_task_whose_get_inputs_raises_is_an_error_not_a_pass(reports) -> None:
    r = reports["broken_get_inputs"]
    assert not r.passed and r.status == "error"
    assert "get_inputs() raised RuntimeError" in r.reason and "no data" in r.reason


def test_a_bug_only_the_second_seed_meets_fails_with_its_trial_named(tmp_path: Path) -> None:
    """The trials after the first compute values only (worker._values_only): they must still
    compare every element. This kernel clips its input at a bound between the largest input of
    the first seed and that of the second, so only the second trial can see the bug."""
    import torch
    from support import LINT_PROBES, lint_probes

    from pypto_tui.sim import jobs, runner
    from pypto_tui.sim.worker import build_inputs

    module = lint_probes()
    inputs = (jobs.InputSpec((64, 512), "fp32"),)
    tops = [float(build_inputs(torch, inputs, s)[0].max()) for s in range(12)]
    seed = next(s for s in range(11) if tops[s] + 0.05 < tops[s + 1])
    bound = (tops[seed] + tops[seed + 1]) / 2
    clipped = f"out.move(pypto.exp(pypto.clip(x, -1.0e30, {bound!r})))"
    source = module.probe_source("plain").replace("out.move(pypto.exp(x))", clipped)
    assert source != module.probe_source("plain")
    job = jobs.SimJob(kind="verify", kernel_source=source, inputs=inputs, task_file=str(LINT_PROBES / "exp_task.py"),
                      label="clipped", seed=seed, trials=2)
    r = runner.run_one(job, cache=False)
    assert r.status == jobs.MISMATCH and r.passed is False and r.trials_run == 2, (r.status, r.error, r.reason)
    assert f"trial 2 of 2 (seed {seed + 1})" in (r.reason or "")
    assert len(r.passes_checked or ()) == 7  # the first trial's passes were all checked
