"""Issue 15, item 4: running task code says so first, and nothing it starts outlives the run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import MODEL_HEAD, MODEL_TAIL

from pypto_tui.procgroup import run_in_group

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _alive(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _spawning_task(tmp_path: Path, marker: str, forward_sleep: float = 0) -> Path:
    """A task whose import starts a long `sleep` (it inherits stdout) and whose forward may stall."""
    body = (MODEL_HEAD + "import subprocess, time\n"
            f"subprocess.Popen(['sleep', '{marker}'])\n\n"
            "def get_inputs():\n    return [torch.randn(16, 256)]\n" + MODEL_TAIL)
    if forward_sleep:
        body = body.replace("return torch.relu(x)", f"time.sleep({forward_sleep})\n        return torch.relu(x)")
    task = tmp_path / "spawner.py"
    task.write_text(body)
    return task


def test_group_is_killed_when_the_child_finishes(tmp_path: Path) -> None:
    marker = "317.25"
    script = f"import subprocess; subprocess.Popen(['sleep', '{marker}']); print('done', flush=True)"
    t0 = time.monotonic()
    res = run_in_group([sys.executable, "-c", script], timeout=30, cwd=tmp_path)
    assert res.returncode == 0 and "done" in res.output
    assert time.monotonic() - t0 < 20  # not a false timeout: the sleep held our output open
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


def test_group_is_killed_at_the_timeout(tmp_path: Path) -> None:
    marker = "318.25"
    script = f"import subprocess, time; subprocess.Popen(['sleep', '{marker}']); time.sleep(60)"
    res = run_in_group([sys.executable, "-c", script], timeout=2, cwd=tmp_path)
    assert res.timed_out
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_contract_run_notes_it_runs_code_and_leaves_nothing(tmp_path: Path, run_cli) -> None:
    marker = "319.25"
    task = _spawning_task(tmp_path, marker)
    rc, out, err = run_cli("contract", str(task), "--run", "--timeout", "60", "--json", timeout=120)
    assert rc == 0, err
    import json

    assert json.loads(out)["selfcheck"]["status"] == "agree"  # finished, not a false "timeout"
    notes = [ln for ln in err.splitlines() if ln.startswith("pypto-tui: note:")]
    assert len(notes) == 1 and "executes the code in" in notes[0] and "a task file is code" in notes[0]
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_contract_run_timeout_kills_what_the_task_started(tmp_path: Path, run_cli) -> None:
    marker = "320.25"
    task = _spawning_task(tmp_path, marker, forward_sleep=120)
    _, out, _ = run_cli("contract", str(task), "--run", "--timeout", "8", "--json", timeout=120)
    import json

    check = json.loads(out)["selfcheck"]
    assert check["status"] == "timeout" and "every process it started" in check["message"]
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


def test_help_says_task_code_runs(run_cli) -> None:
    for cmd, needle in (("contract", "EXECUTES the task file"), ("verify", "EXECUTES the task file"),
                        ("sim", "the task file itself is not executed")):
        rc, out, _ = run_cli(cmd, "-h", env={"COLUMNS": "200"})
        assert rc == 0 and needle in " ".join(out.split()), cmd


def test_static_commands_never_run_the_task(tmp_path: Path, run_cli) -> None:
    flag = tmp_path / "ran"
    task = tmp_path / "t.py"
    task.write_text(MODEL_HEAD + f"open({str(flag)!r}, 'w').write('x')\n\n"
                    "def get_inputs():\n    return [torch.randn(16, 256)]\n" + MODEL_TAIL)
    for args in (("contract", str(task)), ("tile", str(task)), ("scaffold", str(task)), ("lint", str(task))):
        rc, _, err = run_cli(*args)
        assert rc in (0, 1), err
        assert "pypto-tui: note:" not in err
    assert not flag.exists()
    assert os.environ.get("PYPTO_TUI_DEBUG") is None


def test_verify_says_once_that_it_runs_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify executes the task file (its Model is the baseline): it says so, once, on stderr."""
    import json

    from typer.testing import CliRunner

    import pypto_tui.cli.sim_cmd as sim_cmd
    import pypto_tui.sim.verification as verification
    from pypto_tui.cli import app

    order: list[str] = []

    class Report:
        passed = True

        def to_dict(self) -> dict[str, object]:
            return {"passed": True}

    def fake_verify(pipeline: object, **kw: object) -> Report:
        order.append("run")
        return Report()

    monkeypatch.setattr(sim_cmd, "_require_sim", lambda: order.append("checked"))
    monkeypatch.setattr(verification, "verify", fake_verify)
    task = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "softmax_rows.py"
    result = CliRunner().invoke(app, ["verify", str(task), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["passed"] is True and order == ["checked", "run"]
    notes = [ln for ln in result.stderr.splitlines() if ln.startswith("pypto-tui: note:")]
    assert len(notes) == 1 and f"verify executes the code in {task}" in notes[0] and "a task file is code" in notes[0]
