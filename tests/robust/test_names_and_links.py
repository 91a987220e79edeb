"""Issue 25, items 3 and 4: a name with control characters is shown escaped wherever it is shown or
written; export never writes outside its folder, and replacing a file replaces it (its other hard
links keep the old content)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.errors import InputError
from pypto_tui.fileio import write_atomic

GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "elu.py"
HOSTILE_NAME = "el\x1b[31mu\x07.py"  # ESC [31m recolours a terminal, BEL rings it
CONTROL = [chr(c) for c in range(32) if chr(c) not in "\n"] + ["\x7f"]
runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "250"})


def _no_control(text: str) -> bool:
    return not any(c in text for c in CONTROL)


@pytest.fixture
def hostile_task(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    task = folder / HOSTILE_NAME
    shutil.copy(GOOD, task)
    return task


def test_the_contract_header_escapes_the_name(hostile_task: Path) -> None:
    r = _invoke("contract", str(hostile_task))
    assert r.exit_code == 0, r.output
    assert _no_control(r.stdout) and "el\\x1b[31mu\\x07.py" in "".join(r.stdout.split())


def test_the_export_table_and_the_module_escape_the_name(hostile_task: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = _invoke("export", str(hostile_task.parent), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert _no_control(r.stdout) and "el\\x1b[31mu\\x07.py" in "".join(r.stdout.split())
    module = (out / HOSTILE_NAME).read_text()
    assert _no_control(module.replace("\n", "")) and "el<U+001B>[31mu<U+0007>.py" in module


def test_scaffold_says_where_it_wrote_without_control_characters(hostile_task: Path, tmp_path: Path) -> None:
    r = _invoke("scaffold", str(hostile_task), "-o", str(tmp_path / HOSTILE_NAME))
    assert r.exit_code == 0, r.output
    assert _no_control(r.stderr.replace("\n", "")) and "wrote " in r.stderr


# ------------------------------------------------------------------------------- writes through links
def test_export_refuses_a_symlink_out_of_its_folder(tmp_path: Path) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    tasks.mkdir()
    out.mkdir()
    shutil.copy(GOOD, tasks / "elu.py")
    shutil.copy(GOOD, tasks / "elu_too.py")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / "elu.py").symlink_to(victim)
    r = _invoke("export", str(tasks), "-o", str(out), "--force", "--json")
    rows = {Path(row["task"]).name: row for row in json.loads(r.stdout)["tasks"]}
    assert victim.read_text() == "keep me\n"
    assert rows["elu.py"]["status"] == "error" and "outside the output folder" in rows["elu.py"]["reason"]
    assert rows["elu_too.py"]["status"] == "ok" and (out / "elu_too.py").is_file()
    assert r.exit_code == 1


def test_a_symlink_inside_the_folder_is_written_through(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "real.py").write_text("old\n")
    (out / "link.py").symlink_to("real.py")
    write_atomic(out / "link.py", "new\n", force=True, within=out)
    assert (out / "real.py").read_text() == "new\n" and (out / "link.py").is_symlink()


def test_a_link_out_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "m.py").symlink_to(tmp_path / "elsewhere.py")  # dangling: the write would create it
    with pytest.raises(InputError, match="outside the output folder"):
        write_atomic(out / "m.py", "x\n", force=True, within=out)
    assert not (tmp_path / "elsewhere.py").exists()


def test_scaffold_force_replaces_a_hard_linked_file(tmp_path: Path) -> None:
    """The name written gets a new file; the other name keeps its content (nothing is written
    through a hard link: see test_links_and_full_disk.py for why)."""
    first, second = tmp_path / "kernel.py", tmp_path / "kernel_link.py"
    first.write_text("old\n")
    os.link(first, second)
    r = _invoke("scaffold", str(GOOD), "-o", str(first), "--force")
    assert r.exit_code == 0, r.output
    assert first.stat().st_ino != second.stat().st_ino and second.stat().st_nlink == 1
    assert second.read_text() == "old\n" and "class ModelNew" in first.read_text()
