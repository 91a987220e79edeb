"""Verification a kernel author can trust, through the real pypto 0.2.0 compiler (marker `sim`):

- every compiler pass is checked: a miscompile after the tensor graph fails with the pass named,
  and a pass that writes no row is not a pass;
- `verify --kernel FILE` checks any kernel module: an exported kernel passes, its twin with one
  sign flipped fails;
- the tile and loop count verified are the ones asked for;
- an exported module run as a user would, on this CPU-only machine, gives the right values with
  PYPTO_TUI_INTERPRET=1 and a clear error without it, and writes nothing in the working directory;
- a SIGTERM to `sim` leaves no worker process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import parent_and_command
from typer.testing import CliRunner

from pypto_tui.cli import app

pytestmark = pytest.mark.sim

SIM_FIXTURES = Path(__file__).parent / "fixtures"
TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
PASSES = ["Pass_04_ExpandFunction", "Pass_14_SplitK", "Pass_17_L1CopyInReuseMerge", "Pass_26_InferDynShape",
          "Pass_28_InferParamIndex", "Pass_36_CodegenPreproc"]


def verify_json(*args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(app, ["verify", *args, "--json", "--no-cache"])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def test_a_miscompile_after_the_tensor_graph_fails_with_the_pass_named(tmp_path: Path) -> None:
    task = str(SIM_FIXTURES / "tasks" / "upper_triangular_matmul.py")
    code, d = verify_json(task, "--kernel", str(SIM_FIXTURES / "triu_mask_kernel.py"))
    assert code == 1 and d["passed"] is False and d["status"] == "mismatch"
    assert d["first_failing_pass"] == "Pass_28_InferParamIndex"
    assert d["fail_share"] == 0.0  # the tensor graph alone is exact: checking it only would pass
    assert d["passes_checked"] == ["tensor_graph", *PASSES] and d["passes_expected"] == d["passes_checked"]
    assert "Pass_28_InferParamIndex is wrong" in d["reason"] and "2016 element(s)" in d["reason"]
    twin = tmp_path / "triu_grid_kernel.py"
    twin.write_text((SIM_FIXTURES / "triu_mask_kernel.py").read_text().replace('MASK = "broadcast"', 'MASK = "grid"'))
    code, d = verify_json(task, "--kernel", str(twin))
    assert code == 0 and d["passed"] is True and d["first_failing_pass"] is None


def test_a_kernel_whose_passes_write_no_rows_is_not_verified() -> None:
    code, d = verify_json(str(SIM_FIXTURES / "tasks" / "absolute.py"), "--kernel",
                          str(SIM_FIXTURES / "sign_abs_kernel.py"))
    assert code == 1 and d["passed"] is False and d["status"] == "unverified"
    assert d["fail_share"] == 0.0  # the values are right
    assert d["missing_passes"] == PASSES and d["passes_checked"] == ["tensor_graph"] and d["pass_rows"] == 0
    assert "not a pass" in d["reason"] and "at op SIGN" in d["reason"]


def _export(task: Path, out: Path) -> Path:
    r = CliRunner().invoke(app, ["scaffold", str(task), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_verify_kernel_passes_an_exported_kernel_and_fails_its_mutated_twin(tmp_path: Path) -> None:
    task = TASKS / "elu.py"
    exported = _export(task, tmp_path / "elu_pypto.py")
    code, d = verify_json(str(task), "--kernel", str(exported))
    assert code == 0 and d["passed"] is True, d["reason"]
    assert d["kernel"] == str(exported) and d["tile"] == [16384] and len(d["passes_checked"]) == 7
    source = exported.read_text()
    assert source.count(" - 1.0)") == 1
    twin = tmp_path / "elu_twin.py"
    twin.write_text(source.replace(" - 1.0)", " + 1.0)"))
    code, d = verify_json(str(task), "--kernel", str(twin))
    assert code == 1 and d["passed"] is False and d["first_failing_pass"] == "tensor_graph"
    assert d["fail_share"] > 0.3


def test_the_tile_and_loop_count_verified_are_the_ones_asked_for() -> None:
    code, d = verify_json(str(TASKS / "scalar_mul_large.py"), "--tile", "8192", "--loop-count", "8")
    assert code == 0 and d["passed"] is True, d["reason"]
    assert d["tile"] == [8192] and (d["design_tile"], d["design_loop_count"]) == ([8192], 8)
    assert d["design_kept"] is True and d["loop_count"] >= 2  # the loop keeps two iterations at least
    assert all(c.startswith("LOOP_COUNT = 8 -> ") for c in d["changes"])  # a count that changes is listed
    assert d["shapes"]["A"][0] * d["shapes"]["A"][1] >= d["loop_count"] * 8192  # a whole tile per iteration


def _run_module(exported: Path, cwd: Path, interpret: bool) -> subprocess.CompletedProcess[str]:
    """ModelNew()(x) as a user would, in a fresh process with no NPU, compared with torch there."""
    script = (
        "import importlib.util, sys, torch\n"
        f"spec = importlib.util.spec_from_file_location('user_kernel', {str(exported)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "x = torch.randn(8, 512)\n"
        "try:\n"
        "    y = m.ModelNew(1.0)(x)\n"
        "except Exception as exc:\n"
        "    print('RAISED', type(exc).__name__, exc); sys.exit(3)\n"
        "print('MAXERR', float((y - torch.nn.functional.elu(x, 1.0)).abs().max()))\n"
    )
    env = {k: v for k, v in os.environ.items()
           if k not in ("ASCEND_HOME_PATH", "AIKG_PYPTO_RUN_MODE", "PYPTO_TUI_WORKER", "PYPTO_TUI_INTERPRET",
                        "TILE_FWK_OUTPUT_DIR")}
    if interpret:
        env["PYPTO_TUI_INTERPRET"] = "1"
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_exported_module_computes_right_values_or_says_what_to_do(tmp_path: Path) -> None:
    exported = _export(TASKS / "elu.py", tmp_path / "elu_pypto.py")
    header = exported.read_text()
    assert "PYPTO_TUI_INTERPRET=1" in header and "pypto-tui verify TASK --kernel" in header
    cwd = tmp_path / "user"
    cwd.mkdir()
    refused = _run_module(exported, cwd, interpret=False)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "RAISED SimModeError" in refused.stdout and "PYPTO_TUI_INTERPRET=1" in refused.stdout
    assert "pypto-tui verify TASK --kernel" in refused.stdout
    assert list(cwd.iterdir()) == []
    interpreted = _run_module(exported, cwd, interpret=True)
    assert interpreted.returncode == 0, interpreted.stdout + interpreted.stderr[-2000:]
    err = float(interpreted.stdout.split("MAXERR")[1])
    assert err < 1e-5
    assert list(cwd.iterdir()) == []


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                out[int(entry.name)] = parent_and_command(int(entry.name))
    return out


def _workers_of(pid: int) -> tuple[list[int], list[int]]:
    """The compiler workers `pid` started (they run in their own session): its fresh-interpreter
    workers, or the children of its warm parent (zygote.py); and that warm parent."""
    procs = _processes()
    zygotes = [p for p, (ppid, cmd) in procs.items() if ppid == pid and b"pypto_tui.sim.zygote" in cmd]
    workers = [p for p, (ppid, cmd) in procs.items()
               if (ppid == pid and b"pypto_tui.sim.worker" in cmd) or ppid in zygotes]
    return workers, zygotes


def test_sigterm_to_sim_leaves_no_worker_behind(tmp_path: Path, alive) -> None:
    env = {**os.environ, "PYPTO_TUI_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYPTO_TUI_WORKER", None)
    cli = subprocess.Popen([sys.executable, "-m", "pypto_tui", "sim", str(TASKS / "scalar_mul_large.py"),
                            "--sweep", "loops", "--no-cache"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while not workers and time.monotonic() < deadline and cli.poll() is None:
        time.sleep(0.1)
        workers, zygotes = _workers_of(cli.pid)
    assert workers, "no worker started"
    groups = {os.getpgid(w) for w in workers}
    cli.send_signal(signal.SIGTERM)
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode == 128 + signal.SIGTERM, err
    assert "stopping the compiler workers" in err
    time.sleep(0.3)
    assert not any(alive(w) for w in [*workers, *zygotes])
    for g in groups:  # nor anything pypto started inside a worker's group
        with pytest.raises(ProcessLookupError):
            os.killpg(g, 0)
