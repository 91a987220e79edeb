"""How far is each generated kernel from the chip's limit? The roofline table, in one run.

    python benchmarks/bench_roofline.py PATH/TO/KernelBench/level1 [--level2 PATH/TO/level2 --every 10]
        [--elements N] [--jobs 2] [--json FILE]

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

`--level2` adds a sample of level-2 chains (every `--every`-th task, from 1) to the same run, each at
the sizes `verify` tests its module at (its kernels' designs kept). A chain's roofline is the task's:
its inputs, weights and output once through HBM and every kernel's arithmetic, with no intermediate
(what one kernel at the chip's limit would do); the plan's own (each kernel's inputs and output, the
intermediates included) is printed beside it.

Each row names the plan priced (kernels, tiles, loop counts). Where the cost model runs a kernel
faster than the chip's bound (it moves 32 B a cycle a core with no shared HBM cap, so large
products can land below the HBM time), the row says so and its ratio is taken at the chip's bound.
The header prints the commit the run was made at.
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


def plan_of(p: Any) -> str:
    """The plan priced: the kernel count, then each kernel's main tile and loop count."""
    from pypto_tui.design import module_stages

    stages = module_stages(p)
    if stages is None or stages.refused:
        return f"1 kernel: {_tile_loop(p)}"
    return f"{len(stages.stages)} kernels: " + "; ".join(_tile_loop(s.pipeline) for s in stages.stages)


def _tile_loop(p: Any) -> str:
    tile = p.chosen_tile()
    loop = p.chosen_loop_count()
    c = p.cube_choice()
    e = c.evaluation if c is not None else None
    cube = f" cube m{list(e.m)} k{list(e.k)} n{list(e.n)}" if e is not None else ""
    return f"{tuple(tile) if tile else '-'}{cube} loop {loop or 1}"


def chain_bounds(p: Any, kb: Any) -> tuple[Any, Any]:
    """A chain's (task roofline, plan roofline): the plan's adds every kernel's bytes (intermediates
    written and read again); the task's drops each intermediate (roofline.module_roofline)."""
    from pypto_tui.design import module_stages
    from pypto_tui.roofline import module_roofline

    stages = module_stages(p)
    if stages is None or stages.refused or not stages.stages:
        raise ValueError(stages.refused if stages else "no module")
    m = module_roofline(stages.stages, kb)
    return m.task, m.plan


def commit() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


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
    ap.add_argument("--level2", type=Path, default=None, help="KernelBench's level2 folder: add a sample of chains")
    ap.add_argument("--every", type=int, default=10, help="the level-2 sample: every N-th task from task 1")
    a = ap.parse_args()
    if not a.level1.is_dir():
        sys.exit(f"{a.level1} is not a folder: give KernelBench's level1 folder")
    if a.level2 is not None and not a.level2.is_dir():
        sys.exit(f"{a.level2} is not a folder: give KernelBench's level2 folder")

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
    at = commit()  # before anything runs: the code the run measures
    rows: list[dict[str, Any]] = []
    jobs, owners, tests = [], [], []
    tasks = [(1, path) for path in sorted(a.level1.glob("*.py"), key=task_key)]
    if a.level2 is not None:
        tasks += [(2, path) for path in sorted(a.level2.glob("*.py"), key=task_key)
                  if (task_key(path)[0] - 1) % max(a.every, 1) == 0]
    for level, path in tasks:
        if a.only and not re.search(a.only, path.name):
            continue
        row: dict[str, Any] = {"task": path.name, "level": level}
        rows.append(row)
        try:
            p = Pipeline(kb, Design(task=str(path)))
            if level == 2:
                from pypto_tui.design import module_stages
                from pypto_tui.sim.module_test import module_test

                full = module_stages(p)
                if full is None or full.refused:
                    row["family"] = "chain"
                    row["status"] = f"unsupported: {full.refused if full else 'one kernel'}"
                    continue
                test = module_test(p, full).pipeline
                row["family"] = "chain (level 2)"
                row["shapes"] = {i.name: list(i.shape) for i in test.contract().tensor_inputs if i.shape}
                r, planned = chain_bounds(test, kb)
                row["plan_roofline_us"] = planned.roofline_us
            else:
                c = p.contract()
                row["family"] = c.family
                if not c.supported:
                    row["status"] = f"unsupported: {c.reason}"
                    continue
                test, shapes = at_bench_shape(p, a.elements)
                row["shapes"] = shapes
                r = roofline(test.contract(), kb)
            row.update(roofline_us=r.roofline_us, bound=r.bound, bytes=r.work.bytes, plan=plan_of(test))
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
            settle(row, res.e2e_us)
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
            row.update(status="ok", note=f"the chosen tile did not compile ({str(row['reason'])[:60]}); the "
                                         f"documents' pick {tuple(pick)} priced")
            settle(row, res.e2e_us)
    report(rows, a.elements, at, time.perf_counter() - t0)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


def settle(row: dict[str, Any], us: float) -> None:
    """The row's simulated time and ratio; below the chip's bound the cost model is too fast, and
    the ratio is taken at the bound (1.0), the raw one kept."""
    row["simulated_us"] = us
    row["raw_ratio"] = us / row["roofline_us"]
    row["ratio"] = max(row["raw_ratio"], 1.0)
    if row["raw_ratio"] < 1.0:
        below = (f"the cost model runs it in {us:.3g} µs, below the chip's {row['bound']} bound of "
                 f"{row['roofline_us']:.3g} µs: ratio taken at the bound")
        row["note"] = f"{row['note']}; {below}" if row.get("note") else below


def report(rows: list[dict[str, Any]], elements: int, at: str = "unknown", wall_s: float = 0.0) -> None:
    where = f"largest input <= {elements} elements" if elements else "the tasks' own shapes"
    print(f"One run at commit {at}, {wall_s / 60:.1f} min of simulation. Level 1 at its reduced shape ({where}); "
          "level 2 at verify's module sizes.\n")
    print("| task | family | shape used | plan | roofline µs | binds | simulated µs | sim / roofline |")
    print("|---|---|---|---|--:|---|--:|--:|")
    for r in rows:
        shapes = ", ".join(f"{k}={tuple(v)}" for k, v in (r.get("shapes") or {}).items())
        name = f"L{r.get('level', 1)} {r['task']}"
        if "ratio" in r:
            note = f" ({r['note']})" if r.get("note") else ""
            plan_bound = (f" (plan's own: {r['plan_roofline_us']:.3g})" if r.get("plan_roofline_us") else "")
            print(f"| {name} | {r.get('family')} | {shapes} | {r.get('plan', '-')} | {r['roofline_us']:.3g}"
                  f"{plan_bound} | {r['bound']} | {r['simulated_us']:.3g}{note} | {r['ratio']:.1f} |")
        else:
            print(f"| {name} | {r.get('family', '-')} | {shapes} | {r.get('plan', '-')} | - | - | "
                  f"{str(r.get('status'))[:120]} | - |")
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
    ones = [r["ratio"] for r in rows if "ratio" in r and r.get("level", 1) == 1]
    if ones:
        print(f"| all of level 1 | {len(ones)} | {geomean(ones):.1f} | {max(ones):.1f} | |")
    if everything:
        print(f"| all | {len(everything)} | {geomean(everything):.1f} | {max(everything):.1f} | |")
    missing = [r["task"] for r in rows if "ratio" not in r]
    if missing:
        print(f"\nnot simulated ({len(missing)}): " + ", ".join(missing))


if __name__ == "__main__":
    main()
