"""`pypto-tui scaffold` and `pypto-tui export`: atomic writes, no silent overwrite, a report per task."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pypto_tui.cli import app

FIX = Path(__file__).resolve().parents[1] / "fixtures"
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], env={"NO_COLOR": "1", "TERMINAL_WIDTH": "120"})


def test_scaffold_prints_writes_and_refuses_to_overwrite(tmp_path):
    r = invoke("scaffold", FIX / "tasks" / "softmax_rows.py")
    assert r.exit_code == 0 and "class ModelNew" in r.stdout
    compile(r.stdout, "softmax.py", "exec")
    out = tmp_path / "softmax_pypto.py"
    assert invoke("scaffold", FIX / "tasks" / "softmax_rows.py", "-o", out).exit_code == 0
    first = out.read_text()
    out.write_text("# my edits\n")
    r = invoke("scaffold", FIX / "tasks" / "softmax_rows.py", "-o", out)
    assert r.exit_code == 2 and "--force" in r.stderr
    assert out.read_text() == "# my edits\n"  # nothing the user saved is lost
    assert invoke("scaffold", FIX / "tasks" / "softmax_rows.py", "-o", out, "--force").exit_code == 0
    assert out.read_text() == first  # the same design gives the same bytes
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left behind


def test_scaffold_to_dash_prints_and_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("scaffold", FIX / "tasks" / "softmax_rows.py", "-o", "-")
    assert r.exit_code == 0 and "class ModelNew" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_scaffold_json_and_flavours():
    r = invoke("scaffold", FIX / "tasks" / "elu.py", "--json")
    d = json.loads(r.stdout)
    assert d["status"] == "ok" and d["pattern"] == "A" and "source" in d
    r = invoke("scaffold", FIX / "tasks" / "elu.py", "--flavour", "docs", "--json")
    assert json.loads(r.stdout)["flavour"] == "docs"
    r = invoke("scaffold", FIX / "tasks" / "elu.py", "--flavour", "nope")
    assert r.exit_code == 2 and "unknown flavour" in r.stderr


def test_scaffold_unsupported_exits_1_with_reason():
    r = invoke("scaffold", FIX / "tasks_extra" / "unrecognised_op.py", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and d["status"] == "unsupported" and d["reason"]


def test_export_reports_every_task_and_keeps_going(tmp_path):
    r = invoke("export", FIX / "tasks", "-o", tmp_path / "ok", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["counts"] == {"ok": 16, "unsupported": 0, "error": 0}
    assert len(list((tmp_path / "ok").glob("*.py"))) == 16
    assert all({"task", "family", "status", "reason"} <= set(t) for t in d["tasks"])
    again = invoke("export", FIX / "tasks", "-o", tmp_path / "ok", "--json")
    assert again.exit_code == 1 and json.loads(again.stdout)["counts"]["error"] == 16
    mixed = invoke("export", FIX / "tasks_extra", "-o", tmp_path / "mixed", "--json")
    m = json.loads(mixed.stdout)
    assert mixed.exit_code == 1 and m["counts"]["ok"] > 0 and m["counts"]["unsupported"] > 0
    assert invoke("export", FIX / "tasks" / "elu.py", "-o", tmp_path / "x").exit_code == 2


def test_exported_modules_lint_clean(tmp_path):
    assert invoke("export", FIX / "tasks", "-o", tmp_path).exit_code == 0
    r = invoke("lint", tmp_path, "--json")
    assert r.exit_code == 0, r.stdout
    assert json.loads(r.stdout)["count"] == 0


def test_written_files_get_ordinary_permissions(tmp_path):
    import os

    out = tmp_path / "elu_pypto.py"
    assert invoke("scaffold", FIX / "tasks" / "elu.py", "-o", out).exit_code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
