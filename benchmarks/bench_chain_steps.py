"""Benchmark the app's step changes on a task of six kernels (a ResNet basic block).

The app runs headless with Pilot; each step change is `ctrl+n` (or `ctrl+b`) pressed, and the clock
stops when the new step is on screen, its work done (no busy state, no worker running) and painted.
The first pass (contract -> kernel) plans every kernel; the second (kernel -> dims and back to
kernel) shows steps whose plan is already computed: that is the figure the app must keep under
half a second.

Run: .venv/bin/python benchmarks/bench_chain_steps.py [--task FILE] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tests" / "fixtures" / "tasks_chain" / "resnet_basic_block.py"
STEPS = ("contract", "dims", "tiles", "loops", "kernel")


async def _until_shown(app: object, step: str) -> None:
    from pypto_tui.screens.base import StepScreen

    while True:
        screen = app.screen  # type: ignore[attr-defined]
        busy = getattr(screen, "busy", False)
        if (isinstance(screen, StepScreen) and screen.STEP == step and screen.is_mounted and not busy
                and not any(w.is_running for w in app.workers if w.group != "warm-up")):  # type: ignore[attr-defined]
            return
        await asyncio.sleep(0.002)


async def _run(task: Path, rounds: int) -> dict[str, list[float]]:
    from pypto_tui.screens.app import PyptoApp

    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as state:
        app = PyptoApp(task=str(task), blink=False, state=Path(state), trust_task_code=True, offer_restore=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until_shown(app, "contract")
            await app.workers.wait_for_complete()
            await pilot.pause()

            async def step(key: str, target: str, label: str) -> None:
                t0 = time.perf_counter()
                await pilot.press(key)
                await _until_shown(app, target)
                await pilot.pause()
                times.setdefault(label, []).append(time.perf_counter() - t0)

            for i in range(1, len(STEPS)):
                await step("ctrl+n", STEPS[i], f"first {STEPS[i - 1]} -> {STEPS[i]}")
            for _ in range(rounds):
                for i in range(len(STEPS) - 1, 1, -1):
                    await step("ctrl+b", STEPS[i - 1], f"again {STEPS[i]} -> {STEPS[i - 1]}")
                for i in range(2, len(STEPS)):
                    await step("ctrl+n", STEPS[i], f"again {STEPS[i - 1]} -> {STEPS[i]}")
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", type=Path, default=TASK)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    times = asyncio.run(_run(args.task, args.rounds))
    summary = {k: round(statistics.median(v), 3) for k, v in times.items()}
    worst_again = max((v for k, v in summary.items() if k.startswith("again")), default=0.0)
    if args.json:
        print(json.dumps({"task": args.task.name, "median_s": summary, "worst_again_s": worst_again}))
        return 0
    print(f"{args.task.name}: step change, key to the new step shown and idle (median seconds)")
    for k, v in summary.items():
        print(f"  {k:28} {v:7.3f}")
    print(f"worst step change once planned: {worst_again:.3f} s (target 0.5 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
