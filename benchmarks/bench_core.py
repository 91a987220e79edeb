"""Benchmarks of the core (issue 2): run `python benchmarks/bench_core.py`.

Reports: one tile evaluation (µs), full candidate enumeration for 3-D and 4-D shapes, adversarial
sizes included (ms), and the wall time of `pypto-tui tile ...` against `python -c "import numpy"`
(median of repeated runs; issue 15's target is 1.3x).
Not a test: timings depend on the machine; the numbers go into the issue notes.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pypto_tui.kb import bundled_pack_dir, load_pack
from pypto_tui.tiles import evaluate_tile, rank_candidates


def per_call(fn, n: int) -> float:
    fn()
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n)
    return min(samples)


def wall(cmd: list[str], n: int = 15) -> float:
    subprocess.run(cmd, capture_output=True, check=False)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    kb = load_pack(bundled_pack_dir())
    ev = per_call(lambda: evaluate_tile(kb, (16, 256, 256), "fp32", (1, 16, 256), 1), 2000)
    print(f"one evaluation (16,256,256) tile (1,16,256): {ev * 1e6:.1f} us   (target < 50 us)")
    rank_candidates(kb, (16, 64, 256, 256), "fp32", 1, top=10)
    for shape in [(16, 256, 256), (16, 64, 256, 256), (24, 96, 360, 720), (30, 1000, 720, 4095),
                  # issue 15: whatever the sizes, a 4-D enumeration stays bounded
                  (2**40, 255, 1, 1), (999983, 1000003, 7, 31), (2**16, 3**8, 5**4, 7**3),
                  (720720, 720, 720, 720)]:
        en = per_call(lambda s=shape: rank_candidates(kb, s, "fp32", 1, top=10), 5)
        n = rank_candidates(kb, shape, "fp32", 1, top=1).enumerated
        print(f"full enumeration {shape} dim 1 ({n} tiles, top 10): {en * 1e3:.2f} ms   (target < 20 ms)")
    exe = shutil.which("pypto-tui") or str(Path(sys.executable).with_name("pypto-tui"))
    base = wall([sys.executable, "-c", "import numpy"])
    print(f"python -c 'import numpy': {base * 1e3:.0f} ms")
    for label, args in [
        ("tile --tile (evaluation)",
         ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,16,256", "--json"]),
        ("tile (ranked candidates)", ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--json"]),
        ("loop", ["loop", "--shape", "67108864", "--tile", "8192", "--json"]),
    ]:
        w = wall([exe, *args])
        print(f"pypto-tui {label}: {w * 1e3:.0f} ms = {w / base:.2f}x numpy import   (target <= 1.3x)")


if __name__ == "__main__":
    main()
