"""How far is each generated kernel from the chip's limit? (issue 22): the level-1 roofline table.

    python benchmarks/bench_roofline.py PATH/TO/KernelBench/level1 [--elements N] [--jobs 2] [--json FILE]

Needs the [sim] extra and CPU torch. For every task file in the folder it builds pypto-tui's
design, compiles the generated kernel in SIM mode (`pypto-tui sim`'s cost job) and divides the
cost model's time by the task's roofline (pypto_tui.roofline: bytes through HBM, vector ops and
cube MACs against the pack's chip profile), then prints, per family, the geometric mean and the
worst of simulated / roofline.

KernelBench's own shapes reach gigabytes, which the CPU simulator cannot price in reasonable time;
so each task runs at a reduced shape: its inputs shrunk (the same rank, the verification's shape
reduction) until the largest holds at most --elements elements (default 2^20), and the design
re-planned for that shape. The shape used is printed beside each task, and the roofline is the
one of that shape. `--elements 0` keeps the task's own shapes. Runs go through the result cache.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def task_key(path: Path) -> tuple[int, str]:
    m = re.match(r"(\d+)_", path.name)
    return (int(m.group(1)) if m else 10**6, path.name)


def at_bench_shape(p: Any, elements: int) -> tuple[Any, dict[str, list[int]]]:
    """The task's design at a reduced shape (re-planned there), and the shapes used."""
    from pypto_tui.design import Pipeline
    from pypto_tui.sim.verify_shapes import reduced_shapes

    full = {i.name: list(i.shape) for i in p.contract().tensor_inputs if i.shape is not None}
    if not elements or max((math.prod(s) for s in full.values()), default=0) <= elements:
        return p, full
    shapes = reduced_shapes(p, budget=elements)
    edits = dict(p.design.contract_edits)
    for name, s in shapes.items():
        edits[f"inputs.{name}.shape"] = list(s)
    return Pipeline(p.kb, replace(p.design, contract_edits=edits)), {k: list(v) for k, v in shapes.items()}


def rules_tile(p: Any) -> tuple[int, ...] | None:
    """The documents' pick for the main tile when the estimate chose another (else None)."""
    from pypto_tui.errors import InputError

    try:
        plan = p.tile_plan()
    except (InputError, ValueError):  # a design that cannot plan has nothing to fall back to
        return None
    rules, chosen = plan.best_by_rules, plan.recommended
    if rules is None or chosen is None or tuple(rules.tile) == tuple(chosen.tile):
        return None
    return tuple(rules.tile)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("level1", type=Path, help="a folder of KernelBench task files (level 1)")
    ap.add_argument("--elements", type=int, default=1 << 20, help="largest input at most this many elements "
                    "(0: the tasks' own shapes)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--only", default="", help="a regular expression the task file name must match")
    ap.add_argument("--json", type=Path, default=None, help="write every row here")
    a = ap.parse_args()
    if not a.level1.is_dir():
        sys.exit(f"{a.level1} is not a folder: give KernelBench's level1 folder")

    from pypto_tui.design import Design, Pipeline
    from pypto_tui.errors import InputError
    from pypto_tui.kb import get_kb
    from pypto_tui.roofline import roofline
    from pypto_tui.sim.availability import check_sim
    from pypto_tui.sim.design_runs import cost_job
    from pypto_tui.sim.runner import run_many

    avail = check_sim()
    if not avail.ok:
        sys.exit(avail.message)
    kb = get_kb()
    rows: list[dict[str, Any]] = []
    jobs, owners, tests = [], [], []
    for path in sorted(a.level1.glob("*.py"), key=task_key):
        if a.only and not re.search(a.only, path.name):
            continue
        row: dict[str, Any] = {"task": path.name}
        rows.append(row)
        try:
            p = Pipeline(kb, Design(task=str(path)))
            c = p.contract()
            row["family"] = c.family
            if not c.supported:
                row["status"] = f"unsupported: {c.reason}"
                continue
            test, shapes = at_bench_shape(p, a.elements)
            row["shapes"] = shapes
            r = roofline(test.contract(), kb)
            row.update(roofline_us=r.roofline_us, bound=r.bound, bytes=r.work.bytes)
            jobs.append(cost_job(test, path.name))
            owners.append(row)
            tests.append(test)
        except (InputError, ValueError) as exc:
            row["status"] = f"no design: {exc}"
    t0 = time.perf_counter()

    def progress(done: int, total: int, res: Any) -> None:
        print(f"  [{done}/{total}] {res.label}: {res.status} {res.e2e_us or ''} ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr, flush=True)

    results = run_many(jobs, jobs=a.jobs, timeout_s=a.timeout, progress=progress)
    retry, retry_rows = [], []
    for row, res, test in zip(owners, results, tests, strict=True):
        row["status"] = res.status
        if res.ok and res.e2e_us:
            row["simulated_us"] = res.e2e_us
            row["ratio"] = res.e2e_us / row["roofline_us"]
            continue
        row["reason"] = res.reason or res.error
        rules_pick = rules_tile(test)
        if res.status == "compile_error" and rules_pick is not None:
            # the estimate's pick did not compile here: price the documents' pick and say so
            retry.append(cost_job(Pipeline(kb, replace(test.design, tile=list(rules_pick))), row["task"]))
            retry_rows.append((row, rules_pick))
    for (row, pick), res in zip(retry_rows, run_many(retry, jobs=a.jobs, timeout_s=a.timeout, progress=progress),
                                strict=True):
        if res.ok and res.e2e_us:
            row.update(status="ok", simulated_us=res.e2e_us, ratio=res.e2e_us / row["roofline_us"],
                       note=f"the chosen tile did not compile ({str(row['reason'])[:60]}); the documents' pick "
                            f"{tuple(pick)} priced")
    report(rows, a.elements)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


def report(rows: list[dict[str, Any]], elements: int) -> None:
    where = f"largest input <= {elements} elements" if elements else "the tasks' own shapes"
    print(f"| task | family | shape used ({where}) | roofline µs | binds | simulated µs | sim / roofline |")
    print("|---|---|---|--:|---|--:|--:|")
    for r in rows:
        shapes = ", ".join(f"{k}={tuple(v)}" for k, v in (r.get("shapes") or {}).items())
        if "ratio" in r:
            note = f" ({r['note']})" if r.get("note") else ""
            print(f"| {r['task']} | {r.get('family')} | {shapes} | {r['roofline_us']:.3g} | {r['bound']} | "
                  f"{r['simulated_us']:.3g}{note} | {r['ratio']:.1f} |")
        else:
            print(f"| {r['task']} | {r.get('family', '-')} | {shapes} | - | - | {r.get('status')} | - |")
    print()
    print("| family | tasks simulated | geomean sim / roofline | worst | worst task |")
    print("|---|--:|--:|--:|---|")
    fams: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if "ratio" in r:
            fams.setdefault(r["family"], []).append(r)
    everything = []
    for fam in sorted(fams):
        rs = fams[fam]
        worst = max(rs, key=lambda r: r["ratio"])
        everything += [r["ratio"] for r in rs]
        mean = geomean([r["ratio"] for r in rs])
        print(f"| {fam} | {len(rs)} | {mean:.1f} | {worst['ratio']:.1f} | {worst['task']} |")
    if everything:
        print(f"| all | {len(everything)} | {geomean(everything):.1f} | {max(everything):.1f} | |")
    missing = [r["task"] for r in rows if "ratio" not in r]
    if missing:
        print(f"\nnot simulated ({len(missing)}): " + ", ".join(missing))


if __name__ == "__main__":
    main()
