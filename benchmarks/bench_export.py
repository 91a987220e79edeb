"""Benchmark: `export` over the task fixtures, time per task (contract -> ... -> written module).

    python benchmarks/bench_export.py [--rounds N] [--json] [--sim]

Each round exports every fixture of tests/fixtures/tasks into a fresh temp folder with
`pypto_tui.export.export_dir` (the code path of `pypto-tui export`): read the task,
extract the contract, plan dimensions, tiles and loops, generate the module with libcst and
write it atomically. The knowledge pack is loaded once, as the CLI does. The first round (cold:
imports, libcst's parser warm-up) is reported apart; per-task figures are the median of the rest.

`--sim` also builds every exported module once under pypto 0.2.0 SIM (one subprocess each) and
reports the build wall time and the cost model's e2e time; it needs the [sim] extra.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pypto_tui.export import export_dir  # noqa: E402
from pypto_tui.kb import get_kb  # noqa: E402

TASKS = ROOT / "tests" / "fixtures" / "tasks"


def _sim(kb: Any, rows: list[Any]) -> dict[str, dict[str, Any]]:
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.sim import jobs, runner

    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = Path(r.task).stem
        if r.status != "ok":
            continue
        c = Pipeline(kb, Design(task=r.task)).contract()
        inputs = tuple(jobs.InputSpec(scalar=i.value) if i.kind == "scalar"
                       else jobs.InputSpec(shape=tuple(i.shape), dtype=i.dtype or "fp32") for i in c.inputs)
        job = jobs.SimJob(kind="cost", kernel_source=r.kernel.source, inputs=inputs,
                          init_args=tuple(c.init_params.values()), label=name, memory_limit_mb=None)
        t = time.perf_counter()
        res = runner.run_in_subprocess(job, timeout_s=900)
        out[name] = {"status": res.status, "build_wall_s": round(time.perf_counter() - t, 2),
                     "e2e_us": res.e2e_us, "tasks": res.tasks, "error": res.error}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sim", action="store_true", help="also build every module under pypto 0.2.0 SIM")
    args = ap.parse_args(argv)
    kb = get_kb()
    per_task: dict[str, list[float]] = {}
    totals: list[float] = []
    first_total = 0.0
    first: dict[str, float] = {}
    last = None
    for i in range(max(2, args.rounds + 1)):
        with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
            t = time.perf_counter()
            report = export_dir(TASKS, Path(tmp) / "out", kb)
            total = time.perf_counter() - t
        if report.failed:
            print(json.dumps(report.to_dict(), indent=2), file=sys.stderr)
            return 1
        if i == 0:
            first_total = total
            first = {Path(r.task).stem: r.seconds for r in report.rows}
            continue
        totals.append(total)
        for r in report.rows:
            per_task.setdefault(Path(r.task).stem, []).append(r.seconds)
        last = report
    result: dict[str, Any] = {
        "tasks": len(per_task), "rounds": len(totals),
        "cold_total_s": round(first_total, 3), "warm_total_s_median": round(statistics.median(totals), 3),
        "per_task_ms": {k: {"median": round(1000 * statistics.median(v), 1), "cold": round(1000 * first[k], 1),
                            "pattern": next(r.pattern for r in last.rows if Path(r.task).stem == k) if last else ""}
                        for k, v in sorted(per_task.items())},
    }
    if args.sim and last is not None:
        result["sim"] = _sim(kb, last.rows)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"export of {result['tasks']} fixtures: cold {result['cold_total_s']:.2f} s, "
          f"warm median {result['warm_total_s_median']:.2f} s over {result['rounds']} rounds")
    head = f"{'task':<22} {'pattern':<9} {'median ms':>10} {'cold ms':>9}"
    print(head + ("  sim build s   e2e us" if args.sim else ""))
    for k, v in result["per_task_ms"].items():
        line = f"{k:<22} {v['pattern']:<9} {v['median']:>10.1f} {v['cold']:>9.1f}"
        if args.sim:
            s = result["sim"].get(k, {})
            wall, e2e = s.get("build_wall_s", float("nan")), s.get("e2e_us") or float("nan")
            line += f"  {wall:>11.2f} {e2e:>8.2f} {s.get('status')}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
