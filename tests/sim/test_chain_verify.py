"""`verify TASK` on a chain the planner splits into kernels (issue 21), under issue 20's criterion:
the whole module runs at the task's size constants made as small as every kernel's design allows,
every pass of every kernel is checked, and a bug planted in the module at those sizes fails."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from support import tiered

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
# rotary.py and rotary_heads.py are one kernel each (test_rotary.py)
CHAINS = {"gemm_scale_leaky_relu.py": ROOT / "tasks_extra",
          **{p.name: p.parent for p in sorted((ROOT / "tasks_chain").glob("*.py")) if not p.name.startswith("rotary")}}
IN_CI = {"bmm_scale_softmax.py"}  # the GEMM epilogue: test_module_plan's verify --kernel; the rest: -m exhaustive
KNOWN_WRONG: dict[str, str] = {  # a wrong module today, kept in the sweep so that the fix shows (strict xfail)
}


def _params() -> list[object]:
    out: list[object] = []
    for p in tiered(CHAINS, IN_CI):
        name = p if isinstance(p, str) else p.values[0]
        if name in KNOWN_WRONG:
            p = pytest.param(name, marks=[pytest.mark.exhaustive,
                                          pytest.mark.xfail(reason=KNOWN_WRONG[name], strict=True)])
        out.append(p)
    return out


def plant(source: str) -> str:
    """Noise of up to 0.01 x (1 + |value|) on the last kernel's first input before it reads it: a
    wrong answer every trial sees, between two kernels each of which is right on its own (relative,
    so a large input such as logsumexp's sum of exponentials, whose log a fixed 0.01 hardly moves,
    is hit too). (A scale or a shift is no
    bug before a norm, which divides it out: GroupNorm, BatchNorm and LayerNorm passed such plants.)"""
    calls = list(re.finditer(r"^( +)(t_\w+) = self\._k(\d+)\((\w+)", source, re.M))
    assert calls, "no kernel call"
    last = calls[-1]
    head = last.group(0)
    arg = last.group(4)
    return source.replace(head, head[: -len(arg)] + f"{arg} + 0.01 * torch.rand_like({arg}) * (1 + {arg}.abs())", 1)


@pytest.mark.parametrize("name", _params())
def test_a_chain_verifies_at_sizes_that_keep_its_design_and_a_planted_bug_fails(kb, name: str) -> None:
    p = Pipeline(kb, Design(task=str(CHAINS[name] / name)))
    prepared = prepare_verify(p)
    assert prepared.job is not None, prepared.report.reason
    assert prepared.report.kernels >= 2 and prepared.report.design_kept, prepared.report.notes
    planted = replace(prepared.job, kernel_source=plant(prepared.job.kernel_source))
    clean, broken = run_many([prepared.job, planted], jobs=2, timeout_s=900, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed, ok.reason
    assert not ok.missing_passes and len(ok.passes_checked) >= 7
    # the plant computes in forward (torch.rand_like, +, *), which the guard refuses by name before any
    # comparison: only kernels may compute
    assert not bad.passed and "forward computes outside the kernels: aten.rand_like" in bad.reason, bad.reason
    if name == "linear_gelu_wide.py":  # too large as written: shrunk, the design kept
        assert ok.sizes["tokens"] == [2048, 256] and ok.shapes["x"][0] == 256
