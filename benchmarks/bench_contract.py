"""Benchmark: contracts per second over the task fixtures (the static path: libcst, no torch).

    python benchmarks/bench_contract.py [--rounds N] [--json]

Each round extracts the contract of every fixture (tests/fixtures/tasks and the readable ones in
tests/fixtures/tasks_extra) from its source text and plans its dimensions. The knowledge pack is
loaded once, as the CLI and the app do; file reading is excluded so the figure is the analysis.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pypto_tui.contract.extract import extract_contract  # noqa: E402
from pypto_tui.dims import plan_dims  # noqa: E402
from pypto_tui.errors import TaskFileError  # noqa: E402
from pypto_tui.kb import get_kb  # noqa: E402


def sources() -> list[tuple[str, str]]:
    out = []
    for folder in ("tasks", "tasks_extra"):
        for p in sorted((ROOT / "tests" / "fixtures" / folder).glob("*.py")):
            out.append((p.name, p.read_text()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    kb = get_kb()
    srcs = []
    for name, src in sources():
        try:
            extract_contract(src, kb)
            srcs.append((name, src))
        except TaskFileError:
            pass  # the deliberately broken fixtures
    extract_t, plan_t = [], []
    per_file: dict[str, list[float]] = {name: [] for name, _ in srcs}
    for _ in range(args.rounds):
        t_ex = t_pl = 0.0
        for name, src in srcs:
            t0 = time.perf_counter()
            c = extract_contract(src, kb)
            t1 = time.perf_counter()
            plan_dims(c, kb)
            t2 = time.perf_counter()
            t_ex += t1 - t0
            t_pl += t2 - t1
            per_file[name].append(t1 - t0)
        extract_t.append(t_ex)
        plan_t.append(t_pl)
    n = len(srcs)
    ex, pl = statistics.median(extract_t), statistics.median(plan_t)
    result = {
        "fixtures": n, "rounds": args.rounds,
        "contracts_per_s": round(n / ex, 1), "contracts_and_plans_per_s": round(n / (ex + pl), 1),
        "ms_per_contract": round(1000 * ex / n, 3), "ms_per_plan": round(1000 * pl / n, 4),
        "slowest": max(per_file, key=lambda k: statistics.median(per_file[k])),
        "slowest_ms": round(1000 * max(statistics.median(v) for v in per_file.values()), 3),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{n} fixtures x {args.rounds} rounds (median round)")
        print(f"  extract_contract: {result['contracts_per_s']} contracts/s ({result['ms_per_contract']} ms each)")
        print(f"  + plan_dims:      {result['contracts_and_plans_per_s']} contracts+plans/s "
              f"({result['ms_per_plan']} ms per plan)")
        print(f"  slowest fixture:  {result['slowest']} ({result['slowest_ms']} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
