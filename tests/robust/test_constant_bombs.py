"""Issue 25, item 1: task files whose constants would hang or exhaust memory are refused quickly,
with the file and the line, by every static command (the bombs are the files in `bombs/`)."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract import budget
from pypto_tui.contract.reader import read_task
from pypto_tui.errors import TaskFileError

BOMBS = Path(__file__).resolve().parent / "bombs"
GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "elu.py"
LINE_OF = {  # where each bomb goes off: the refusal must point there
    "pow_builtin": {6}, "imul_chain": {11}, "len_range": {6}, "math_prod": {8}, "round_digits": {6},
    "nested_comprehension": {7}, "doubling_concat": {9}, "loop_nest": {17, 18, 19, 20},
}
runner = CliRunner()


def test_every_bomb_has_its_line() -> None:
    assert {p.stem for p in BOMBS.glob("*.py")} == set(LINE_OF)


@pytest.mark.parametrize("name", sorted(LINE_OF))
def test_a_bomb_is_refused_with_its_file_and_line(name: str) -> None:
    path = BOMBS / f"{name}.py"
    t0 = time.monotonic()
    with pytest.raises(TaskFileError) as info:
        read_task(path.read_text(), str(path))
    took = time.monotonic() - t0
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    line = int(re.search(r", line (\d+):", message).group(1))  # type: ignore[union-attr]
    assert line in LINE_OF[name], message
    assert took < budget.MAX_SECONDS + 10  # the budget's clock, with room for a loaded machine


@pytest.mark.parametrize("command", [["contract"], ["scaffold"], ["tile"], ["loop"], ["verify", "--timeout", "2"],
                                     ["contract", "--run"]])
def test_commands_refuse_a_bomb_with_exit_2(command: list[str]) -> None:
    path = BOMBS / "pow_builtin.py"
    r = runner.invoke(app, [command[0], str(path), *command[1:]], env={"NO_COLOR": "1"})
    assert r.exit_code == 2, r.output
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and f"{path}, line 6:" in errors[0] and "internal error" not in errors[0]


def test_a_folder_export_with_bombs_exports_the_rest(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(BOMBS, tasks)
    shutil.copy(GOOD, tasks / "elu.py")
    r = runner.invoke(app, ["export", str(tasks), "-o", str(tmp_path / "out"), "--json"], env={"NO_COLOR": "1"})
    assert r.exit_code == 1, r.output  # some tasks failed
    rows = {Path(row["task"]).stem: row for row in json.loads(r.stdout)["tasks"]}
    assert rows["elu"]["status"] == "ok" and (tmp_path / "out" / "elu.py").is_file()
    for name in LINE_OF:
        assert rows[name]["status"] == "error" and ", line " in rows[name]["reason"], rows[name]


def test_values_of_a_realistic_size_are_still_computed(tmp_path: Path) -> None:
    task = tmp_path / "sizes.py"
    sizes = ("N = 2**64 // 2**60 + pow(2, 3) + len(range(10)) + math.prod((2, 3)) + round(1234, -2)\n"
             "M = sum(range(100)) + max(range(5))\n\n\ndef get_inputs")
    text = GOOD.read_text().replace("def get_inputs", sizes).replace("import torch\n", "import math\nimport torch\n", 1)
    task.write_text(text)
    facts = read_task(task.read_text(), str(task))
    assert facts.env["N"] == 16 + 8 + 10 + 6 + 1200
    assert facts.env["M"] == 4950 + 4


def test_the_lint_gets_an_unknown_not_a_refusal() -> None:
    """Kernel modules are linted with the same evaluator; a bomb there is a value it cannot know."""
    import libcst as cst

    from pypto_tui.contract.values import Evaluator, Unknown

    module = cst.parse_module("X = pow(10, 10**8)\n")
    ev = Evaluator(module, {}, {})
    value = ev.ev(module.body[0].body[0].value)  # type: ignore[attr-defined]
    assert isinstance(value, Unknown) and "too big" in value.reason
    assert ev.ev(cst.parse_expression("2 ** 10")) == 1024  # a fresh budget for the next expression
