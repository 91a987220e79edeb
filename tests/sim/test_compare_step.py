"""The comparison with the baseline runs in a process that never imported the kernel module: the
runner hands the kernel worker's saved outputs to a second worker process (worker.run_compare),
which runs the task's Model and compares. Here the kernel worker is a stand-in (no compiler) that
saves given outputs and says `ran`; the compare step is the real one."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from pypto_tui.sim import jobs, runner

torch = pytest.importorskip("torch")

TASK = """import os
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        with open({pids!r}, "a") as f:
            f.write(f"baseline {{os.getpid()}} {{'pypto_tui_sim_kernel' in __import__('sys').modules}}\\n")

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""

KERNEL_STEP = """import json, os, sys
from pathlib import Path
import torch
from pypto_tui.sim import jobs
from pypto_tui.sim.worker import build_inputs

job = jobs.SimJob.from_json(json.loads(Path(sys.argv[1]).read_text()))
work = Path(job.work_dir)
(work / "handoff").mkdir()
for trial, seed in enumerate(job.trial_seeds()):
    x = build_inputs(torch, job.inputs, seed)[0]
    out = torch.softmax(x, dim=1) + ({wrong} if trial == 1 else 0.0)
    torch.save([out], work / "handoff" / f"trial{{trial}}.pt")
(work / "handoff" / "kernel.json").write_text(json.dumps({{"clobbered": [[] for _ in job.trial_seeds()]}}))
rows = work / "out" / "output_1" / "verify_1"
rows.mkdir(parents=True)
(rows / "verify_result_brief.csv").write_text(
    "passName,referPassName,verifyType,loopInfo,ioflag,verifyResult,maxAbsDiff,errorCount\\n"
    "Pass_04_ExpandFunction,tensor_graph,f,loop_idx_0=0,output0,PASS,0,0\\n")
with open({pids!r}, "a") as f:
    f.write(f"kernel {{os.getpid()}}\\n")
Path(sys.argv[2]).write_text(json.dumps({{"kind": "verify", "status": "ran", "kernel_calls": 1, "kernels_run": 1}}))
"""


def stand_in(tmp_path: Path, wrong: float) -> str:
    """`python -m pypto_tui.sim.worker JOB RESULT`: the kernel step is the stand-in, the compare step
    (a job with "step": "compare") the real worker."""
    step = tmp_path / "kernel_step.py"
    step.write_text(KERNEL_STEP.format(wrong=wrong, pids=str(tmp_path / "pids")))
    script = tmp_path / "python"
    script.write_text(f"""#!/bin/sh
if grep -q '"step": "compare"' "$3"; then exec {sys.executable} "$@"; fi
exec {sys.executable} {step} "$3" "$4"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.torch  # two worker processes that import torch each (seconds): CI's, not the fast run's
@pytest.mark.parametrize(("wrong", "status"), [(0.0, jobs.OK), (1e-3, jobs.MISMATCH)])
def test_the_baseline_and_the_comparison_run_in_a_process_of_their_own(tmp_path: Path, wrong: float,
                                                                       status: str) -> None:
    task = tmp_path / "softmax_task.py"
    task.write_text(TASK.format(pids=str(tmp_path / "pids")))
    job = jobs.SimJob(kind="verify", kernel_source="raise SystemExit('never imported')",
                      inputs=(jobs.InputSpec((4, 8)),), task_file=str(task), trials=2,
                      passes=("Pass_04_ExpandFunction",), reference="tensor_graph")
    r = runner.run_in_subprocess(job, timeout_s=120, python=stand_in(tmp_path, wrong))
    assert r.status == status, (r.error, r.reason)
    assert r.trials_run == 2 and r.kernels_run == 1 and r.kernel_calls == 1  # the kernel step's fields kept
    if wrong:
        assert "trial 2 of 2 (seed 1)" in (r.reason or "") and "elements outside atol" in (r.reason or "")
    else:
        assert r.passed and r.outputs and r.outputs[0]["max_abs_err"] < 1e-6
    (kernel,) = [ln.split()[1] for ln in (tmp_path / "pids").read_text().splitlines() if ln.startswith("kernel")]
    (baseline,) = [ln.split()[1:] for ln in (tmp_path / "pids").read_text().splitlines() if ln.startswith("base")]
    assert baseline[0] != kernel and baseline[1] == "False"


def test_a_compare_step_without_a_hand_off_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel worker that ended in an answer of its own (an error, a mismatch) is the answer."""
    from pypto_tui.sim import worker

    monkeypatch.setattr(worker, "guard_task_runner", lambda **kw: None)  # this process stays as it is
    job_path, result_path = tmp_path / "job.json", tmp_path / "result.json"
    job = jobs.SimJob(kind="verify", kernel_source="", inputs=(), task_file="t.py", work_dir=str(tmp_path / "w"),
                      step=jobs.COMPARE_STEP, passes=(), reference="tensor_graph")
    job_path.write_text(json.dumps(job.to_json()))
    mine = {"kind": "verify", "status": "mismatch", "reason": "forward computes outside the kernels: aten.mm"}
    result_path.write_text(json.dumps(mine))
    assert worker.main([str(job_path), str(result_path)]) == 0
    after = json.loads(result_path.read_text())
    assert {k: after[k] for k in mine} == mine
