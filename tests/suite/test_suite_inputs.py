"""`verify DIR` / `sim DIR` refuse bad input with one line and exit 2, before any task runs; a
folder of tasks the tool cannot write a kernel for runs through the real `verify` (no compiler
is needed to say "unsupported") and fails the suite with exit 1, one record per task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from suite_helpers import add_run, row
from typer.testing import CliRunner

from pypto_tui.cli import app

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "200"}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMALL = Path(__file__).parent / "fixtures" / "suite_small"


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


@pytest.mark.parametrize(("extra", "message"), [
    (["--tile", "8,64"], "--tile chooses one task's design"),
    (["--loop-count", "2"], "--loop-count chooses one task's design"),
    (["--kernel", str(SMALL / "relu_tiny.py")], "give a folder of kernel modules"),
    (["--resume"], "holds no unfinished `verify` run"),
    (["--scheduler", "tcp://127.0.0.1:9", "--workers", "2"], "--workers sizes the local pool"),
])
def test_folder_options_that_cannot_apply_are_bad_input(tmp_path: Path, extra: list[str], message: str) -> None:
    r = run("verify", str(SMALL), "--db", str(tmp_path / "runs.sqlite"), *extra)
    assert r.exit_code == 2, r.output
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_suite_options_with_one_task_file_are_bad_input(tmp_path: Path) -> None:
    r = run("verify", str(SMALL / "relu_tiny.py"), "--resume", "--workers", "2")
    assert r.exit_code == 2 and "--workers, --resume: suite options" in r.stderr


def test_an_empty_folder_is_bad_input(tmp_path: Path) -> None:
    r = run("sim", str(tmp_path), "--db", str(tmp_path / "runs.sqlite"), "--json")
    assert r.exit_code == 2 and "holds no task files" in r.stderr
    assert "holds no task files" in json.loads(r.stdout)["error"]


def test_resume_refuses_other_task_options(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("relu_tiny.py")], folder=str(SMALL.resolve()), status="interrupted")
    r = run("verify", str(SMALL), "--db", str(db), "--resume", "--no-cache")
    assert r.exit_code == 2 and "give the same ones" in r.stderr


def test_resume_refuses_another_kernel_folder(tmp_path: Path) -> None:
    """Issue 23: a run over the kernels in one folder, resumed with another folder, would have mixed
    two sets of kernels in one run's verdicts."""
    db = tmp_path / "runs.sqlite"
    first, second = tmp_path / "kernels_a", tmp_path / "kernels_b"
    first.mkdir()
    second.mkdir()
    add_run(db, [row("relu_tiny.py")], folder=str(SMALL.resolve()), status="interrupted",
            task_args=["--kernel", str(first.resolve())])
    r = run("verify", str(SMALL), "--db", str(db), "--resume", "--kernel", str(second))
    assert r.exit_code == 2 and "give the same ones" in r.stderr and str(second.resolve()) in r.stderr
    r = run("verify", str(SMALL), "--db", str(db), "--resume")
    assert r.exit_code == 2 and "give the same ones" in r.stderr


def test_the_kernel_folder_is_not_passed_to_a_task_but_its_own_file(tmp_path: Path) -> None:
    from pypto_tui.suite.suite_run import SuiteOptions, _spec

    kernels = tmp_path / "k"
    kernels.mkdir()
    opts = SuiteOptions(command="verify", folder=SMALL, task_args=["--no-cache", "--kernel", str(kernels)],
                        kernels=kernels)
    spec = _spec(opts, SMALL / "relu_tiny.py", list(opts.task_args))
    assert spec.args[0] == "--no-cache" and spec.args.count("--kernel") == 1
    assert Path(spec.args[spec.args.index("--kernel") + 1]).parent == kernels


@pytest.mark.slow
def test_unsupported_tasks_run_through_verify_and_fail_the_suite(tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    shutil.copy(SMALL / "sort_fails.py", folder / "sort_fails.py")
    shutil.copy(FIXTURES / "tasks_extra" / "syntax_error.py", folder / "syntax_error.py")
    db = tmp_path / "runs.sqlite"
    r = run("verify", str(folder), "--db", str(db), "--json", "--workers", "2")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    by = {t["name"]: t for t in d["tasks"]}
    assert by["sort_fails.py"]["verdict"] == "unsupported"
    assert by["sort_fails.py"]["record"]["supported"] is False  # the verify command's own JSON document
    assert by["syntax_error.py"]["verdict"] == "error" and by["syntax_error.py"]["exit_code"] == 2
    assert d["totals"]["tasks"] == 2 and d["totals"]["passed"] == 0 and d["run"]["status"] == "finished"
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("pypto-tui: [")]  # progress in a log
    assert len(lines) == 2 and " left] " in lines[0] and lines[1].startswith("pypto-tui: [2/2] ")
    assert "verify executes the code in every task file" in r.stderr
    single = run("verify", str(folder / "sort_fails.py"), "--json")
    assert json.loads(single.stdout) == {**by["sort_fails.py"]["record"]}  # the same record as alone


def test_each_task_gets_the_options_given_and_a_sim_suite_one_compile_per_task(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("relu_tiny.py")], folder=str(SMALL.resolve()), status="interrupted")
    r = run("verify", str(SMALL), "--db", str(db), "--resume", "--scale", "full", "--timeout", "30", "--no-cache")
    assert r.exit_code == 2
    assert "(now ['--scale', 'full', '--timeout', '30.0', '--no-cache'])" in r.stderr  # defaults left out
    add_run(db, [row("relu_tiny.py")], command="sim", folder=str(SMALL.resolve()), status="interrupted")
    r = run("sim", str(SMALL), "--db", str(db), "--resume")
    assert "(now ['--jobs', '1'])" in r.stderr
    r = run("sim", str(SMALL), "--db", str(db), "--resume", "--jobs", "3")
    assert "(now ['--jobs', '3'])" in r.stderr
