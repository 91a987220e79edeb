"""Issue 25, item 6: the smaller holes. `-o ''` and other empty values, non-finite numbers and a zero
memory cap are refused in one line; a UTF-8 byte order mark is accepted; a syntax error never says
`line None`; a NUL byte in a session's task path is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract.reader import _position, read_task
from pypto_tui.design import Design
from pypto_tui.errors import InputError
from pypto_tui.fileio import read_text, require_file

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), env={"NO_COLOR": "1"})


def _one_error(r) -> str:  # type: ignore[no-untyped-def]
    assert r.exit_code == 2, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypto-tui: error: "), r.stderr
    return lines[0]


def test_export_to_an_empty_output_is_refused_and_writes_nothing(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "elu.py").write_text((TASKS / "elu.py").read_text())
    for args in (["-o", ""], ["--output="], ["--output", ""]):
        assert "empty value" in _one_error(_invoke("export", str(tasks), *args))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks"]


def test_an_empty_task_path_is_refused() -> None:
    assert "empty" in _one_error(_invoke("contract", ""))


def test_an_empty_value_gets_a_json_error_with_json() -> None:
    r = _invoke("scaffold", str(TASKS / "elu.py"), "-o", "", "--json")
    assert r.exit_code == 2 and "empty value" in json.loads(r.stdout)["error"]


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "Infinity"])
@pytest.mark.parametrize("command", [["contract", "--run"], ["verify"], ["sim"]])
def test_a_time_limit_must_be_finite(command: list[str], value: str) -> None:
    line = _one_error(_invoke(command[0], str(TASKS / "elu.py"), *command[1:], "--timeout", value))
    assert "--timeout" in line and ("not a finite number" in line or "range" in line)


def test_a_finite_time_limit_still_parses() -> None:
    import typer.main

    contract = typer.main.get_command(app).get_command(None, "contract")  # type: ignore[attr-defined]
    timeout = next(p for p in contract.params if p.name == "timeout")
    assert timeout.type.convert("2.5", timeout, None) == 2.5
    assert "x>=1" in str(timeout.type)  # the range is kept (the help shows it)


def test_a_zero_memory_cap_is_refused() -> None:
    assert "--memory-mb" in _one_error(_invoke("verify", str(TASKS / "elu.py"), "--memory-mb", "0"))


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    task = tmp_path / "bom.py"
    task.write_bytes(b"\xef\xbb\xbf" + (TASKS / "elu.py").read_bytes())
    facts = read_task(read_text(task), str(task))
    assert facts.forward_params == ["x"]
    r = _invoke("contract", str(task), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["op"] == "elu"


def test_a_syntax_error_names_only_the_position_it_knows() -> None:
    assert _position(3, 7) == "line 3, column 7: "
    assert _position(3, None) == "line 3: "
    assert _position(None, None) == ""


def test_a_nul_byte_in_a_path_is_an_input_error() -> None:
    for check in (require_file, read_text):
        with pytest.raises(InputError, match="contains a NUL byte"):
            check("/tmp/a\0b.py", "task file")


def test_a_session_with_a_nul_byte_in_its_task_path_is_one_line(tmp_path: Path) -> None:
    session = tmp_path / "s.json"
    session.write_text(json.dumps({"task": "/tmp/a\0b.py"}))
    with pytest.raises(InputError, match="NUL byte"):
        Design.load(session)
    line = _one_error(_invoke("ui", "--session", str(session)))
    assert "NUL byte" in line and "internal error" not in line
