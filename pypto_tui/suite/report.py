"""A run as a page a person would rather read than JSON: HTML (one self-contained file, an SVG
chart, no scripts, nothing fetched) or Markdown, each with the run's facts, the pass rate per
operator family, the time each task took (slowest first, bars coloured by verdict) and the table.

Everything that came from a task file or a compiler message is escaped: a task name is data.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypto_tui.errors import one_line
from pypto_tui.suite.history import RunInfo, TaskRow

COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#6a1b9a", "timeout": "#ef6c00", "unsupported": "#9e9d24"}
BAR_WIDTH = 520
ROW_HEIGHT = 18
TEXT_WIDTH = 330


@dataclass(frozen=True)
class FamilyRate:
    family: str
    passed: int
    total: int

    @property
    def share(self) -> float:
        return self.passed / self.total if self.total else 0.0


def family_rates(rows: Sequence[TaskRow]) -> list[FamilyRate]:
    """Pass rate per operator family (a task the reader could not read is `unknown`), worst first."""
    by: dict[str, list[int]] = {}
    for r in rows:
        cell = by.setdefault(r.family or "unknown", [0, 0])
        cell[0] += r.passed
        cell[1] += 1
    rates = [FamilyRate(f, p, t) for f, (p, t) in by.items()]
    return sorted(rates, key=lambda x: (x.share, x.family))


def facts(run: RunInfo, rows: Sequence[TaskRow]) -> list[tuple[str, str]]:
    passed = sum(r.passed for r in rows)
    total_s = sum(r.wall_s or 0 for r in rows)
    return [
        ("command", f"{run.command} {run.folder}" + (f" {' '.join(run.task_args)}" if run.task_args else "")),
        ("started", f"{run.started_at} ({run.live_status()}"
                    f"{', finished ' + run.finished_at if run.finished_at else ''})"),
        ("result", f"{passed} of {len(rows)} passed (of {run.total} task(s) in the folder)"),
        ("time", f"{run.wall_s or 0:.1f} s wall, {total_s:.1f} s of task time, on {run.scheduler} "
                 f"({run.workers or '?'} worker(s), host {run.host or '?'})"),
        ("pypto-tui", f"{run.tool_version or '?'} (commit {run.tool_commit or '?'})"),
        ("pypto", run.pypto_version or "?"),
        ("pack", f"{run.pack_name or '?'} {run.pack_version or ''}".strip()),
        ("criterion", run.criterion or "-"),
    ]


def _slowest_first(rows: Sequence[TaskRow]) -> list[TaskRow]:
    return sorted(rows, key=lambda r: -(r.wall_s or 0.0))


def time_chart_svg(rows: Sequence[TaskRow]) -> str:
    """Horizontal bars, one per task, slowest first, length = wall seconds, colour = verdict."""
    ordered = _slowest_first(rows)
    top = max((r.wall_s or 0.0 for r in ordered), default=0.0) or 1.0
    height = ROW_HEIGHT * len(ordered) + 24
    width = TEXT_WIDTH + BAR_WIDTH + 90
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="seconds per task">']
    for i, r in enumerate(ordered):
        y = i * ROW_HEIGHT + 4
        w = max(1.0, BAR_WIDTH * (r.wall_s or 0.0) / top)
        name = _html(r.name)
        parts.append(f'<text x="{TEXT_WIDTH - 6}" y="{y + 12}" text-anchor="end" font-size="12">{name}</text>')
        parts.append(f'<rect x="{TEXT_WIDTH}" y="{y}" width="{w:.1f}" height="{ROW_HEIGHT - 4}" '
                     f'fill="{COLOURS.get(r.verdict, "#757575")}"><title>{name}: {_html(r.verdict)}, '
                     f'{r.wall_s or 0:.1f} s</title></rect>')
        parts.append(f'<text x="{TEXT_WIDTH + w + 4:.1f}" y="{y + 12}" font-size="12">{r.wall_s or 0:.1f} s</text>')
    parts.append(f'<text x="{TEXT_WIDTH}" y="{height - 4}" font-size="11" fill="#555">seconds per task '
                 f'(longest {top:.1f} s)</text></svg>')
    return "\n".join(parts)


def to_html(run: RunInfo, rows: Sequence[TaskRow]) -> str:
    e = _html
    head = "\n".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts(run, rows))
    fams = "\n".join(f"<tr><td>{e(f.family)}</td><td>{f.passed} / {f.total}</td><td>{100 * f.share:.0f}%</td></tr>"
                     for f in family_rates(rows))
    table = "\n".join(
        f'<tr><td>{e(r.name)}</td><td>{e(r.family or "-")}</td>'
        f'<td style="color:{COLOURS.get(r.verdict, "#000")}"><b>{e(r.verdict)}</b></td>'
        f'<td>{r.wall_s or 0:.1f}</td><td>{_num(r.peak_rss_mb)}</td><td>{e(_design(r))}</td>'
        f'<td>{e("; ".join(r.errors))}</td></tr>' for r in rows)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>pypto-tui run {run.id}: {e(run.command)} {e(run.folder)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }}
</style></head><body>
<h1>Run {run.id}: {e(run.command)} over {e(run.folder)}</h1>
<table>{head}</table>
<h2>Pass rate per family</h2>
<table><tr><th>family</th><th>passed</th><th>rate</th></tr>
{fams}</table>
<h2>Time per task</h2>
{time_chart_svg(rows)}
<h2>Tasks</h2>
<table><tr><th>task</th><th>family</th><th>verdict</th><th>seconds</th><th>peak MB</th><th>design</th><th>why</th></tr>
{table}</table>
</body></html>
"""


def to_markdown(run: RunInfo, rows: Sequence[TaskRow]) -> str:
    lines = [f"# Run {run.id}: {_md(run.command)} over {_md(run.folder)}", ""]
    lines += [f"- **{k}**: {_md(v)}" for k, v in facts(run, rows)]
    lines += ["", "## Pass rate per family", "", "| family | passed | rate |", "|---|---|---|"]
    lines += [f"| {_md(f.family)} | {f.passed} / {f.total} | {100 * f.share:.0f}% |" for f in family_rates(rows)]
    lines += ["", "## Time per task", "", "```"]
    ordered = _slowest_first(rows)
    top = max((r.wall_s or 0.0 for r in ordered), default=0.0) or 1.0
    names = {id(r): _code(r.name) for r in ordered}
    width = max((len(n) for n in names.values()), default=0)
    for r in ordered:
        bar = "#" * max(1, round(40 * (r.wall_s or 0.0) / top))
        lines.append(f"{names[id(r)]:<{width}} {bar} {r.wall_s or 0:.1f} s "
                     f"{'' if r.passed else _code(r.verdict.upper())}".rstrip())
    lines += ["```", "", "## Tasks", "", "| task | family | verdict | seconds | peak MB | design | why |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {_md(r.name)} | {_md(r.family or '-')} | {_md(r.verdict)} | {r.wall_s or 0:.1f} | "
              f"{_num(r.peak_rss_mb)} | {_md(_design(r))} | {_md('; '.join(r.errors))} |" for r in rows]
    return "\n".join(lines) + "\n"


def _html(text: object) -> str:
    """Text for the page: control characters shown escaped, then HTML-escaped."""
    return html.escape(one_line(str(text)))


def _num(value: float | None) -> str:
    return f"{value:.0f}" if value is not None else "-"


def _design(r: TaskRow) -> str:
    d: dict[str, Any] = r.design
    parts = []
    if d.get("pattern"):
        parts.append(f"pattern {d['pattern']}")
    if d.get("tile"):
        parts.append(f"tile {tuple(d['tile'])}")
    if d.get("loop_count"):
        parts.append(f"loop {d['loop_count']}")
    if d.get("kernel") and d.get("kernel") != "generated":
        parts.append(f"kernel {d['kernel']}")
    return ", ".join(parts)


def _md(text: str) -> str:
    """One table cell: no line breaks, control characters shown escaped, pipes escaped, HTML tags
    neutralised."""
    flat = one_line(" ".join(str(text).split()))
    return flat.replace("|", "\\|").replace("`", "\\`").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """A name inside the report's code block: one line (a line break would let a fence close the
    block and the rest run as Markdown or HTML), control characters shown escaped, and no backtick
    (a run of them is a fence)."""
    return one_line(str(text)).replace("`", "'")
