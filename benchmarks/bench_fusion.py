"""Does fusion pay? (issue 22 item 4): each chain's chosen plan against its unfused plan.

    python benchmarks/bench_fusion.py PATH/TO/KernelBench/level2 [--db RUNS.sqlite] [--tasks 1,12,...]
        [--jobs 2] [--timeout 600] [--json FILE]

Needs the [sim] extra and CPU torch. For every task whose graph the planner splits into kernels, it
prices two modules on the same simulator (the cost job `pypto-tui sim` runs): the chosen plan (the
pack's fusion rules) and the unfused plan (`Pipeline.unfused()`: every operator a kernel of its own,
each intermediate written to global memory and read back, which each kernel's simulated time
includes). Both run at the sizes `verify` tests the chain at (sim/module_test.py: the task's size
constants shrunk as far as every kernel's design of the chosen plan allows), printed beside each
task; full KernelBench shapes take the CPU simulator minutes to hours per task.

`--db` takes a run history (`verify DIR --db`) and keeps the tasks whose latest verdict is pass: the
figure the issue asks for is over the tasks that verify. Prints chosen / unfused per task, the
geometric mean, and every task where the chosen plan is the slower.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sqlite3
import time
from pathlib import Path
from typing import Any


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def task_number(path: Path) -> int:
    m = re.match(r"(\d+)_", path.name)
    return int(m.group(1)) if m else 10**6


def passing(db: Path) -> set[str]:
    """Task names whose latest recorded verdict in the run history is pass."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT name, verdict FROM tasks ORDER BY run_id").fetchall()
    latest = dict(rows)
    return {n for n, v in latest.items() if v == "pass"}


def measure(path: Path, kb: Any, jobs: int, timeout: float) -> dict[str, Any]:
    from pypto_tui.design import Design, Pipeline, module_stages
    from pypto_tui.sim.design_runs import price_fusion
    from pypto_tui.sim.module_test import module_test

    p = Pipeline(kb, Design(task=str(path)))
    stages = module_stages(p)
    if stages is None or stages.refused:
        return {"task": path.name, "skipped": stages.refused if stages else "one kernel"}
    mt = module_test(p, stages)
    started = time.monotonic()
    _chosen, fusion = price_fusion(mt.pipeline, jobs=jobs, timeout_s=timeout, cache=True)
    for plan in ("chosen", "unfused"):
        fusion[plan]["reason"] = (fusion[plan]["reason"] or "")[:200]
    return {"task": path.name, "sizes": {k: v[1] for k, v in mt.sizes.items()},
            "wall_s": round(time.monotonic() - started, 1), **fusion}


def main() -> None:
    from pypto_tui.kb import get_kb

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, help="keep the tasks whose latest verdict in this run history is pass")
    ap.add_argument("--tasks", help="comma-separated task numbers to run (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    files = sorted(args.folder.glob("*.py"), key=task_number)
    if args.tasks:
        wanted = {int(t) for t in args.tasks.split(",")}
        files = [f for f in files if task_number(f) in wanted]
    if args.db:
        ok = passing(args.db)
        files = [f for f in files if f.name in ok]
    kb = get_kb(None)
    rows = []
    for f in files:
        try:
            row = measure(f, kb, args.jobs, args.timeout)
        except Exception as exc:  # a task the planner refuses is reported, not fatal
            row = {"task": f.name, "skipped": f"{type(exc).__name__}: {exc}"[:200]}
        rows.append(row)
        if "skipped" in row:
            print(f"{f.name}: skipped ({row['skipped']})", flush=True)
            continue
        c, u = row["chosen"], row["unfused"]
        ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
        print(f"{f.name}: chosen {c['kernels']} kernel(s) {c['e2e_us']} us, unfused {u['kernels']} kernel(s) "
              f"{u['e2e_us']} us, ratio {ratio} at {row['sizes'] or 'the task sizes'} ({row['wall_s']} s)",
              flush=True)
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    slower = [r["task"] for r in rows if r.get("ratio") and r["ratio"] > 1.0]
    print(f"\n{len(ratios)} chain(s) priced: geomean chosen / unfused {geomean(ratios):.3f}, best "
          f"{min(ratios, default=float('nan')):.3f}, worst {max(ratios, default=float('nan')):.3f}; "
          f"chosen slower on {len(slower)}: {', '.join(slower) or 'none'}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "geomean": geomean(ratios), "slower": slower}, indent=1))


if __name__ == "__main__":
    main()
