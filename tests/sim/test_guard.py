"""Only kernels compute (sim/guard.py), without the compiler: modules pypto-tui scaffolds run their
`forward` with pypto's jit replaced by kernels that compute in torch inside the launch (where torch
is the kernel's), so the guard sees exactly what the real worker sees around each launch. The honest
scaffolds pass; the four ways a forward can do the kernels' work itself each fail, naming the
operation and the module's line; the compiler-backed twins are in test_only_kernels_compute.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fake_pypto import faked, run_guarded
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.sim.guard import jit_kernels

torch = pytest.importorskip("torch")
F = torch.nn.functional

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOFTMAX = FIXTURES / "tasks" / "softmax_rows.py"
GEMM = FIXTURES / "tasks_extra" / "gemm_scale_leaky_relu.py"  # kernel 0: the GEMM, kernel 1: the epilogue
GEMM_ARGS = [256, 192, 2.0, 0.1]


@pytest.fixture(scope="module")
def scaffolds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("scaffolds")
    out = {}
    for task in (SOFTMAX, GEMM):
        r = CliRunner().invoke(app, ["scaffold", str(task), "-o", str(folder / task.name)])
        assert r.exit_code == 0, r.output
        out[task.stem] = (folder / task.name).read_text(encoding="utf-8")
    return out


def kernels_compute(name: str, args: dict[str, Any]) -> None:
    """What each scaffolded kernel computes, done by torch inside the launch."""
    if name == "softmax_kernel":
        args["out"].copy_(torch.softmax(args["x"], dim=1))
    elif name == "matmul_kernel":
        args["out"].copy_(args["x"] @ args["gemm_weight"].T)
    elif name == "broadcast_kernel":
        args["out"].copy_(F.leaky_relu((args["n0m"] + args["gemm_bias"]) * 2.0, 0.1))
    elif name == "exp_only_kernel":
        args["out"].copy_(torch.exp(args["x"]))


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, task: str) -> tuple[Any, Any, Any]:
    """Run the module's forward under the guard; (guard, forward's result, the baseline's)."""
    path = tmp_path / f"{task}_module.py"
    path.write_text(source, encoding="utf-8")
    torch.manual_seed(0)
    x = torch.randn(16, 64) if task == "softmax_rows" else torch.rand(8, 256)
    with faked(monkeypatch):
        guard, got, model = run_guarded(torch, path, [] if task == "softmax_rows" else GEMM_ARGS, [x],
                                        compute=kernels_compute)
    if task == "softmax_rows":
        return guard, got, torch.softmax(x, dim=1)
    return guard, got, F.leaky_relu((x @ model.gemm.weight.T + model.gemm.bias) * 2.0, 0.1)


@pytest.mark.parametrize("task", ["softmax_rows", "gemm_scale_leaky_relu"])
def test_an_honest_scaffold_passes_the_guard(scaffolds, tmp_path: Path, monkeypatch, task: str) -> None:
    guard, got, want = run(tmp_path, monkeypatch, scaffolds[task], task)
    assert guard.problem(got) is None and guard.outside == []
    assert len(guard.launches) == len(guard.kernels) == (1 if task == "softmax_rows" else 2)
    assert torch.allclose(got, want, atol=1e-5)  # the fake kernels do compute the answer


def test_attack_1_a_torch_gemm_instead_of_kernel_0_fails(scaffolds, tmp_path: Path, monkeypatch) -> None:
    source = edit(scaffolds["gemm_scale_leaky_relu"], "t_n0m = self._k0(x, self.gemm.weight)",
                  "t_n0m = x @ self.gemm.weight.T")
    guard, got, want = run(tmp_path, monkeypatch, source, "gemm_scale_leaky_relu")
    assert torch.allclose(got, want, atol=1e-5)  # the values are right: only the guard can tell
    why = guard.problem(got)
    line = line_of(source, "t_n0m = x @ self.gemm.weight.T")
    assert why is not None and f"aten.mm at line {line} of the module" in why, why
    assert [k[0] for k in guard.not_run()] == ["matmul_kernel"] and len(guard.launches) == 1


def test_attack_2_the_epilogue_in_torch_handed_to_kernel_1_and_returned_fails(scaffolds, tmp_path: Path,
                                                                              monkeypatch) -> None:
    source = edit(scaffolds["gemm_scale_leaky_relu"], "        t_n2 = self._k1(t_n0m, self.gemm.bias)\n",
                  "        t_n2 = torch.nn.functional.leaky_relu((t_n0m + self.gemm.bias) * 2.0, 0.1)\n"
                  "        self._k1(t_n2, self.gemm.bias)\n")
    guard, got, want = run(tmp_path, monkeypatch, source, "gemm_scale_leaky_relu")
    assert torch.allclose(got, want, atol=1e-5)
    why = guard.problem(got)
    assert why is not None and "aten.add at line" in why, why
    assert {o.op for o in guard.outside} == {"aten.add", "aten.mul", "aten.leaky_relu"}
    # Every kernel ran, and the output was handed to one: still not a kernel's output.
    guard.outside.clear()
    assert guard.not_run() == []
    why = guard.problem(got)
    assert why is not None and "output 0 was written by no kernel as its output" in why, why


def test_attack_3_a_kernel_for_exp_then_a_torch_softmax_copied_into_its_output_fails(scaffolds, tmp_path: Path,
                                                                                     monkeypatch) -> None:
    source = re.sub(r"\bsoftmax_kernel\b", "exp_only_kernel", scaffolds["softmax_rows"])
    source = edit(source, "        kernel(x, out)\n",
                  "        kernel(x, out)\n        out.copy_(torch.softmax(x, dim=1))\n")
    guard, got, want = run(tmp_path, monkeypatch, source, "softmax_rows")
    assert torch.allclose(got, want, atol=1e-6)
    line = line_of(source, "out.copy_(torch.softmax(x, dim=1))")
    assert [(o.op, o.line) for o in guard.outside] == [("aten._softmax", line), ("aten.copy_", line)]
    why = guard.problem(got)
    assert why is not None and f"aten._softmax at line {line}" in why and "(and 1 more)" in why
    # The copy alone, unseen by the modes (as a write through numpy or raw memory would be): the
    # output was changed after the kernel wrote it.
    guard.outside.clear()
    why = guard.problem(got)
    assert why is not None and "output 0 was changed after kernel exp_only_kernel wrote it" in why, why


def test_attack_4_returning_torchs_own_result_fails(scaffolds, tmp_path: Path, monkeypatch) -> None:
    source = edit(scaffolds["softmax_rows"], "        return out\n", "        return torch.softmax(x, dim=1)\n")
    guard, got, _ = run(tmp_path, monkeypatch, source, "softmax_rows")
    why = guard.problem(got)
    assert why is not None and f"aten._softmax at line {line_of(source, 'return torch.softmax')}" in why
    guard.outside.clear()
    assert "output 0 was written by no kernel" in (guard.problem(got) or "")


@pytest.mark.parametrize(("code", "allowed"), [
    ("x.contiguous()", True),             # contiguous already: nothing is dispatched
    ("x.float()", True),                  # float32 already
    ("x.reshape(4, 64)", True),           # a view
    ("x.T", True),
    ("torch.zeros(3, 4)", True),
    ("torch.empty_like(x)", True),
    ("x.unsqueeze(0).detach()", True),
    ("x.T.contiguous()", False),          # a copy: permute + clone
    ("x.T.reshape(-1)", False),           # a reshape that cannot be a view copies
    ("x.clone()", False),
    ("x.half()", False),
    ("x.numpy()", False),                 # the data leaves torch, to be computed elsewhere
    ("x[0, 0].item()", False),
    ("torch.tensor([1.0])", False),
])
def test_what_forward_may_do_between_launches(tmp_path: Path, monkeypatch, code: str, allowed: bool) -> None:
    """Measured with torch 2.13 CPU at the dispatcher: views and allocation pass, data copies and
    computation do not, whatever their spelling."""
    source = f"""import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = {code}
        return x
"""
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    with faked(monkeypatch):
        guard, _, _ = run_guarded(torch, path, [], [torch.randn(16, 16)])
    assert (guard.outside == []) is allowed, [o.describe() for o in guard.outside]
    if not allowed:
        assert all(o.line == 4 for o in guard.outside)


def test_a_kernel_output_region_is_what_counts_not_its_storage(tmp_path: Path, monkeypatch) -> None:
    """A kernel that writes half of a buffer does not make the other half its output."""
    source = """import torch
import pypto

@pypto.frontend.jit()
def half_kernel(x, out):
    pass

class ModelNew(torch.nn.Module):
    def forward(self, x):
        big = torch.empty((2, *x.shape))
        half_kernel(x, big[0])
        return big[WHICH]
"""
    path = tmp_path / "half.py"
    for which, ok in (("0", True), ("1", False)):
        path.write_text(source.replace("WHICH", which), encoding="utf-8")
        with faked(monkeypatch):
            guard, got, _ = run_guarded(torch, path, [], [torch.randn(4, 8)],
                                     compute=lambda name, a: a["out"].copy_(a["x"] * 2))
        assert (guard.problem(got) is None) is ok, guard.problem(got)


def test_every_kernel_the_module_defines_is_found() -> None:
    source = '''
import pypto
from pypto.frontend import jit

def factory():
    @pypto.frontend.jit(runtime_options={})
    def k0(x, out):
        pass

    @jit
    def k1(x, out):
        pass

    return k0, k1

def helper():
    pass
'''
    found = jit_kernels(source)
    assert [n for n, _ in found] == ["k0", "k1"]
    assert [line for _, line in found] == [6, 10]  # the decorator's line: the code's co_firstlineno


TASK_FILES = sorted(p for p in FIXTURES.glob("tasks*/*.py"))


@pytest.mark.slow
def test_every_scaffolded_fixture_launches_each_kernel_and_computes_nothing_outside(kb, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """Every module pypto-tui writes for the fixtures (one kernel, a chain, a conv with its prepare
    kernel), run at the task's own shapes on the meta device: no torch work between the launches,
    and every jit kernel it defines launched."""
    import importlib.util

    from pypto_tui.design import Design, Pipeline, kernel_of

    checked, problems = 0, []
    for task in TASK_FILES:
        try:
            gen = kernel_of(Pipeline(kb, Design(task=str(task))))
        except Exception:
            continue  # the fixtures the tool refuses on purpose
        if not gen.supported:
            continue
        path = tmp_path / f"{task.parent.name}_{task.name}"
        path.write_text(gen.source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"task_{path.stem}", task)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with faked(monkeypatch), torch.device("meta"):
            guard, _, _ = run_guarded(torch, path, list(mod.get_init_inputs()), list(mod.get_inputs()))
        checked += 1
        if guard.outside or guard.not_run() or not guard.kernels:
            problems.append((path.name, [o.describe() for o in guard.outside], guard.not_run()))
    assert checked >= 90 and problems == []


@pytest.mark.parametrize(("wrong", "named"), [(None, None), (0, 0), (1, 1)])
def test_a_failing_chain_names_the_first_kernel_off_its_reference(kb, tmp_path: Path, wrong: int | None,
                                                                  named: int | None) -> None:
    """The compare step evaluates the plan's graph in numpy on the same inputs and the baseline's
    parameters, and names the first kernel whose kept result is off its intermediate."""
    import importlib.util

    from pypto_tui.design import Design, Pipeline
    from pypto_tui.sim import jobs
    from pypto_tui.sim.verification import _stage_map
    from pypto_tui.sim.worker import _name_first_diverging

    stages = _stage_map(Pipeline(kb, Design(task=str(GEMM))))
    assert stages is not None and [s["writes"] for s in stages["stages"]] == ["n0m", "n2"]
    spec = importlib.util.spec_from_file_location("gemm_task", GEMM)
    assert spec is not None and spec.loader is not None
    task = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(task)
    torch.manual_seed(0)
    model = task.Model(*GEMM_ARGS)
    x = torch.rand(64, 256)
    k0 = x @ model.gemm.weight.detach().T
    k1 = F.leaky_relu((k0 + model.gemm.bias.detach()) * 2.0, 0.1)
    kept = {"0": k0 * (1.01 if wrong == 0 else 1.0), "1": k1 + (0.5 if wrong == 1 else 0.0)}
    if wrong == 0:
        kept["1"] = F.leaky_relu((kept["0"] + model.gemm.bias.detach()) * 2.0, 0.1)  # right, on a wrong input
    torch.save(kept, tmp_path / "stages0.pt")
    job = jobs.SimJob(kind="verify", kernel_source="", inputs=(jobs.InputSpec((64, 256)),), task_file=str(GEMM),
                      passes=(), reference="tensor_graph", stages=stages)
    result = jobs.SimResult(kind="verify", status=jobs.MISMATCH)
    _name_first_diverging(torch, job, model, [x], tmp_path / "stages0.pt", result)
    assert result.first_diverging_kernel == named
    if named is not None:
        ops = "linear" if named == 0 else "add, mul, leaky_relu"
        assert (result.divergence or "").startswith(f"kernel {named} ({ops}) is the first whose output diverges")
    else:
        assert result.divergence is None
