"""Bounds on what a user may ask for: every value past them is one line, exit 2, at once.

`verify --trials 10000` was accepted; `tile --shape 16,,256` quietly became (16, 256); a loop count of
10**20 was accepted; `contract` called a 10**300-row input supported while `tile` refused it;
`verify --kernel /dev/zero` said "no such kernel file"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile import TASKS, one_error_line, task_with_inputs

from pypto_tui.errors import InputError
from pypto_tui.kb import MAX_TRIALS
from pypto_tui.shapes import MAX_DIM, parse_dims

TASK = str(TASKS / "softmax_rows.py")


@pytest.mark.parametrize(("text", "item"), [("16,,256", 2), (",16", 1), ("1,2,,", 3), ("16, ,256", 2)])
def test_an_empty_item_in_a_shape_is_named(text: str, item: int) -> None:
    with pytest.raises(InputError, match=rf"has an empty item \(item {item}\)"):
        parse_dims(text)


@pytest.mark.parametrize(("text", "dims"), [("16, 256", (16, 256)), ("(16,)", (16,)), ("16x256", (16, 256)),
                                           ("16 256", (16, 256)), ("[16, 256, 4]", (16, 256, 4))])
def test_the_usual_ways_of_writing_a_shape_still_parse(text: str, dims: tuple[int, ...]) -> None:
    assert parse_dims(text) == dims


def test_tile_with_an_empty_shape_item_is_one_line(run_cli) -> None:
    rc, out, err = run_cli("tile", "--shape", "16,,256", "--json")
    assert rc == 2 and "empty item" in json.loads(out)["error"]
    assert "item 2" in one_error_line(err)


@pytest.mark.parametrize("args", [
    ["loop", "--shape", "16384,1024", "--tile", "128,128", "--loop-count", "99999999999999999999"],
    ["loop", "--shape", "16384,1024", "--tile", "128,128", "--loop-count", str(MAX_DIM + 1)],
    ["verify", TASK, "--loop-count", "99999999999999999999"],
    ["sim", TASK, "--loop-count", "99999999999999999999"],
])
def test_a_loop_count_past_any_axis_is_refused(run_cli, args: list[str]) -> None:
    rc, _, err = run_cli(*args)
    assert rc == 2 and "--loop-count" in one_error_line(err) and str(MAX_DIM) in err


def test_loop_count_at_the_bound_is_still_taken(run_cli) -> None:
    rc, out, _ = run_cli("loop", "--shape", "1000003,4096", "--tile", "1,4096", "--loop-count", str(MAX_DIM),
                         "--json")
    assert rc in (0, 1) and json.loads(out)["candidates"][0]["loop_count"] == MAX_DIM


@pytest.mark.parametrize("trials", ["10000", str(MAX_TRIALS + 1), "0"])
@pytest.mark.parametrize("target", [TASK, str(TASKS)])
def test_verify_trials_are_bounded(run_cli, trials: str, target: str) -> None:
    """A folder too: refused before any task runs, not once per task."""
    rc, _, err = run_cli("verify", target, "--trials", trials)
    line = one_error_line(err)
    assert rc == 2 and "--trials" in line and f"1<=x<={MAX_TRIALS}" in line


def test_contract_refuses_what_tile_refuses(tmp_path: Path, run_cli) -> None:
    task = tmp_path / "huge.py"
    task.write_text(task_with_inputs("torch.randn(10**300, 16)"))
    for command in ("contract", "tile"):
        rc, out, err = run_cli(command, str(task), "--json")
        assert rc == 2 and "sizes above 2**40" in json.loads(out)["error"], (command, err)
        one_error_line(err)
    rc, _, _ = run_cli("contract", TASK)
    assert rc == 0


def test_a_kernel_that_is_a_device_is_named_as_such(run_cli) -> None:
    rc, _, err = run_cli("verify", TASK, "--kernel", "/dev/zero")
    line = one_error_line(err)
    assert rc == 2 and "character device, not a regular file" in line and "no such" not in line


def _many_inputs(n: int, named: bool) -> str:
    params = ", ".join(f"x{i}" for i in range(n)) if named else "x"
    return ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n\n"
            f"    def forward(self, {params}):\n        return torch.relu(x0 if {named} else x)\n\n\n"
            "def get_inputs():\n    return [" + ", ".join("torch.randn(16, 256)" for _ in range(n)) + "]\n\n\n"
            "def get_init_inputs():\n    return []\n")


@pytest.mark.parametrize(("named", "needle"), [(True, "Model.forward takes 5000 inputs"),
                                               (False, "get_inputs() returns 5000 inputs")])
@pytest.mark.parametrize("command", ["tile", "contract", "scaffold"])
def test_a_task_with_thousands_of_inputs_is_refused_at_once(tmp_path: Path, run_cli, named: bool, needle: str,
                                                            command: str) -> None:
    import time

    task = tmp_path / "many.py"
    task.write_text(_many_inputs(5000, named))
    assert 90_000 < task.stat().st_size < 200_000
    t0 = time.monotonic()
    rc, _, err = run_cli(command, str(task))
    assert rc == 2 and needle in one_error_line(err)
    assert time.monotonic() - t0 < 15  # the reader stops before libcst: startup is most of it


def test_a_task_at_the_input_bound_is_still_read() -> None:
    from pypto_tui.contract.reader import MAX_INPUTS, check_input_count

    check_input_count(_many_inputs(MAX_INPUTS, True), "t.py")
    with pytest.raises(InputError, match=f"at most {MAX_INPUTS}"):
        check_input_count(_many_inputs(MAX_INPUTS + 1, True), "t.py")
