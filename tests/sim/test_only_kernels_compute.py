"""Only kernels compute, through the real pypto 0.2.0 compiler (marker `sim`): the modules pypto-tui
scaffolds for the softmax fixture and a GEMM + epilogue chain pass `verify --kernel`, and each way a
forward can do the kernels' work itself fails, while its values are right:

1. kernel 0 of the chain replaced by `x @ self.gemm.weight.T` in forward;
2. the epilogue computed in torch, handed to kernel 1 as an input, and returned;
3. a softmax kernel that computes exp(x) only, then `out.copy_(torch.softmax(x, dim=1))`;
4. a forward that returns torch's own softmax;

and a module that, at import, makes the worker's comparison always pass still fails: the comparison
runs in a process that never imported it. A chain whose first kernel is wrong names that kernel, and
a kernel the compiler refuses is named with what the compiler's code means.
One batch, two workers (the machine is shared); the same checks without the compiler are in
test_guard.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import Criterion, VerifyReport, verify_many

pytestmark = pytest.mark.sim

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOFTMAX = FIXTURES / "tasks" / "softmax_rows.py"
GEMM = FIXTURES / "tasks_extra" / "gemm_scale_leaky_relu.py"

SOFTMAX_BODY = """        row_max = pypto.amax(x, 1, keepdim=True)
        shifted = pypto.exp(x - row_max)
        out.move(shifted / pypto.sum(shifted, 1, keepdim=True))"""
PATCH_COMPARE = """
import pypto_tui.sim.worker as _w  # a module that makes the comparison pass, if it could reach it


def _always(torch, job, got, want, result):
    result.passed, result.status, result.outputs, result.reason = True, "ok", [], "patched"


_w._compare = _always
"""

EDITS: dict[str, tuple[Path, list[tuple[str, str]]]] = {
    "softmax": (SOFTMAX, []),
    "gemm": (GEMM, []),
    "attack1_torch_gemm": (GEMM, [("t_n0m = self._k0(x, self.gemm.weight)", "t_n0m = x @ self.gemm.weight.T")]),
    "attack2_torch_epilogue_handed_in": (GEMM, [(
        "        t_n2 = self._k1(t_n0m, self.gemm.bias)\n",
        "        t_n2 = torch.nn.functional.leaky_relu((t_n0m + self.gemm.bias) * self.multiplier, 0.1)\n"
        "        self._k1(t_n2, self.gemm.bias)\n")]),
    "attack3_exp_kernel_then_copy": (SOFTMAX, [(SOFTMAX_BODY, "        out.move(pypto.exp(x))"), (
        "        kernel(x, out)\n", "        kernel(x, out)\n        out.copy_(torch.softmax(x, dim=1))\n")]),
    "attack4_returns_torch": (SOFTMAX, [("        return out\n", "        return torch.softmax(x, dim=1)\n")]),
    "chain_k_terms_dropped_in_kernel_0": (GEMM, [
        ("x_chunk = pypto.view(x, [BASIC_BATCH, k], [off, 0])",
         "x_chunk = pypto.view(x, [BASIC_BATCH, k - 16], [off, 0])"),
        ("pypto.matmul(x_chunk, gemm_weight,", "pypto.matmul(x_chunk, pypto.view(gemm_weight, [n, k - 16], [0, 0]),")]),
    "kernel_1_sets_no_tile": (GEMM, [("        pypto.set_vec_tile_shapes(*TILE_SHAPE_K1)\n", "")]),
    "patched_comparison": (SOFTMAX, [(SOFTMAX_BODY, "        out.move(pypto.exp(x))"),
                                     ("\nimport pypto\n", "\nimport pypto\n" + PATCH_COMPARE)]),
}


@pytest.fixture(scope="module")
def reports(kb, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[VerifyReport, str]]:
    folder = tmp_path_factory.mktemp("attacks")
    clean = {}
    for task in (SOFTMAX, GEMM):
        out = folder / f"clean_{task.name}"
        r = CliRunner().invoke(app, ["scaffold", str(task), "-o", str(out)])
        assert r.exit_code == 0, r.output
        clean[task] = out.read_text(encoding="utf-8")
    names, pipelines, kernels, sources = [], [], [], []
    for name, (task, edits) in EDITS.items():
        source = clean[task]
        for old, new in edits:
            assert source.count(old) == 1, (name, old)
            source = source.replace(old, new)
        path = folder / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        names.append(name)
        pipelines.append(Pipeline(kb, Design(task=str(task))))
        kernels.append(path)
        sources.append(source)
    results = verify_many(pipelines, kernels=kernels, jobs=2, timeout_s=900, cache=False,
                          criterion=Criterion(trials=2))  # every seed must launch every kernel
    return {n: (r, s) for n, r, s in zip(names, results, sources, strict=True)}


def line(source: str, text: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


@pytest.mark.parametrize(("name", "kernels"), [("softmax", 1), ("gemm", 2)])
def test_the_honest_scaffolds_pass_with_every_kernel_run(reports, name: str, kernels: int) -> None:
    r, _ = reports[name]
    assert r.passed, r.reason
    assert r.kernels_defined == r.kernels_run == kernels and r.outside_kernels == []
    assert r.trials_run == r.trials == 2 and len(r.passes_checked) == 7


@pytest.mark.parametrize(("name", "op", "text"), [
    ("attack1_torch_gemm", "aten.mm", "t_n0m = x @ self.gemm.weight.T"),
    ("attack2_torch_epilogue_handed_in", "aten.add", "t_n2 = torch.nn.functional.leaky_relu("),
    ("attack3_exp_kernel_then_copy", "aten._softmax", "out.copy_(torch.softmax(x, dim=1))"),
    ("attack4_returns_torch", "aten._softmax", "return torch.softmax(x, dim=1)"),
])
def test_each_attack_fails_naming_the_operation_and_its_line(reports, name: str, op: str, text: str) -> None:
    r, source = reports[name]
    assert not r.passed and r.status == "mismatch", r.reason
    assert f"forward computes outside the kernels: {op} at line {line(source, text)} of the module" in r.reason
    assert r.outside_kernels and r.outside_kernels[0] == {"op": op, "line": line(source, text),
                                                           "kind": "computes or copies"}
    if name == "attack1_torch_gemm":
        assert r.kernels_run == 1 and r.kernels_defined == 2
    if name == "attack3_exp_kernel_then_copy":
        assert {o["op"] for o in r.outside_kernels} == {"aten._softmax", "aten.copy_"}


def test_a_module_that_patches_the_comparison_still_fails(reports) -> None:
    r, _ = reports["patched_comparison"]
    assert not r.passed and r.status == "mismatch", r.reason
    assert re.search(r"elements outside atol", r.reason), r.reason


def test_a_failing_chain_names_the_first_kernel_that_diverges(reports) -> None:
    r, _ = reports["chain_k_terms_dropped_in_kernel_0"]
    assert not r.passed and r.first_diverging_kernel == 0, r.reason
    assert "kernel 0 (linear) is the first whose output diverges from the plan's intermediate n0m" in r.reason


def test_a_compile_failure_names_the_kernel_and_what_the_code_means(reports) -> None:
    report, source = reports["kernel_1_sets_no_tile"]
    assert not report.passed and report.status == "compile_error"
    jit = line(source, "def broadcast_kernel(") - 1  # the @jit decorator's line
    assert report.reason.startswith(f"kernel 1 (add, mul, leaky_relu; jit `broadcast_kernel`, module line {jit}) "
                                    "failed to compile:"), report.reason
    assert "F7A001" in report.reason and "set the vec tile in every kernel" in report.reason
    assert report.failed_kernel is not None and report.failed_kernel["name"] == "broadcast_kernel"
