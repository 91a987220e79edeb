"""Benchmarks of the compiler in the loop (issue 6): run `python benchmarks/bench_sim.py`.

Needs the [sim] extra and CPU torch. Reports simulations per minute with 1 and 2 parallel
workers (cache off), the time of a cache hit, and how many simulations the documents' guided
sweep needs against measuring every qualified candidate, over a few fixture tasks. Uses a
private result cache so earlier runs do not flatter the numbers.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tests" / "fixtures" / "tasks"


def main() -> None:
    os.environ.setdefault("PYPTO_TUI_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-tui-bench-"))
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.kb import get_kb
    from pypto_tui.sim.availability import check_sim
    from pypto_tui.sim.cache import ResultCache
    from pypto_tui.sim.design_runs import cost_job, sweep, variant
    from pypto_tui.sim.runner import run_many

    avail = check_sim()
    if not avail.ok:
        sys.exit(avail.message)
    kb = get_kb()
    soft = Pipeline(kb, Design(task=str(TASKS / "softmax_rows.py")))
    tiles = [(1, 16384), (1, 8192), (1, 4096), (1, 2048), (2, 4096), (4, 4096)]
    sim_jobs = [cost_job(variant(soft, tile=list(t)), str(t)) for t in tiles]
    for workers in (1, 2):
        t = time.perf_counter()
        res = run_many(sim_jobs, jobs=workers, cache=False)
        dt = time.perf_counter() - t
        ok = sum(r.ok for r in res)
        print(f"--jobs {workers}: {len(res)} simulations in {dt:.1f} s = {60 * len(res) / dt:.1f} per minute "
              f"({ok} ok)")
    cache = ResultCache.default()
    run_many(sim_jobs[:1], jobs=1, cache=cache)
    t = time.perf_counter()
    run_many(sim_jobs[:1], jobs=1, cache=cache)
    print(f"cache hit: {(time.perf_counter() - t) * 1e3:.1f} ms")

    total_guided = total_qualified = 0
    for name, kind in [("softmax_rows", "tiles"), ("max_over_dim", "tiles"), ("sum_over_channels", "tiles"),
                       ("group_norm", "loops"), ("matmul_tall", "loops")]:
        p = Pipeline(kb, Design(task=str(TASKS / f"{name}.py")))
        t = time.perf_counter()
        rep = sweep(p, kind, budget=8, jobs=2)[0]
        line = sum(1 for r in rep.rows if r.qualified)
        best = rep.best_qualified
        print(f"{name} {kind}: {rep.simulations} simulations (guided) vs {rep.qualified} qualified "
              f"({line} on the sweep line); best qualified {best.label if best else '-'} "
              f"{best.e2e_us if best else '-'} us; {time.perf_counter() - t:.0f} s")
        total_guided += rep.simulations
        total_qualified += rep.qualified
    print(f"total: {total_guided} simulations vs {total_qualified} qualified candidates")


if __name__ == "__main__":
    main()
