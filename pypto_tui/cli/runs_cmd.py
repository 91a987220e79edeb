"""`runs`, `runs show`, `runs diff`: the suite run history (pypto_tui.suite.history).

A run is named by its number, `last`, or `last-N`; `runs diff` alone compares the last two runs.
`runs diff A B` exits 1 when a task that passed in A does not pass in B, so a script can gate on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pypto_tui.cli.common import Exit, JsonOption, emit_json, handles_input_errors
from pypto_tui.errors import InputError, one_line

runs_app = typer.Typer(help="The history of suite runs (verify DIR, sim DIR): list, show, compare.",
                       invoke_without_command=True)

DbOpt = Annotated[Path | None, typer.Option("--db", help="The run history (default: runs.sqlite in the platform's "
                                            "data folder).", show_default=False)]
RunArg = Annotated[str, typer.Argument(help="A run: its number, `last` or `last-N`.")]


def _open(db: Path | None) -> Any:
    from pypto_tui.suite.history import History, default_db_path

    path = db if db is not None else default_db_path()
    if not path.exists():
        raise InputError(f"{path}: no run history yet; `pypto-tui verify DIR` records one (or give --db FILE)")
    return History.open_read(path)


def _not_the_history(out: Path, option: str, db: Path) -> None:
    """InputError when the report file `out` is the history itself (by name, symlink or hard link):
    --force would replace the database with the report."""
    import contextlib
    import os

    same = os.path.realpath(out) == os.path.realpath(db)
    if not same:
        with contextlib.suppress(OSError, ValueError):
            a, b = os.stat(out), os.stat(db)
            same = (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    if same:
        raise InputError(f"{option} {out} is the run history (--db {db}): a report never replaces it, even with "
                         "--force; pick another file name")


@runs_app.callback()
@handles_input_errors
def list_runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", help="Show this many runs, newest first.", min=1,
                                       max=2**63 - 1)] = 20,
    db: DbOpt = None,
    json_out: JsonOption = False,
) -> None:
    """List the runs, newest first (with a subcommand: show or diff one)."""
    if ctx.invoked_subcommand is not None:
        return
    with _open(db) as h:
        runs = h.runs(limit)
        counts = {r.id: h.counts(r.id) for r in runs}
    if json_out:
        emit_json({"db": str(h.path), "runs": [{**r.to_dict(), "counts": counts[r.id], "live_status": r.live_status()}
                                                      for r in runs]})
        return
    from rich.table import Table

    from pypto_tui.cli.render import console

    t = Table(title=one_line(f"runs in {h.path}"), title_justify="left")
    for col in ("run", "started", "command", "folder", "status", "passed", "recorded", "wall s", "commit"):
        t.add_column(col, no_wrap=col != "folder")
    for r in runs:
        c = counts[r.id]
        t.add_row(str(r.id), one_line(str(r.started_at)), one_line(r.command), one_line(r.folder),
                  one_line(r.live_status()), str(c.get("pass", 0)), f"{sum(c.values())} / {r.total}",
                  f"{r.wall_s:.1f}" if r.wall_s is not None else "-", one_line(r.tool_commit or "-"))
    console.print(t)


@runs_app.command("show")
@handles_input_errors
def show(
    run: RunArg,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the report as one HTML file.",
                                                  show_default=False)] = None,
    md_out: Annotated[Path | None, typer.Option("--markdown", help="Write the report as Markdown.",
                                                show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
    db: DbOpt = None,
    json_out: JsonOption = False,
) -> None:
    """One run: its facts and every task (with --html / --markdown, also a report file)."""
    from pypto_tui.fileio import check_writable, write_atomic
    from pypto_tui.suite import report

    with _open(db) as h:
        for path, option in ((html_out, "--html"), (md_out, "--markdown")):
            if path is not None:
                _not_the_history(path, option, h.path)
        info = h.resolve(run)
        rows = h.tasks(info.id)
    for path in (html_out, md_out):
        if path is not None:
            check_writable(path, force)
    written = []
    if html_out is not None:
        written.append(str(write_atomic(html_out, report.to_html(info, rows), force=force)))
    if md_out is not None:
        written.append(str(write_atomic(md_out, report.to_markdown(info, rows), force=force)))
    if json_out:
        emit_json({"run": info.to_dict(), "tasks": [r.to_dict() for r in rows],
                   "families": [{"family": f.family, "passed": f.passed, "total": f.total}
                                for f in report.family_rates(rows)], "written": written})
        return
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import console, kv_table
    from pypto_tui.cli.suite_view import STYLE

    console.print(kv_table(report.facts(info, rows), title=f"run {info.id}"))
    t = Table(title_justify="left")
    for col in ("task", "family", "verdict", "time s", "peak MB", "why"):
        t.add_column(col, no_wrap=col != "why")
    for r in rows:
        t.add_row(one_line(r.name), one_line(r.family or "-"),
                  Text(one_line(r.verdict), style=STYLE.get(r.verdict, "")),
                  f"{r.wall_s or 0:.1f}", f"{r.peak_rss_mb:.0f}" if r.peak_rss_mb is not None else "-",
                  one_line(str((r.errors or [""])[0]))[:200])
    console.print(t)
    for name in written:
        typer.echo(f"wrote {one_line(name)}", err=True)


@runs_app.command("diff")
@handles_input_errors
def diff(
    a: Annotated[str, typer.Argument(help="The earlier run: its number, `last` or `last-N` (default: last-1).")]
    = "last-1",
    b: Annotated[str, typer.Argument(help="The later run (default: last).")] = "last",
    threshold: Annotated[float, typer.Option("--threshold", help="Slower or faster: by more than this share of "
                                             "A's time (and 2 s).", min=0.0)] = 0.25,
    db: DbOpt = None,
    json_out: JsonOption = False,
) -> None:
    """Compare run A with run B (with no runs named: the last two): newly failing, newly passing, slower,
    faster. Exit 1 if any task newly fails."""
    from pypto_tui.suite.diff import diff_runs

    with _open(db) as h:
        ra, rb = h.resolve(a), h.resolve(b)
        d = diff_runs(ra.id, h.tasks(ra.id), rb.id, h.tasks(rb.id), threshold)
    if json_out:
        emit_json(d.to_dict())
    else:
        _show_diff(d)
    raise typer.Exit(Exit.FINDINGS if d.newly_failing else Exit.OK)


def _show_diff(d: Any) -> None:
    from rich.text import Text

    from pypto_tui.cli.render import console

    console.print(Text(f"run {d.a} -> run {d.b}", style="bold"))
    sections = (("newly failing", d.newly_failing, "bold red"), ("newly passing", d.newly_passing, "green"),
                ("slower", d.slower, "yellow"), ("faster", d.faster, "cyan"))
    for title, changes, style in sections:
        for c in changes:
            times = f"{c.before_s or 0:.1f} s -> {c.after_s or 0:.1f} s"
            console.print(Text(one_line(f"{title}: {c.name} ({c.before} -> {c.after}, {times})"
                                        f"{': ' + str(c.why) if c.why else ''}"), style=style))
    for name in d.only_in_a:
        console.print(Text(f"only in run {d.a}: {one_line(name)}", style="dim"))
    for name in d.only_in_b:
        console.print(Text(f"only in run {d.b}: {one_line(name)}", style="dim"))
    console.print(f"{len(d.newly_failing)} newly failing, {len(d.newly_passing)} newly passing, {len(d.slower)} "
                  f"slower, {len(d.faster)} faster, {d.unchanged} unchanged")
