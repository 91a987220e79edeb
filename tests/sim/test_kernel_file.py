"""`verify TASK --kernel FILE` reads the kernel statically first (no pypto): a file that cannot
stand in for the task's Model is refused with one line and exit status 2, before anything runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.errors import InputError
from pypto_tui.sim.availability import check_sim
from pypto_tui.sim.kernel_file import read_kernel_file
from pypto_tui.sim.stages import duration, eta_s

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"

GOOD = """
import torch
TILE_SHAPE = (1, 16384)
LOOP_COUNT = 16
class ModelNew(torch.nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
    def forward(self, x):
        return x
"""


def write(tmp_path: Path, text: str, name: str = "k.py") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_declared_design_is_read_without_running_the_file(tmp_path: Path) -> None:
    k = read_kernel_file(write(tmp_path, GOOD + "\nraise SystemExit('ran')\n"), 2)
    assert k.tile == (1, 16384) and k.loop_count == 16 and "ModelNew" in k.source


@pytest.mark.parametrize(("text", "init_args", "message"), [
    ("x = (", 0, "not valid Python"),
    ("class Model:\n    pass\n", 0, "defines no class ModelNew"),
    (GOOD, 1, "takes 2 argument(s) but the task's Model is built with 1"),
    ("class ModelNew:\n    def __init__(self, *a):\n        pass\n", 7, None),
])
def test_bad_kernel_files_are_input_errors(tmp_path: Path, text: str, init_args: int, message: str | None) -> None:
    path = write(tmp_path, text)
    if message is None:
        assert read_kernel_file(path, init_args).tile is None
        return
    with pytest.raises(InputError, match=re.escape(message)):
        read_kernel_file(path, init_args)


NEEDS_SIM = pytest.mark.skipif(not check_sim().ok, reason=check_sim().message)
"""verify says what to install before it reads the kernel file."""


@pytest.mark.parametrize(("extra", "message"), [
    pytest.param(["--kernel", "missing.py"], "no such kernel file", marks=NEEDS_SIM),
    pytest.param(["--kernel", "{bad}"], "defines no class ModelNew", marks=NEEDS_SIM),
    (["--kernel", "{good}", "--tile", "1,8192"], "the kernel file decides"),
])
def test_cli_refuses_bad_kernels_with_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    good = write(tmp_path, GOOD, "good.py")
    bad = write(tmp_path, "x = 1\n", "bad.py")
    args = [a.format(good=good, bad=bad) for a in extra]
    r = CliRunner().invoke(app, ["verify", str(TASKS / "group_norm.py"), *args])
    assert r.exit_code == 2, r.output
    assert message in r.stderr and "Traceback" not in r.output


def test_eta_and_durations() -> None:
    assert eta_s(2, 8, 10.0) == 30.0
    assert eta_s(0, 8, 10.0) is None and eta_s(8, 8, 10.0) is None
    assert [duration(s) for s in (4.4, 65, 120, 3725)] == ["4 s", "1 min 5 s", "2 min", "1 h 2 min"]
