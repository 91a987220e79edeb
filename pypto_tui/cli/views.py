"""Rich renderings of core results for the human (non --json) output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from pypto_tui.cli.render import LEVEL_STYLE, console, dims, findings_table, kv_table, level_text, narrow
from pypto_tui.findings import worst

if TYPE_CHECKING:  # annotations only: `tile` must not import the loop planner to print its table
    from pypto_tui.loops import LoopPlan
    from pypto_tui.plan import TileEvaluation
    from pypto_tui.tiles import TilePlan


def heading(text: str) -> None:
    """A kernel's title above its tables, when a task is several kernels."""
    console.print(Text(f"\n{text}", style="bold underline"))


def show_tiles(plan: TilePlan | None, evaluation: TileEvaluation | None) -> None:
    src = plan or evaluation
    assert src is not None
    head = f"shape {dims(src.shape)} {src.dtype}" + (
        f", reduce dim {src.reduce_dim}" if src.reduce_dim is not None else "")
    console.print(Text(head, style="bold"))
    if evaluation is not None:
        e = evaluation
        console.print(kv_table([
            ("tile", dims(e.tile)), ("prod", e.prod), ("auto_tiles", e.auto_tiles),
            ("contiguous", f"{e.contiguous_bytes} B"),
            ("reduce segments", e.reduce_segments if e.reduce_segments is not None else "-"),
            ("needs loop", "yes" if e.needs_loop else "no"), ("unified buffer", f"~{e.ub_bytes} B"),
            ("verdict", level_text(worst(e.findings))),
        ]))
        console.print(findings_table(e.findings))
    if plan is None:
        console.print(Text("(candidates: pypto-tui tile ... --candidates)", style="dim"))
        return
    t = Table(title=f"candidates ({plan.qualified_count} qualified of {plan.enumerated} enumerated)",
              title_justify="left")
    for col in ("#", "tile", "prod", "tiles", "contig B", "segs", "qualified", "verdict"):
        t.add_column(col, no_wrap=True, min_width=len(col))
    for c in plan.candidates:
        e = c.evaluation
        mark = "★" if plan.recommended is c else ""
        t.add_row(f"{c.rank + 1}{mark}", dims(e.tile), str(e.prod), str(e.auto_tiles), str(e.contiguous_bytes),
                  "-" if e.reduce_segments is None else str(e.reduce_segments),
                  "yes" if c.qualified else "no",
                  level_text(worst(f for f in e.findings if f.level != "info")))
    console.print(t)
    for n in plan.notes:
        console.print(Text(n, style="dim"))
    if plan.recommended is not None:
        console.print(Text(f"recommended: {dims(plan.recommended.tile)}", style="bold green"))
        for reason in plan.recommended.reasons:
            console.print(Text(f"  - {reason}"))
    show_picks(plan.best_by_rules.tile if plan.best_by_rules else None,
               plan.best_by_estimate.tile if plan.best_by_estimate else None,
               plan.best_by_estimate.estimate_us if plan.best_by_estimate else None, plan.ranking, plan.estimate_note,
               plan.ranking_note, plan.to_dict()["rules_pick_rules"], plan.rules_pick_loss())


def show_picks(rules: object, estimate: object, estimate_us: float | None, ranking: str, note: str,
               ranking_note: str = "", rule_ids: list[str] | None = None, loss: float | None = None) -> None:
    """Both picks side by side, and which one the recommendation follows (SIM.cost-estimate): the
    documents' pick with the rules it rests on and how much slower the estimate expects it."""
    def label(v: object) -> str:
        return dims(v) if isinstance(v, tuple) else f"loop_count {v}"

    line = f"rules' pick: {label(rules)}" if rules is not None else "rules' pick: -"
    if rules is not None and rule_ids:
        line += f" ({', '.join(rule_ids)})"
    if estimate is not None:
        line += f"   estimate's pick: {label(estimate)} (~{estimate_us or 0:.2f} µs)"
    line += f"   (the recommendation follows the {'estimate' if ranking == 'estimate' else 'rules'})"
    console.print(Text(line, style="cyan"))
    if loss is not None and rules != estimate:
        console.print(Text(f"the estimate expects the rules' pick to take {loss:.2f}x its own pick's time",
                           style="cyan"))
    if ranking_note:
        console.print(Text(ranking_note, style="dim"))
    if note:
        console.print(Text(note, style="dim"))


def show_loops(plan: LoopPlan) -> None:
    console.print(Text(f"shape {dims(plan.shape)} {plan.dtype}, tile {dims(plan.tile)}, loop axis {plan.axis} "
                       f"({plan.total}), auto_tiles {plan.auto_tiles}", style="bold"))
    console.print(Text(("loop needed: " if plan.needs_loop else "no loop needed: ") + plan.reason,
                       style="yellow" if plan.needs_loop else "green"))
    compact = narrow()  # a narrow terminal: no vertical rules, the notes below the table
    t = Table(title="loop_count candidates (documents' order)", title_justify="left",
              box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD, pad_edge=not compact)
    cols = ("loop_count", "BASIC_BATCH", "iters", "tail", "view", "tiles/iter", "verdict")
    for col in (*cols, *(() if compact else ("notes",))):
        t.add_column(col, no_wrap=col != "notes", min_width=min(len(col), 10))
    rows = list(plan.candidates) + list(plan.alternatives)
    notes: list[Text] = []
    for c in rows:
        mark = "★ " if plan.recommended is c else ""
        tail = (" +tail" if compact else " (main+tail)") if c.tail_strategy == "main+tail" else ""
        label = f"{mark}{c.loop_count}{tail}"
        lvl = worst(f for f in c.findings if f.level != "info")
        note = Text("; ".join(f.message for f in c.findings if f.level in ("error", "warn")),
                    style=LEVEL_STYLE.get(lvl, ""))
        cells: list[str | Text] = [label, str(c.basic_batch), str(c.num_iters), str(c.tail), dims(c.view_shape),
                 str(c.auto_tiles_per_iter), level_text(lvl)]
        t.add_row(*cells, *(() if compact else (note,)))
        if compact and note.plain:
            notes.append(Text.assemble(f"  {label.strip('★ ')}: ", note))
    console.print(t)
    for n in notes:
        console.print(n)
    if plan.recommended is not None:
        r = plan.recommended
        console.print(Text(f"recommended: loop_count {r.loop_count}, BASIC_BATCH {r.basic_batch}", style="bold green"))
    if plan.best_by_estimate is not None:
        show_picks(plan.best_by_rules.loop_count if plan.best_by_rules else None, plan.best_by_estimate.loop_count,
                   plan.best_by_estimate.estimate_us, plan.ranking, plan.estimate_note, plan.ranking_note,
                   plan.to_dict()["rules_pick_rules"], plan.rules_pick_loss())
    console.print(findings_table(plan.findings))
