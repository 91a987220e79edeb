"""Benchmark the app: keystroke -> updated findings panel, and start-up time to the first screen.

Keystroke latency (target < 16 ms, one frame at 60 Hz): the softmax task's tile screen, 100
keystrokes in the last tile field (alternately deleting and re-typing a digit, so every key
changes the tile and its findings). Each key is sent the way `Pilot.press` sends it (a Key event
to the app's driver) but without Pilot's idle sleeps (two 20 ms waits per key), then the clock
stops when the findings panel shows the new tile's findings *and* the screen has been painted.

Start-up: fresh processes, `pypto-tui ui TASK` in headless mode; time from the process start to
the first screen painted, and to the contract form filled in (reading the task file imports libcst
in a worker thread, so the screen paints before it).

Run: .venv/bin/python benchmarks/bench_tui.py [--keys 100] [--starts 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tests" / "fixtures" / "tasks" / "softmax_rows.py"

START_SCRIPT = r"""
import time
T0 = time.perf_counter()
import sys, asyncio
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.contract_screen import ContractScreen
T_IMPORT = time.perf_counter()
marks = {}

async def watch(pilot):
    app = pilot.app
    while True:
        s = app.screen
        if isinstance(s, ContractScreen) and s.is_mounted and "paint" not in marks:
            marks["paint"] = time.perf_counter()
        if isinstance(s, ContractScreen) and s.contract is not None:
            await pilot.pause()
            marks["form"] = time.perf_counter()
            break
        await asyncio.sleep(0.002)
    app.exit()

app = PyptoApp(task=sys.argv[1], blink=False, freeze_gc=True)
app.run(headless=True, size=(120, 40), auto_pilot=watch)
print(f"{T_IMPORT - T0:.4f} {marks['paint'] - T0:.4f} {marks['form'] - T0:.4f}")
"""


def bench_start(runs: int) -> dict[str, float]:
    """Median over fresh processes: imports, first screen painted, contract form ready (s)."""
    imports, paints, forms, walls = [], [], [], []
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "PYPTO_TUI_STATE_DIR": state, "TEXTUAL_ANIMATIONS": "none"}
        for _ in range(runs):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", START_SCRIPT, str(TASK)], env=env, cwd=ROOT,
                                 capture_output=True, text=True, check=True)
            walls.append(time.perf_counter() - t)
            a, b, c = (float(x) for x in out.stdout.split()[-3:])
            imports.append(a)
            paints.append(b)
            forms.append(c)
    return {"imports_s": statistics.median(imports), "first_screen_s": statistics.median(paints),
            "form_ready_s": statistics.median(forms), "process_wall_s": statistics.median(walls)}


async def _keystrokes(n: int) -> dict[str, float]:
    from textual import events

    from pypto_tui.screens.app import PyptoApp
    from pypto_tui.screens.tiles_screen import TilesScreen
    from pypto_tui.screens.widgets import FindingsList

    with tempfile.TemporaryDirectory() as state:
        app = PyptoApp(task=str(TASK), blink=False, state=Path(state), freeze_gc=True)  # as run_app does
        app.animation_level = "none"
        async with app.run_test(size=(120, 40)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            for _ in range(2):
                await pilot.press("ctrl+n")
                await app.workers.wait_for_complete()
                await pilot.pause()
            screen = app.screen
            assert isinstance(screen, TilesScreen)
            field = screen.tile_fields()[-1]
            field.focus()
            field.value = "8192"
            await pilot.pause()
            field.action_end()  # focusing selected the text; put the cursor after it
            await pilot.pause()
            panel = screen.query_one("#findings", FindingsList)
            driver = app._driver
            assert driver is not None
            times: list[float] = []
            for i in range(n + 5):  # 5 warm-up keys
                key, char = ("backspace", None) if i % 2 == 0 else ("2", "2")
                expect = "819" if i % 2 == 0 else "8192"
                event = events.Key(key, char)
                event.set_sender(app)
                t0 = time.perf_counter()
                driver.send_message(event)
                deadline = t0 + 10
                while not (screen.last_evaluation is not None
                           and screen.last_evaluation.tile[-1] == int(expect)
                           and panel.findings and set(panel.findings) == set(screen.last_evaluation.findings)):
                    await asyncio.sleep(0)
                    if time.perf_counter() > deadline:
                        raise RuntimeError(f"key {key!r}: the panel never showed tile ...{expect} "
                                           f"(field {field.value!r}, focused {app.focused!r})")
                screen._on_timer_update()  # paint now, as the refresh timer would
                t1 = time.perf_counter()
                if i >= 5:
                    times.append((t1 - t0) * 1000)
                await pilot.pause()  # the UI settles between keys, as between a person's keystrokes
            assert field.value == ("8192" if (n + 5) % 2 == 0 else "819")
    times.sort()
    return {"keystrokes": n, "median_ms": statistics.median(times), "p90_ms": times[int(0.9 * len(times)) - 1],
            "max_ms": times[-1], "min_ms": times[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    keys = asyncio.run(_keystrokes(args.keys))
    start = bench_start(args.starts)
    result = {"keystroke": keys, "start": start, "load_avg": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"keystroke -> findings panel painted, over {keys['keystrokes']} keys: median {keys['median_ms']:.2f} ms, "
          f"p90 {keys['p90_ms']:.2f} ms, max {keys['max_ms']:.2f} ms (target < 16 ms)")
    print(f"start (median of {args.starts} fresh processes): imports {start['imports_s']:.2f} s, "
          f"first screen {start['first_screen_s']:.2f} s, contract form ready {start['form_ready_s']:.2f} s, "
          f"process wall {start['process_wall_s']:.2f} s")
    print(f"(1-minute load average during the run: {result['load_avg']:.2f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
