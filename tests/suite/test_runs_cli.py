"""`runs`, `runs show` (with the HTML and Markdown reports) and `runs diff`, over a history
written through the History API (no compiler needed)."""

from __future__ import annotations

import json
from pathlib import Path

from suite_helpers import add_run, row
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.suite.diff import diff_runs
from pypto_tui.suite.report import family_rates

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "200"}


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


def two_runs(db: Path) -> tuple[int, int]:
    a = add_run(db, [row("1_relu.py", wall_s=10.0), row("2_sum.py", wall_s=10.0, family="reduction"),
                     row("3_mm.py", "fail", wall_s=20.0, family="matmul"), row("4_old.py")])
    b = add_run(db, [row("1_relu.py", "fail", wall_s=11.0, errors=["max abs err 0.5 > atol"]),
                     row("2_sum.py", wall_s=30.0, family="reduction"), row("3_mm.py", wall_s=5.0, family="matmul"),
                     row("5_new.py")])
    return a, b


def test_diff_names_the_newly_failing_task(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    a, b = two_runs(db)
    r = run("runs", "diff", str(a), str(b), "--db", str(db), "--json")
    assert r.exit_code == 1, r.output  # something newly fails: a script can gate on it
    d = json.loads(r.stdout)
    assert [c["name"] for c in d["newly_failing"]] == ["1_relu.py"]
    assert d["newly_failing"][0]["why"] == "max abs err 0.5 > atol"
    assert [c["name"] for c in d["newly_passing"]] == ["3_mm.py"]
    assert [c["name"] for c in d["slower"]] == ["2_sum.py"]
    assert (d["only_in_a"], d["only_in_b"]) == (["4_old.py"], ["5_new.py"])
    text = run("runs", "diff", "last-1", "last", "--db", str(db))
    assert "newly failing: 1_relu.py (pass -> fail" in text.stdout
    bare = run("runs", "diff", "--db", str(db))  # no runs named: the last two
    assert bare.exit_code == 1 and bare.stdout == text.stdout
    assert f"run {a} -> run {b}" in bare.stdout
    back = run("runs", "diff", str(b), str(a), "--db", str(db), "--json")
    assert back.exit_code == 1 and [c["name"] for c in json.loads(back.stdout)["newly_failing"]] == ["3_mm.py"]


def test_same_verdicts_and_times_within_threshold_are_unchanged() -> None:
    a = [row("x.py", wall_s=10.0), row("y.py", wall_s=1.0)]
    b = [row("x.py", wall_s=12.0), row("y.py", wall_s=2.5)]  # +20%; y doubles but by less than 2 s
    d = diff_runs(1, a, 2, b, threshold=0.25)
    assert (d.newly_failing, d.slower, d.faster, d.unchanged) == ([], [], [], 2)
    assert [c.name for c in diff_runs(1, a, 2, b, threshold=0.1).slower] == ["x.py"]


def test_runs_lists_and_shows(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    a, b = two_runs(db)
    listed = run("runs", "--db", str(db), "--json")
    assert listed.exit_code == 0, listed.output
    runs = json.loads(listed.stdout)["runs"]
    assert [r["id"] for r in runs] == [b, a]
    assert runs[0]["counts"] == {"pass": 3, "fail": 1} and runs[0]["criterion"] == "kernelbench"
    shown = run("runs", "show", str(a), "--db", str(db), "--json")
    d = json.loads(shown.stdout)
    assert [t["name"] for t in d["tasks"]] == ["1_relu.py", "2_sum.py", "3_mm.py", "4_old.py"]
    assert {"family": "matmul", "passed": 0, "total": 1} in d["families"]


def test_report_files_have_the_table_family_rates_and_the_time_plot(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("1_relu.py", wall_s=4.0), row("<b>evil</b>.py", "fail", wall_s=8.0, family="matmul"),
                 row("3_mm.py", wall_s=2.0, family="matmul")])
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    r = run("runs", "show", "last", "--db", str(db), "--html", str(html), "--markdown", str(md))
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert page.count("<rect ") == 3 and "<svg" in page  # one bar per task
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;.py" in page  # a task name is data
    assert "<td>matmul</td><td>1 / 2</td><td>50%</td>" in page
    text = md.read_text()
    assert "| matmul | 1 / 2 | 50% |" in text and "| elementwise | 1 / 1 | 100% |" in text
    bars = [ln for ln in text.splitlines() if " s" in ln and "#" in ln]
    assert bars[0].startswith("<b>evil</b>.py") or bars[0].startswith("&lt;b")  # slowest first
    assert bars[0].count("#") == 40 and bars[-1].count("#") == 10
    again = run("runs", "show", "last", "--db", str(db), "--html", str(html))
    assert again.exit_code == 2 and "--force" in again.stderr  # never overwrite without --force
    assert run("runs", "show", "last", "--db", str(db), "--html", str(html), "--force").exit_code == 0


def test_family_rates_put_the_worst_first() -> None:
    rates = family_rates([row("a.py"), row("b.py", "fail", family="matmul"), row("c.py", family=None)])
    assert [(f.family, f.passed, f.total) for f in rates] == [("matmul", 0, 1), ("elementwise", 1, 1),
                                                              ("unknown", 1, 1)]


def test_runs_without_a_history_or_with_a_bad_run_is_bad_input(tmp_path: Path) -> None:
    r = run("runs", "--db", str(tmp_path / "none.sqlite"))
    assert r.exit_code == 2 and "no run history yet" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    db = tmp_path / "runs.sqlite"
    two_runs(db)
    r = run("runs", "show", "7", "--db", str(db))
    assert r.exit_code == 2 and "run 7 is not in" in r.stderr


def test_runs_json_stays_light(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "runs.sqlite"
    two_runs(db)
    probe = ("import sys, io, contextlib\nfrom pypto_tui.cli import app\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    try:\n        app(['runs', 'diff', 'last-1', 'last', '--db', {str(db)!r}, '--json'])\n"
             "    except SystemExit:\n        pass\n"
             "print(sorted(m for m in ('textual', 'libcst', 'torch', 'pypto', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_default_history_is_in_the_data_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_TUI_DATA_DIR", str(tmp_path / "data"))
    run_id = add_run(tmp_path / "data" / "runs.sqlite", [row("a.py")])
    r = run("runs", "--json")
    assert r.exit_code == 0 and [x["id"] for x in json.loads(r.stdout)["runs"]] == [run_id]
