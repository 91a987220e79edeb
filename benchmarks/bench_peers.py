"""pypto-tui's kernels against the examples PyPTO ships for 0.2.0, on the same simulator (issue 22).

    python benchmarks/bench_peers.py PATH/TO/pypto [--only NAME] [--json FILE]

PATH is a local copy of PyPTO's repository at its 0.2.0 release (tag r0.2.0 of hicann/pypto, whose
examples run on the pypto==0.2.0 wheel); nothing of it is copied here: each example is run where it
lies, as its own README says (`python EXAMPLE.py ID --run_mode sim`), in a subprocess whose
TILE_FWK_OUTPUT_DIR points at a temp folder, and the cost model's time is read from the swim
file(s) it leaves (pypto_tui.sim.swim: the AIC/AIV span / 1800 cycles per µs). An example that
launches its kernel more than once (the reduction examples call it with keepdim False, then True)
is priced by its first launch (keepdim False, what our task computes); all launches are kept in
the JSON.

pypto-tui's side: a KernelBench-style task file for the same computation at the same shape and
dtype, written here, designed by the default pack and compiled by `pypto-tui sim`'s cost job. The
table prints both times and ours / theirs (below 1: ours is faster). `--sweep` adds pypto-tui's
measured pick: the fastest qualified tile of the estimate-guided tile sweep (`sim --sweep tiles`),
the tool's answer once it may compile a few candidates. Needs the [sim] extra and CPU torch; runs
go through pypto-tui's result cache (the examples' runs do not).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = "import torch\nimport torch.nn as nn\n\n\n"


@dataclass(frozen=True)
class Case:
    name: str
    example: str          # the example file, relative to the repository
    example_id: str       # its test id (`--list` names them)
    shape: str            # as the example builds its inputs (a fact read from the example)
    task: str             # our task file for the same computation


def _task(init: str, forward: str, args: str, inputs: str, consts: str) -> str:
    return (HEADER + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + init
            + f"\n    def forward(self, {args}):\n        return {forward}\n\n\n{consts}\n\n\n"
            + f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n")


NORM = "examples/02_intermediate/basic_nn/layer_normalization/layer_norm.py"
ACT = "examples/02_intermediate/operators/activation/activation.py"
REDUCE = "examples/01_beginner/compute/reduce_ops.py"
BF16_2D = "torch.randn(M, N, dtype=torch.bfloat16)"
CASES = (
    Case("softmax", "examples/02_intermediate/operators/softmax/softmax.py", "softmax::test_softmax",
         "(32, 32, 1, 256) fp32",
         _task("", "torch.softmax(x, dim=-1)", "x", "torch.rand(B, S, H, D)", "B, S, H, D = 32, 32, 1, 256")),
    Case("layer_norm", NORM, "layer_norm::test_layer_norm", "(32, 128) bf16, gamma 1, beta 0, eps 1e-6",
         _task("        self.norm = nn.LayerNorm(N, eps=1e-6, dtype=torch.bfloat16)\n", "self.norm(x)", "x",
               BF16_2D, "M, N = 32, 128")),
    Case("rms_norm", NORM, "rms_norm::test_rms_norm", "(32, 128) bf16, gamma 1, eps 1e-6",
         _task("", "x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6)", "x", BF16_2D,
               "M, N = 32, 128")),
    Case("silu", ACT, "silu::test_silu", "(32, 128) bf16",
         _task("", "x * torch.sigmoid(x)", "x", BF16_2D, "M, N = 32, 128")),
    Case("gelu (x * sigmoid(1.702 x))", ACT, "gelu::test_gelu", "(32, 128) bf16",
         _task("", "x * torch.sigmoid(x * 1.702)", "x", BF16_2D, "M, N = 32, 128")),
    Case("swiglu", ACT, "swiglu::test_swiglu", "(32, 128) bf16, two inputs",
         _task("", "gate * torch.sigmoid(gate) * up", "gate, up", f"{BF16_2D}, {BF16_2D}", "M, N = 32, 128")),
    Case("amax (row max)", REDUCE, "amax::test_amax_basic", "(2, 3) fp32, dim -1",
         _task("", "torch.amax(x, dim=-1)", "x", "torch.randn(M, N)", "M, N = 2, 3")),
    Case("sum (row sum)", REDUCE, "sum::test_sum_basic", "(2, 3) fp32, dim -1",
         _task("", "torch.sum(x, dim=-1)", "x", "torch.randn(M, N)", "M, N = 2, 3")),
    Case("matmul", "examples/01_beginner/compute/matmul_ops.py", "matmul::test_matmul_basic", "(2, 2) @ (2, 2) fp32",
         _task("", "torch.matmul(A, B)", "A, B", "torch.randn(N, N), torch.randn(N, N)", "N = 2")),
)


def run_example(repo: Path, case: Case, timeout: float) -> dict[str, Any]:
    """Run one example in SIM mode in its own folder; the per-launch cost-model times."""
    from pypto_tui.sim.swim import find_swim_files, read_swim

    script = repo / case.example
    if not script.is_file():
        return {"status": f"no {case.example} in {repo}"}
    with tempfile.TemporaryDirectory(prefix="peer-") as tmp:
        env = dict(os.environ, TILE_FWK_OUTPUT_DIR=f"{tmp}/out", ASCEND_PROCESS_LOG_PATH=f"{tmp}/log",
                   PYPTO_HOME=f"{tmp}/home")
        env.pop("ASCEND_HOME_PATH", None)
        try:
            done = subprocess.run([sys.executable, script.name, case.example_id, "--run_mode", "sim"],
                                  cwd=script.parent, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": f"timeout after {timeout:g} s"}
        swims = find_swim_files(f"{tmp}/out")
        if not swims:
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            return {"status": f"no cost-model output (exit {done.returncode}): {tail[0][:120]}"}
        launches = [read_swim(s).e2e_us for s in swims]
    return {"status": "ok", "launches": launches, "us": launches[0]}


def run_ours(case: Case, folder: Path, timeout: float, sweep: bool = False) -> dict[str, Any]:
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.errors import InputError
    from pypto_tui.kb import get_kb
    from pypto_tui.sim.design_runs import cost_job
    from pypto_tui.sim.runner import run_one

    path = folder / f"{case.name.split()[0]}.py"
    path.write_text(case.task)
    try:
        p = Pipeline(get_kb(), Design(task=str(path)))
        job = cost_job(p, case.name)
    except InputError as exc:
        return {"status": f"no design: {exc}"}
    r = run_one(job, timeout_s=timeout)
    if not r.ok:
        return {"status": f"{r.status}: {(r.reason or r.error or '')[:120]}"}
    out = {"status": "ok", "us": r.e2e_us, "tile": list(p.chosen_tile() or []), "loop_count": p.chosen_loop_count()}
    if sweep:
        from pypto_tui.sim.design_runs import sweep_tiles

        best = sweep_tiles(p, budget=6, jobs=2, timeout_s=timeout).best_qualified
        if best is not None and best.e2e_us is not None:
            out["swept_us"], out["swept_tile"] = min(best.e2e_us, r.e2e_us or best.e2e_us), best.value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="a local copy of PyPTO's repository at r0.2.0")
    ap.add_argument("--only", default="", help="run the cases whose name starts with this")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--sweep", action="store_true", help="also run pypto-tui's estimate-guided tile sweep")
    a = ap.parse_args()
    if not (a.repo / "examples").is_dir():
        sys.exit(f"{a.repo} has no examples/ folder: give a copy of PyPTO's repository (tag r0.2.0)")
    from pypto_tui.sim.availability import check_sim

    avail = check_sim()
    if not avail.ok:
        sys.exit(avail.message)
    rows = []
    with tempfile.TemporaryDirectory(prefix="peer-tasks-") as tasks:
        for case in CASES:
            if a.only and not case.name.startswith(a.only):
                continue
            print(f"  {case.name} ...", file=sys.stderr, flush=True)
            theirs, ours = run_example(a.repo, case, a.timeout), run_ours(case, Path(tasks), a.timeout, a.sweep)
            rows.append({"case": case.name, "example": f"{case.example} {case.example_id}", "shape": case.shape,
                         "theirs": theirs, "ours": ours})
    print("| computation | shape (the example's) | PyPTO example µs | pypto-tui µs (default pick) | ours / theirs "
          "| pypto-tui µs (guided sweep) | swept / theirs |")
    print("|---|---|--:|--:|--:|--:|--:|")
    ratios, swept = [], []
    for r in rows:
        t, o = r["theirs"], r["ours"]
        ratio = o["us"] / t["us"] if t["status"] == o["status"] == "ok" and t["us"] else None
        if ratio is not None:
            ratios.append(ratio)
        times = (f"{t['us']:.2f}" + (f" ({len(t['launches'])} launches)" if len(t["launches"]) > 1 else "")
                 if t["status"] == "ok" else t["status"])
        mine = f"{o['us']:.2f}" if o["status"] == "ok" else o["status"]
        s = o["swept_us"] / t["us"] if ratio is not None and o.get("swept_us") else None
        if s is not None:
            swept.append(s)
        swept_text = f"{o['swept_us']:.2f} {tuple(o['swept_tile'])}" if s is not None else "-"
        print(f"| {r['case']} | {r['shape']} | {times} | {mine} | {f'{ratio:.2f}' if ratio else '-'} | "
              f"{swept_text} | {f'{s:.2f}' if s is not None else '-'} |")
    if ratios:
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\ngeometric mean ours / theirs {gm:.2f} over {len(ratios)}; slower than theirs on "
              f"{sum(x > 1.005 for x in ratios)} (more than 0.5%)")
    if swept:
        gm = math.exp(sum(map(math.log, swept)) / len(swept))
        print(f"after the guided tile sweep: geometric mean {gm:.2f} over {len(swept)}; slower than theirs on "
              f"{sum(x > 1.005 for x in swept)}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
