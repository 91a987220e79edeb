"""Hostile run histories and task names: `runs`, `runs show`, `runs diff` and the suite's own lines
never pass a task's escape codes to the terminal, the Markdown report keeps a task name inside its
code block, and a damaged, foreign, read-only or absurdly addressed history is one line and exit 2."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from suite_helpers import add_run, row
from typer.testing import CliRunner

from pypto_tui.cli import app

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "200"}
ESC_NAME = "esc\x1b]0;PWNED\x07\x1b[2J.py"  # sets the window title, rings the bell, clears the screen
ESC_ERROR = "max abs err \x1b[31m0.5\x1b[0m \x1b]0;PWNED\x07"
CONTROL = [chr(c) for c in range(32) if chr(c) != "\n"] + ["\x7f"]


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


def _clean(text: str) -> bool:
    return not any(c in text for c in CONTROL)


def _one_line_exit_2(r) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pypto-tui: error: "), r.stderr
    return lines[0]


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row(ESC_NAME), row("2_sum.py")], folder="/tasks/\x1b[2J")
    add_run(db, [row(ESC_NAME, "fail", errors=[ESC_ERROR]), row("2_sum.py"), row("new\x1b[1m.py")],
            folder="/tasks/\x1b[2J")
    return db


# ------------------------------------------------------------------------------- escape codes
def test_runs_list_show_and_diff_escape_task_text(hostile_db: Path) -> None:
    for args in (["runs"], ["runs", "show", "last"], ["runs", "diff", "last-1", "last"]):
        r = run(*args, "--db", str(hostile_db))
        assert r.exit_code in (0, 1), r.output
        assert _clean(r.stdout) and _clean(r.stderr), (args, r.stdout)
    shown = run("runs", "show", "last", "--db", str(hostile_db)).stdout
    assert "\\x1b]0;PWNED\\x07" in "".join(shown.split())
    diff = run("runs", "diff", "last-1", "last", "--db", str(hostile_db)).stdout
    assert "newly failing: esc\\x1b]0;PWNED\\x07\\x1b[2J.py" in diff and "\\x1b[31m0.5" in diff


def test_the_reports_carry_no_control_characters(hostile_db: Path, tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    r = run("runs", "show", "last", "--db", str(hostile_db), "--html", str(html), "--markdown", str(md))
    assert r.exit_code == 0, r.output
    assert _clean(html.read_text().replace("\n", "")) and _clean(md.read_text().replace("\n", ""))


def test_the_suite_lines_and_summary_escape_task_text(capsys: pytest.CaptureFixture[str]) -> None:
    from pypto_tui.cli.suite_view import SuiteProgress, show_summary
    from pypto_tui.suite.history import RunInfo

    bad = row(ESC_NAME, "fail", errors=[ESC_ERROR])
    with SuiteProgress("verify /tasks/\x1b[2J") as p:
        p.update(SimpleNamespace(row=None, done=0, total=1, passed=0, failed=0, note="note \x07"))
        p.update(SimpleNamespace(row=bad, done=1, total=1, passed=0, failed=1, note=""))
    info = RunInfo(1, "verify", "/tasks/\x1b[2J", "t", None, "finished", 1, [], "local", 1, None, None, None,
                   None, None, None, None, None, 1.0)
    show_summary(SimpleNamespace(run=info, rows=[bad], totals={"passed": 0, "tasks": 1, "by_verdict": {"fail": 1},
                                                               "resumed": 0},
                                 wall_s=1.0, pool="local", db_path=Path("/x/\x1b[2J.sqlite")))
    out, err = capsys.readouterr()
    assert "FAIL esc\\x1b]0;PWNED\\x07\\x1b[2J.py" in err and "\\x1b[31m0.5" in err
    assert _clean(out.replace("\n", "")) and _clean(err.replace("\n", ""))


def test_a_task_name_cannot_leave_the_markdown_code_block(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    evil = "x.py\n```\n<img src=x onerror=alert(1)>\n```"
    add_run(db, [row(evil, "fail"), row("ok.py")])
    md = tmp_path / "r.md"
    assert run("runs", "show", "last", "--db", str(db), "--markdown", str(md)).exit_code == 0
    text = md.read_text()
    assert text.count("```") == 2  # the block's own fences, nothing else
    before, block, after = text.split("```")
    assert "<img" not in before + after  # as Markdown, the line would have run as HTML
    assert "x.py\\n'''\\n<img" in block  # the name is shown, as data, on one line inside the block


# ------------------------------------------------------------------------------- the history file
def test_the_report_cannot_replace_the_history(tmp_path: Path) -> None:
    db = tmp_path / "H.sqlite"
    add_run(db, [row("a.py")])
    before = db.read_bytes()
    for opt in ("--html", "--markdown"):
        line = _one_line_exit_2(run("runs", "show", "1", "--db", str(db), opt, str(db), "--force"))
        assert "is the run history" in line
    link = tmp_path / "link.html"
    link.symlink_to(db)
    _one_line_exit_2(run("runs", "show", "1", "--db", str(db), "--html", str(link), "--force"))
    assert db.read_bytes() == before and run("runs", "--db", str(db)).exit_code == 0


def _read_only_db(tmp_path: Path) -> Path:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "runs.sqlite"
    add_run(db, [row("a.py")])
    add_run(db, [row("a.py", "fail")])
    os.chmod(db, 0o444)
    os.chmod(folder, 0o555)
    return db


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only modes")
def test_a_read_only_history_can_be_read(tmp_path: Path) -> None:
    db = _read_only_db(tmp_path)
    try:
        for args in (["runs"], ["runs", "show", "last"], ["runs", "diff", "1", "2"]):
            r = run(*args, "--db", str(db), "--json")
            assert r.exit_code in (0, 1), (args, r.output)
            json.loads(r.stdout)
    finally:
        os.chmod(db.parent, 0o755)


def test_an_immutable_history_can_be_read(tmp_path: Path) -> None:
    """`chattr +i`: not even root writes it (History.open wrote the schema first and blamed the file)."""
    import shutil

    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py")])
    add_run(db, [row("a.py", "fail")])
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        for args in (["runs"], ["runs", "show", "last"], ["runs", "diff", "1", "2"]):
            r = run(*args, "--db", str(db), "--json")
            assert r.exit_code in (0, 1), (args, r.output)
            json.loads(r.stdout)
    finally:
        subprocess.run([chattr, "-i", str(db)], check=True)


def test_a_read_only_history_is_opened_read_only(tmp_path: Path) -> None:
    """Runs as root too: reading must not write (the schema, WAL files) into the history's folder."""
    from pypto_tui.suite.history import History

    db = _read_only_db(tmp_path)
    os.chmod(db.parent, 0o755)
    content = db.read_bytes()
    with History.open_read(db) as h:
        assert [r.id for r in h.runs()] == [2, 1]
        with pytest.raises(sqlite3.OperationalError):
            h.conn.execute("CREATE TABLE x (a)")
    assert db.read_bytes() == content
    assert stat.S_IMODE(db.stat().st_mode) == 0o444


@pytest.mark.parametrize("args", [
    ["runs", "show", "99999999999999999999999"],
    ["runs", "show", "9223372036854775808"],
    ["runs", "diff", "1", "99999999999999999999999"],
    ["runs", "show", "last-99999999999999999999999"],
    ["runs", "--limit", "99999999999999999999999"],
    ["runs", "show", "²"],
    ["runs", "show", "١"],
    ["runs", "show", "last-١"],
])
def test_absurd_run_numbers_are_one_line(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py")])
    line = _one_line_exit_2(run(*args, "--db", str(db)))
    assert "run" in line or "--limit" in line


def test_an_arabic_indic_digit_is_not_run_1(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py")])
    line = _one_line_exit_2(run("runs", "show", "١", "--db", str(db), "--json"))
    assert "ASCII digits" in line


def test_verify_workers_beyond_sqlite_is_one_line(tmp_path: Path) -> None:
    folder = Path(__file__).parent / "fixtures" / "suite_small"
    line = _one_line_exit_2(run("verify", str(folder), "--db", str(tmp_path / "r.sqlite"), "--workers",
                                "99999999999999999999999"))
    assert "--workers" in line


def _damage(db: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)


DAMAGES = {
    "errors-not-json": ("UPDATE tasks SET errors = '[not json'",),
    "errors-not-a-list": ("UPDATE tasks SET errors = '{\"a\": 1}'",),
    "design-not-json": ("UPDATE tasks SET design = 'x'",),
    "record-a-list": ("UPDATE tasks SET record = '[1]'",),
    "task-args-not-json": ("UPDATE runs SET task_args = '{'",),
    "wall-text": ("UPDATE tasks SET wall_s = 'slow'",),
    "peak-text": ("UPDATE tasks SET peak_rss_mb = 'lots'",),
    "wall-inf": ("UPDATE tasks SET wall_s = 9e999",),
    "run-wall-inf": ("UPDATE runs SET wall_s = 9e999",),
    "run-wall-nan-text": ("UPDATE runs SET wall_s = 'nan'",),
    "total-text": ("UPDATE runs SET total = 'many'",),
    "workers-text": ("UPDATE runs SET workers = 'two'",),
    "pid-huge": ("UPDATE runs SET pid = 99999999999999",),
    "name-blob": ("UPDATE tasks SET name = X'00ff'",),
    "verdict-number": ("UPDATE tasks SET verdict = 7",),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_row_is_one_line(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py")])
    add_run(db, [row("a.py", "fail")])
    _damage(db, *DAMAGES[damage])
    for args in (["runs", "--json"], ["runs", "show", "last"], ["runs", "show", "1", "--markdown",
                                                                  str(tmp_path / "r.md"), "--force"],
                 ["runs", "diff", "1", "2"]):
        r = run(*args, "--db", str(db))
        assert r.exit_code in (0, 1, 2), (damage, args, r.output, r.exception)
        assert r.exception is None or isinstance(r.exception, SystemExit), (damage, args, repr(r.exception))
        if r.exit_code == 2:
            line = _one_line_exit_2(r)
            assert "damaged" in line or "not a pypto-tui run history" in line, line


def test_a_foreign_runs_table_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (a TEXT)")
        conn.execute("INSERT INTO runs VALUES ('x')")
    for args in (["runs"], ["runs", "show", "1"], ["runs", "show", "last"]):
        line = _one_line_exit_2(run(*args, "--db", str(db)))
        assert "not a pypto-tui run history" in line


def test_a_malformed_page_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    rows = [row(f"t{i}.py", errors=["x" * 500]) for i in range(60)]
    add_run(db, rows)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    for off in range(page * 2, len(data), page):  # every page past the schema: scribbled over
        data[off:off + 64] = b"\xff" * 64
    db.write_bytes(bytes(data))
    for args in (["runs"], ["runs", "show", "1"], ["runs", "diff", "1", "1"]):
        line = _one_line_exit_2(run(*args, "--db", str(db)))
        assert "damaged" in line or "not a pypto-tui run history" in line, line


def test_runs_never_imports_the_heavy_modules_for_a_damaged_history(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    out = subprocess.run([sys.executable, "-m", "pypto_tui", "runs", "--db", str(db)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_verify_dir_lines_escape_a_hostile_task_name(tmp_path: Path) -> None:
    """The real suite: a task file whose name carries escape codes (a syntax error: no compiler needed)."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / ESC_NAME).write_text("def broken(:\n")
    r = run("verify", str(folder), "--db", str(tmp_path / "runs.sqlite"), "--workers", "1")
    assert r.exit_code == 1, r.output
    assert _clean(r.stdout.replace("\n", "")) and _clean(r.stderr.replace("\n", ""))
    assert "esc\\x1b]0;PWNED\\x07" in r.stderr


def test_the_single_task_spinner_shows_the_name_escaped() -> None:
    """`verify TASK` on a terminal: the spinner's line carries the task file's name."""
    import io

    from rich.console import Console

    from pypto_tui.cli import progress

    spinner = progress.StageSpinner(f"verify {ESC_NAME}")
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=200, highlight=False).print(spinner.progress.tasks[0].description)
    shown = buf.getvalue()
    assert "\x07" not in shown and "\x1b]0;" not in shown and "esc\\x1b]0;PWNED\\x07" in shown


def test_a_damaged_history_gives_the_suite_hints_it_can_use_or_one_line(tmp_path: Path) -> None:
    """What `verify DIR` reads before it runs: the last times and peaks (planning hints), an unfinished run."""
    from pypto_tui.errors import InputError
    from pypto_tui.suite.history import History

    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py"), row("b.py")], status="interrupted")
    _damage(db, "UPDATE tasks SET wall_s = 'slow', peak_rss_mb = 9e999 WHERE name = 'a.py'")
    _damage(db, "UPDATE runs SET task_args = '{'")
    with History.open(db) as h:
        assert h.hints("verify", ["a.py", "b.py"]) == {"a.py": (None, None), "b.py": (350.0, 10.0)}
        with pytest.raises(InputError, match="the run history is damaged"):
            h.resumable("verify", "/tasks")
