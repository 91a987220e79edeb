"""What the one-shots say: a chain's verify report names each kernel's tile and loop, a mistyped
command gets a suggestion, `runs diff` alone compares the last two runs (tests/suite), and `export
FOLDER` passes over kernel modules (an earlier export written beside the tasks)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.export import is_kernel_module

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "160"}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BLOCK = FIXTURES / "tasks_chain" / "resnet_basic_block.py"


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


@pytest.mark.parametrize(("typed", "meant"), [("tiel", "tile"), ("veryfy", "verify"), ("exprot", "export")])
def test_a_mistyped_command_gets_a_suggestion(typed: str, meant: str) -> None:
    r = run(typed)
    assert r.exit_code == 2
    assert f"no such command '{typed}'. Did you mean '{meant}'?" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_a_command_nothing_like_any_gets_no_suggestion() -> None:
    r = run("xyzzy")
    assert r.exit_code == 2 and "no such command 'xyzzy'" in r.output and "Did you mean" not in r.output


def test_verify_of_a_chain_shows_each_kernels_tile_and_loop(kb, capsys) -> None:
    """The report's rows, without the compiler: a module has one tile and loop per kernel, and the
    single "tile / loop - / -" row said nothing."""
    from pypto_tui.cli.sim_cmd import _show_verify
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.sim.verification import prepare_verify

    report = prepare_verify(Pipeline(kb, Design(task=str(BLOCK)))).report
    # eval-mode BatchNorm is a per-channel affine, so it fuses with the ReLU and the residual add
    assert [k["ops"] for k in report.kernel_designs] == ["conv", "sub, add, rsqrt, mul, mul, add, relu", "conv",
                                                         "sub, add, rsqrt, mul, mul, add, add, relu"]
    assert all(k["tile"] for k in report.kernel_designs)
    assert json.loads(json.dumps(report.to_dict()))["kernel_designs"][3]["tile"] == [2, 16, 64]
    _show_verify(BLOCK, report)
    out = capsys.readouterr().out
    assert "K0 tile / loop" in out and "(16, 9, 80) / -  (conv)" in out and "K3 tile / loop  (2, 16, 64) / -" in out
    assert "- / -" not in out.replace("/ -  (", "")


def test_export_folder_passes_over_kernel_modules(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(FIXTURES / "tasks" / "softmax_rows.py", tasks)
    first = run("scaffold", str(tasks / "softmax_rows.py"), "-o", str(tasks / "softmax_rows_pypto.py"))
    assert first.exit_code == 0, first.output
    assert is_kernel_module(tasks / "softmax_rows_pypto.py") and not is_kernel_module(tasks / "softmax_rows.py")
    r = run("export", str(tasks), "-o", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output  # the earlier export is no failed task
    assert "1 written, 0 unsupported, 0 failed, 1 skipped (kernel modules" in r.output
    assert not (tmp_path / "out" / "softmax_rows_pypto.py").exists()
    j = run("export", str(tasks), "-o", str(tmp_path / "out2"), "--json")
    d = json.loads(j.stdout)
    assert d["counts"]["ok"] == 1 and [Path(p).name for p in d["skipped"]] == ["softmax_rows_pypto.py"]
    broken = tasks / "broken.py"
    broken.write_text("class ModelNew(:\n")  # not a module we can read: reported as before, not skipped
    assert not is_kernel_module(broken)
