"""Fast tests that guard what the verdicts rest on (issue 20): each one fails when the code it guards
is changed in a small, plausible way (a loop with a tail labelled as dividing, the unified-buffer
step-down halving the other axis on a tie, a written-out L1 norm read as an L2 norm). The
comparison's boundary (allclose's inclusive bound) is guarded in tests/sim/test_compare.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.loops import candidate
from pypto_tui.tiles import held_bytes, step_down


def test_a_count_whose_last_iteration_is_short_does_not_divide(kb) -> None:
    tail = candidate(kb, (100, 64), (1, 64), 0, 16)  # BASIC_BATCH 7: 14 iterations of 7, then 2
    assert (tail.basic_batch, tail.num_iters, tail.tail) == (7, 15, 2)
    assert tail.tail_strategy == "none"
    whole = candidate(kb, (100, 64), (1, 64), 0, 10)  # BASIC_BATCH 10: ten full iterations
    assert (whole.basic_batch, whole.num_iters, whole.tail) == (10, 10, 10)
    assert whole.tail_strategy == "divides"
    assert any(f.rule == "P6.loop-tail" for f in tail.findings)
    assert not any(f.rule == "P6.loop-tail" and f.level != "info" for f in whole.findings)


def test_the_step_down_halves_the_largest_axis_and_the_later_one_on_a_tie(kb) -> None:
    """(8, 8192) holds 4 x 256 KB: halving the larger axis (8192) keeps the 8 rows; on a tie
    (128, 128) the later axis is halved, as every golden kernel was generated."""
    assert step_down(kb, (8, 8192), "fp32", live_buffers=4) == (8, 1024)
    tied = step_down(kb, (128, 128), "fp32", live_buffers=6)  # one halving: 6 x 32 KB = the 192 KB
    assert tied == (128, 64)
    assert held_bytes(kb, tied, "fp32", 6) <= kb.chip.ub_bytes < held_bytes(kb, (128, 128), "fp32", 6)


def test_the_step_down_keeps_the_last_axis_in_whole_32_byte_rows_while_another_axis_can_halve(kb) -> None:
    """ResNet's stem pool window tile (8, 32, 56) with its select's buffers: the largest axis is the last,
    but halving it gives 28 x 4 B = 112-byte rows (P4.last-dim-align: the NPU code generator refuses
    them), so the rows axis halves; a last axis that halves to whole rows still goes first."""
    stem = step_down(kb, (8, 32, 56), "fp32", live_buffers=4, select_mask=True)
    assert stem == (8, 16, 56) and (stem[-1] * 4) % kb.limits.last_dim_align_bytes == 0
    assert step_down(kb, (8, 8192), "fp32", live_buffers=4) == (8, 1024)  # 4 KB rows: still the last axis
    assert step_down(kb, (1, 1, 24), "fp32", live_buffers=5000)[-1] < 24  # nothing else to halve


def test_a_gather_along_the_last_axis_steps_down_its_leading_axes_first(kb) -> None:
    """A 3-D max pool's window tile (1, 1, 124, 128) with its select's buffers: halving the last
    axis (the default) gives (1, 1, 124, 64), whose GATHER ops lost two pass-verify rows on pypto
    0.2.0; keep_last halves the rows, and the last axis only once every leading axis is 1."""
    plain = step_down(kb, (1, 1, 124, 128), "fp32", live_buffers=3, select_mask=True)
    kept = step_down(kb, (1, 1, 124, 128), "fp32", live_buffers=3, select_mask=True, keep_last=True)
    assert plain[-1] < 128
    assert kept[-1] == 128 and kept[2] < 124
    assert step_down(kb, (1, 1, 1, 65536), "fp32", live_buffers=3, keep_last=True)[-1] < 65536

NORM_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(("expr", "op"), [
    ("x / torch.sum(torch.abs(x), dim=1, keepdim=True)", "l1_norm"),
    ("x / torch.mean(torch.abs(x), dim=1, keepdim=True)", "l1_norm"),
    ("x / torch.norm(x, p=1, dim=1, keepdim=True)", "l1_norm"),
    ("x / torch.norm(x, p=2, dim=1, keepdim=True)", "l2_norm"),
    ("x / torch.sqrt(torch.sum(x * x, dim=1, keepdim=True))", "l2_norm"),
    ("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)", "rms_norm"),
])
def test_written_out_norms_are_told_apart(kb, tmp_path: Path, expr: str, op: str) -> None:
    task = tmp_path / "norm.py"
    task.write_text(NORM_TASK.format(expr=expr), encoding="utf-8")
    c = extract_contract(task, kb)
    assert c.supported, c.reason
    assert (c.family, c.op) == ("norm", op)


def test_a_later_trials_failure_is_the_reason_not_the_earlier_trials_pass() -> None:
    """KernelBench level-1 task 85 (full run, 2026-12-02): trial 1 passed, trial 2 ran out of memory, and
    the FAIL line read "all 838656 elements within atol ..." (trial 1's reason). The worker now states
    each failure itself, naming the trial; verify's report takes that reason for a crash."""
    from dataclasses import replace as _replace

    from pypto_tui.sim import jobs as J
    from pypto_tui.sim.verification import PreparedVerify, VerifyReport, finish_verify
    from pypto_tui.sim.worker import _in_trial

    job = J.SimJob(kind="verify", kernel_source="", inputs=(), label="t", task_file="task.py", trials=2)
    first_passed = J.SimResult(kind="verify", status=J.CRASHED, label="t", trials_run=1,
                               reason="all 838656 elements within atol 0.0001", error="out of memory")
    said = _in_trial(job, first_passed, "out of memory under the worker's limit of 8192 MB")
    assert said == "trial 2 of 2: out of memory under the worker's limit of 8192 MB"
    assert _in_trial(job, _replace(first_passed, trials_run=None), "refused") == "refused"
    report = finish_verify(PreparedVerify(job, VerifyReport(supported=True, passed=False, reason="")),
                           _replace(first_passed, reason=said))
    assert not report.passed and report.reason == said


def test_the_stem_pool_is_scaffolded_without_a_finding_of_our_own_lint(kb) -> None:
    """The window tile stepped down for the select's buffers stays in whole 32-byte rows, so the module the
    tool writes is one its own lint passes (it flagged 112-byte rows in 7 of KernelBench's level-3 CNNs)."""
    from pathlib import Path

    from pypto_tui.design import Design, Pipeline, kernel_of
    from pypto_tui.lint.engine import lint_source

    task = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv" / "stem_pool.py"
    p = Pipeline(kb, Design(task=str(task)))
    k = kernel_of(p)
    assert k.supported, k.reason
    assert "TILE = (8, 16, 56)" in k.source
    assert lint_source(k.source, "stem_pool.py", kb=kb, task_signature=p.contract().signature) == []


def test_running_out_of_memory_says_how_to_raise_the_cap() -> None:
    from pypto_tui.sim import jobs as J
    from pypto_tui.sim.worker import _out_of_memory

    job = J.SimJob(kind="verify", kernel_source="", inputs=(), label="t", task_file="task.py", trials=1,
                   memory_limit_mb=4096)
    result = J.SimResult(kind="verify", status="", label="t")
    _out_of_memory(job, result)
    assert result.status == J.CRASHED and result.error is not None
    assert result.error.startswith("out of memory under the worker's limit of 4096 MB")
    assert "--memory-mb raises the cap" in result.error
