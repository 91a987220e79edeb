"""Does the cost estimate land near the cost model's optimum, and does the guided sweep find it
with few simulations? (issue 14): run `python benchmarks/bench_estimate.py [--jobs 2]`.

Needs the [sim] extra and CPU torch. For each (task, sweep) below it measures every qualified
candidate (`sim --sweep KIND --exhaustive`, the reference), then reports:

- static: the time of the estimate's pick (no simulation) / the exhaustive optimum, and the same
  for the documents' pick, for comparison; target: geometric mean <= 1.10, none above 1.25;
- guided: the simulations the estimate-guided sweep asks for / the exhaustive count, and its best
  / the optimum (found = within 3%); target: >= 5 of 6 sweeps found with <= 1/3 of the simulations.

Two estimates are scored: the pack's (its fits include these very tasks: in-sample) and, for an
honest view of a task the fit has not seen, a leave-one-task-out fit made from the other tasks'
exhaustive runs (`--loto`). Every run goes through the result cache (`$PYPTO_TUI_CACHE_DIR`, else
the user cache), so a second run costs seconds; the first takes hours on a busy 2-core machine.
`--json FILE` writes every figure. `--calibrate DIR` first runs `kb calibrate` over the same tasks
(both sweeps of the tile tasks, the loop sweep of the loop tasks) into DIR, the way the default
pack's estimate.toml was made (then with --ranking rules).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "tests" / "fixtures" / "tasks"
OWN = ROOT / "benchmarks" / "tasks"

TILES = [SHARED / f"{n}.py" for n in ("softmax_rows", "max_over_dim", "triplet_margin", "elu", "mse_loss",
                                      "kl_div_batchmean")] + \
        [OWN / f"{n}.py" for n in ("softmax_wide", "amax_middle", "mean_last", "layer_norm_rows", "group_norm_small",
                                   "batch_norm_small", "rms_norm_small", "sigmoid_large", "l1_loss_mean")]
LOOPS = [SHARED / f"{n}.py" for n in ("group_norm", "batch_norm", "rms_norm", "sum_over_channels", "mse_loss",
                                      "kl_div_batchmean", "matmul_tall", "matmul_transposed_b", "frobenius_scale",
                                      "scalar_mul_large")] + [OWN / "group_norm_mid.py"]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def exhaustive(p: Any, kind: str, jobs: int, timeout: float) -> Any:
    from pypto_tui.sim.design_runs import sweep_loops, sweep_tiles

    sweep = sweep_tiles if kind == "tiles" else sweep_loops
    return sweep(p, exhaustive=True, jobs=jobs, timeout_s=timeout)


def row_value(report: Any, key: Any) -> float | None:
    for r in report.rows:
        if r.measured and (tuple(r.value) if isinstance(r.value, list) else (r.value,)) == key:
            return r.e2e_us
    return None


def loto_estimator(samples: list[Any], task: str, family: str, cores: int) -> Any:
    """An estimator fitted on every other task of the family (None when there is none)."""
    from pypto_tui.estimate import Estimator
    from pypto_tui.estimate_fit import fit

    others = [s for s in samples if s.family == family and s.task != task]
    if len({s.task for s in others}) < 1:
        return None
    try:
        return Estimator(fit(others, family, "loto", cores), cores)
    except ValueError:
        return None


def replay_guided(candidates: list[Any], prices: list[float | None], values: dict[Any, float | None],
                  error: float, jobs: int) -> tuple[int, float | None]:
    """The estimate-guided search replayed on measured values (what the sweep would ask for)."""
    from pypto_tui.sim.sweep import estimate_guided_sweep

    r = estimate_guided_sweep(candidates, prices, lambda batch: [values.get(c) for c in batch], error=error,
                              parallel=jobs)
    return r.measurements, r.best_value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1200.0)
    ap.add_argument("--kind", choices=("tiles", "loops", "both"), default="both")
    ap.add_argument("--only", nargs="*", help="task names to run (default: all)")
    ap.add_argument("--loto", action="store_true", help="also score leave-one-task-out fits")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--calibrate", type=Path, help="first calibrate a pack over these tasks into this folder")
    args = ap.parse_args()
    if args.calibrate:
        from typer.main import get_command

        from pypto_tui.cli import app

        items = [str(t) for t in TILES] + [f"{t}:loops" for t in LOOPS if t not in TILES]
        get_command(app)(["kb", "calibrate", *items, "--out", str(args.calibrate), "--ranking", "rules",
                          "--jobs", str(args.jobs), "--timeout", str(args.timeout), "--force"],
                         standalone_mode=False)

    from pypto_tui.design import Design, Pipeline
    from pypto_tui.kb import get_kb
    from pypto_tui.sim.availability import check_sim
    from pypto_tui.sim.calibrate import _samples
    from pypto_tui.sim.design_runs import sweep_loops, sweep_tiles

    if not check_sim().ok:
        sys.exit(check_sim().message)
    kb = get_kb()
    plan = ([("tiles", t) for t in TILES] if args.kind != "loops" else []) + \
        ([("loops", t) for t in LOOPS] if args.kind != "tiles" else [])
    if args.only:
        plan = [(k, t) for k, t in plan if t.stem in args.only]

    results: list[dict[str, Any]] = []
    refs: dict[tuple[str, str], Any] = {}
    samples: list[Any] = []
    for kind, task in plan:
        p = Pipeline(kb, Design(task=str(task)))
        t0 = time.perf_counter()
        ref = exhaustive(p, kind, args.jobs, args.timeout)
        refs[(kind, task.stem)] = (p, ref)
        samples += _samples(p, task.stem, p.contract().family, p.contract().op or "", ref)
        print(f"[{time.perf_counter() - t0:6.0f} s] {task.stem} {kind}: exhaustive {ref.simulations} simulation(s)",
              flush=True)

    for kind, task in plan:
        p, ref = refs[(kind, task.stem)]
        best = ref.best_qualified.e2e_us if ref.best_qualified else None
        rec: dict[str, Any] = {"task": task.stem, "kind": kind, "family": p.contract().family,
                               "qualified": ref.qualified, "exhaustive": ref.simulations, "optimum_us": best,
                               "optimum": ref.best_qualified.label if ref.best_qualified else None,
                               "timeouts": sum(1 for r in ref.rows if r.status == "timeout")}
        if best is None:
            results.append(rec)
            continue
        rules = ref.best_by_rules
        rec["rules_pick"], rec["rules_us"] = (rules.label, rules.e2e_us) if rules else (None, None)
        if kind == "tiles":
            tp = p.tile_plan(top=None)
            est = tp.best_by_estimate
            rec["estimate_pick"] = str(est.tile) if est else None
            rec["estimate_us"] = row_value(ref, est.tile) if est else None
            guided = sweep_tiles(p, jobs=args.jobs, timeout_s=args.timeout)
        else:
            lp = p.loop_plan()
            est = lp.best_by_estimate if lp else None
            rec["estimate_pick"] = f"loop_count {est.loop_count}" if est else None
            rec["estimate_us"] = row_value(ref, (est.loop_count,)) if est else None
            guided = sweep_loops(p, jobs=args.jobs, timeout_s=args.timeout)
        rec["static_ratio"] = rec["estimate_us"] / best if rec.get("estimate_us") else None
        rec["rules_ratio"] = rec["rules_us"] / best if rec.get("rules_us") else None
        g = guided.best_qualified.e2e_us if guided.best_qualified else None
        rec.update(guided_mode=guided.mode, guided_sims=guided.simulations, guided_best_us=g,
                   guided_ratio=g / best if g else None, guided_stopped=guided.stopped)
        if args.loto:
            fam = p.contract().family
            e = loto_estimator(samples, task.stem, fam, kb.chip.aiv_cores)
            if e is not None:
                measured = list(_samples(p, task.stem, fam, p.contract().op or "", ref))
                qualified = [s for s in measured if s.point.loop_count != 1]
                if kind == "tiles":
                    keep = {tuple(r.value) for r in ref.rows if r.qualified and r.measured and r.e2e_us}
                    qualified = [s for s in measured if s.point.tile in keep]
                if qualified:
                    pick = min(qualified, key=lambda s: e.us(s.point))
                    rec["loto_static_ratio"] = pick.e2e_us / best
                    values = {i: s.e2e_us for i, s in enumerate(qualified)}
                    sims, found = replay_guided(list(values), [e.us(s.point) for s in qualified], values,
                                                e.fit.error, args.jobs)
                    rec["loto_guided_sims"], rec["loto_guided_ratio"] = sims, (found / best if found else None)
        results.append(rec)

    print()
    head = (f"{'task':22} {'sweep':5} {'qual':>4} {'optimum':>16} {'us':>9} {'estimate pick':>16} {'x':>6} "
            f"{'rules pick':>16} {'x':>6} {'guided':>7} {'x':>6}")
    print(head)
    for r in results:
        if r.get("optimum_us") is None:
            print(f"{r['task']:22} {r['kind']:5} no measurement compiled")
            continue
        print(f"{r['task']:22} {r['kind']:5} {r['qualified']:>4} {r['optimum']:>16} {r['optimum_us']:>9.2f} "
              f"{r.get('estimate_pick')!s:>16} {r['static_ratio'] or float('nan'):>6.3f} "
              f"{r.get('rules_pick')!s:>16} {r['rules_ratio'] or float('nan'):>6.3f} "
              f"{r['guided_sims']:>3}/{r['exhaustive']:<3} {r['guided_ratio'] or float('nan'):>6.3f}")
    scored = [r for r in results if r.get("static_ratio")]
    st = [r["static_ratio"] for r in scored]
    ru = [r["rules_ratio"] for r in scored if r.get("rules_ratio")]
    found = [r for r in scored if r.get("guided_ratio") and r["guided_ratio"] <= 1.03
             and r["guided_sims"] <= r["exhaustive"] / 3]
    print(f"\nstatic pick / optimum: estimate geomean {geomean(st):.3f}, worst {max(st):.3f}, above 1.25: "
          f"{sum(x > 1.25 for x in st)} of {len(st)}; documents' pick geomean {geomean(ru):.3f}, worst {max(ru):.3f}")
    print(f"guided: {len(found)} of {len(scored)} sweeps found the optimum within 3% with <= 1/3 of the simulations "
          f"(total {sum(r['guided_sims'] for r in scored)} vs {sum(r['exhaustive'] for r in scored)} exhaustive)")
    if args.loto:
        lo = [r["loto_static_ratio"] for r in scored if r.get("loto_static_ratio")]
        lf = [r for r in scored if r.get("loto_guided_ratio") and r["loto_guided_ratio"] <= 1.03
              and r["loto_guided_sims"] <= r["qualified"] / 3]
        if lo:
            print(f"leave-one-task-out: static geomean {geomean(lo):.3f}, worst {max(lo):.3f} over {len(lo)}; guided "
                  f"{len(lf)} of {sum(1 for r in scored if r.get('loto_guided_sims'))} within 3% with <= 1/3")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
