"""`verify TASK --per-kernel`: each kernel of a module verified on its own (its own test shapes, random
inputs and worker, against its group of the task's graph), then the module end to end.

The planning tests need no compiler (torch for the references); the `sim` ones run the real compiler on a
three-kernel chain (a conv, GroupNorm, ReLU): clean, every kernel and the module pass; with a bug planted in
kernel 1, the verdict names kernel 1."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
import torch
from support import PYPTO_TUI

from pypto_tui.design import Design, Pipeline, module_stages
from pypto_tui.errors import InputError
from pypto_tui.sim.per_kernel import plan_kernel_jobs, run_kernel_jobs, verify_per_kernel
from pypto_tui.sim.verification import prepare_verify

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
CHAIN = ROOT / "tasks_chain" / "conv_groupnorm_relu.py"
WIDE = ROOT / "tasks_chain" / "linear_gelu_wide.py"
BUG = ("pypto.rsqrt(var + eps)", "pypto.rsqrt(var + eps) * 1.01")  # kernel 1 (GroupNorm) scales its output


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_one_job_per_kernel_each_at_its_own_shapes_against_its_own_reference(kb) -> None:
    p = Pipeline(kb, Design(task=str(CHAIN)))
    planned = plan_kernel_jobs(p)
    stages = module_stages(p)
    assert stages is not None
    assert [(k.index, k.ops) for k in planned] == [(0, "conv"), (1, "group_norm"), (2, "relu")]
    assert [k.ops for k in planned] == [s.ops for s in stages.stages]
    for k, s in zip(planned, stages.stages, strict=True):
        job = k.prepared.job
        assert job is not None and k.reference is not None, k.prepared.report.reason
        # the kernel's own module, the group's reference (never the task, never the kernel), its own label
        assert f"Kernel {s.index} of" in job.kernel_source and "class ModelNew" in job.kernel_source
        assert job.task_file == str(k.reference)
        assert job.task_file != str(CHAIN) and "ModelNew" not in k.reference.read_text()
        assert job.label == f"{CHAIN.name} kernel {k.index}" and job.stages is None
        assert [list(i.shape) for i in job.inputs] == list(k.prepared.report.shapes.values())
    # the conv runs at a batch of its own (2 images), the others at the task's own (4): its own shapes
    assert planned[0].prepared.report.shapes == {"x": [2, 8, 16, 16]}
    assert planned[1].prepared.report.shapes == {"n0": [4, 32, 16, 16]}
    assert all(k.prepared.report.design_kept for k in planned)


def test_each_reference_is_its_groups_computation(kb) -> None:
    """Under the worker's seed, the reference's conv draws the weights the task's conv draws; the norm and
    the ReLU are the torch operators themselves."""
    planned = plan_kernel_jobs(Pipeline(kb, Design(task=str(CHAIN))))
    refs = [_load(k.reference, f"ref{k.index}") for k in planned if k.reference is not None]
    assert len(refs) == 3
    x = torch.randn(2, 8, 16, 16)
    torch.manual_seed(0)
    got = refs[0].Model()(x)
    torch.manual_seed(0)
    want = torch.nn.Conv2d(8, 32, 3, padding=1)(x)
    assert got.dtype == torch.float32 and torch.allclose(got, want, atol=1e-5)
    y = torch.randn(4, 32, 16, 16)
    assert torch.allclose(refs[1].Model()(y), torch.nn.functional.group_norm(y, 4), atol=1e-5)
    assert torch.equal(refs[2].Model()(y), torch.relu(y))
    # get_inputs() gives the kernel's test shapes
    assert [tuple(t.shape) for t in refs[0].get_inputs()] == [(2, 8, 16, 16)]


def test_a_linear_kernel_takes_its_weight_as_an_input_and_runs_smaller(kb) -> None:
    planned = plan_kernel_jobs(Pipeline(kb, Design(task=str(WIDE))))
    assert [k.ops for k in planned] == ["linear", "add, gelu"]
    linear = planned[0].prepared
    assert linear.job is not None and len([i for i in linear.job.inputs if not i.is_scalar]) >= 2
    x = next(iter(linear.report.shapes.values()))
    assert x[0] < 2048, linear.report.shapes  # the tokens shrink, as the module's test shrinks them


def test_the_end_to_end_run_checks_the_wiring_at_the_smallest_sizes(kb) -> None:
    """Each kernel's design is verified on its own, so the module end to end need not hold every design at
    once: the wide GEMM's test keeps 256 tokens for the linear's design, its wiring check shrinks further."""
    p = Pipeline(kb, Design(task=str(WIDE)))
    designs, wiring = prepare_verify(p).report, prepare_verify(p, wiring=True).report
    assert designs.supported and wiring.supported, wiring.reason
    assert designs.design_kept and not wiring.design_kept
    assert any("checks the wiring" in n for n in wiring.notes)
    task = {"tokens": 2048, "d_model": 4096, "d_ff": 4096}
    work = lambda r: math.prod({**task, **{n: v[1] for n, v in r.sizes.items()}}.values())  # noqa: E731
    assert work(wiring) * 8 <= work(designs), (wiring.sizes, designs.sizes)


def test_one_kernel_tasks_are_refused_in_one_line(kb) -> None:
    with pytest.raises(InputError, match="one kernel"):
        plan_kernel_jobs(Pipeline(kb, Design(task=str(ROOT / "tasks" / "softmax_rows.py"))))


@pytest.mark.parametrize(("args", "message"), [
    ([str(CHAIN), "--per-kernel", "--kernel", str(CHAIN)], "--per-kernel verifies the generated module's kernels"),
])
def test_the_flag_refuses_what_it_cannot_verify_in_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([PYPTO_TUI, "verify", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    errors = [ln for ln in done.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and message in errors[0] and "note: verify executes" not in done.stderr, done.stderr


@pytest.mark.sim
@pytest.mark.exhaustive  # 211 s under load; the planted-bug test below runs the same jobs in CI
def test_a_chain_verifies_kernel_by_kernel_then_end_to_end(kb) -> None:
    r = verify_per_kernel(Pipeline(kb, Design(task=str(CHAIN))), timeout_s=900, cache=False)
    assert r.passed and r.per_kernel, r.reason
    assert [v["verdict"] for v in r.kernel_verdicts] == ["pass"] * 3
    for v in r.kernel_verdicts:
        assert v["passes_checked"] == v["passes_expected"] >= 7 and not v["missing_passes"], v
        assert v["max_abs_err"] is not None and v["seconds"] and v["peak_rss_mb"]
    assert r.kernels == 3 and len(r.passes_checked) >= 7 and not r.missing_passes  # the module end to end
    d = r.to_dict()
    assert d["kernel_verdicts"][1]["ops"] == "group_norm" and "passed" in d and "reason" in d


@pytest.mark.sim
def test_a_bug_planted_in_kernel_1_fails_naming_kernel_1(kb) -> None:
    p = Pipeline(kb, Design(task=str(CHAIN)))
    planned = plan_kernel_jobs(p)
    job = planned[1].prepared.job
    assert job is not None and job.kernel_source.count(BUG[0]) == 1
    planned[1] = replace(planned[1], prepared=replace(planned[1].prepared,
                                                      job=replace(job, kernel_source=job.kernel_source.replace(*BUG))))
    whole = prepare_verify(p)
    assert whole.job is not None and whole.job.kernel_source.count(BUG[0]) == 1
    whole = replace(whole, job=replace(whole.job, kernel_source=whole.job.kernel_source.replace(*BUG)))
    r = run_kernel_jobs(planned, whole, timeout_s=900, cache=False)
    assert not r.passed and r.first_diverging_kernel == 1, r.reason
    assert r.reason.startswith("kernel 1 (group_norm) fails on its own"), r.reason
    assert "elements outside" in r.reason or "outside atol" in r.reason, r.reason
    assert [v["verdict"] for v in r.kernel_verdicts] == ["pass", "fail", "pass"]


SPLIT_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        a, b, c = (x * 2.0).split(64, dim=2)
        return a * b + c


def get_inputs():
    return [torch.randn(16, 512, 192)]


def get_init_inputs():
    return []
'''


def test_a_split_of_a_kernels_output_keeps_its_parts_at_their_offsets(kb, tmp_path: Path) -> None:
    """Each part of `split` is a narrow kernel at a constant offset into an earlier kernel's output (named n0
    in its own forward): its graph keeps the part's source apart from the part (they once shared the id n0,
    so the part at 64 was cut from the part at 0 and planning stopped), and its test shapes keep the cut axis
    whole, where the start, the length or both would fall outside a narrower one."""
    task = tmp_path / "split3.py"
    task.write_text(SPLIT_TASK)
    planned = plan_kernel_jobs(Pipeline(kb, Design(task=str(task))))
    assert [k.ops for k in planned] == ["mul", "narrow", "narrow", "narrow", "mul, add"]
    for k in planned[1:4]:
        assert k.prepared.job is not None, k.prepared.report.reason
        (shape,) = k.prepared.report.shapes.values()
        assert shape[2] == 192


@pytest.mark.sim
def test_a_one_kernel_task_under_the_flag_is_verified_as_a_whole(tmp_path: Path) -> None:
    """So `verify FOLDER --per-kernel` takes every task of a folder: the modules kernel by kernel, a task of
    one kernel as itself (its one kernel is the whole), with a note saying so."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "softmax_rows.py").write_text((ROOT / "tasks" / "softmax_rows.py").read_text())
    done = subprocess.run([PYPTO_TUI, "verify", str(folder / "softmax_rows.py"), "--per-kernel", "--json",
                           "--timeout", "600"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "softmax_rows.py is one kernel, verified as a whole" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["passed"] and not doc.get("per_kernel") and not doc.get("kernel_verdicts")
