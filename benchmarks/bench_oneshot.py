"""The start-up cost of the one-shot commands, against a bare `python -c "import numpy"`.

Runs each command and the numpy import alternately (pairs, so a busy machine slows both alike) and
reports the median of the per-pair ratios; `--imports` lists what each command imports beyond numpy
and the largest import times (`python -X importtime`). The target is 1.3x for `tile`.

Both run with bytecode caches, as an installed copy does after its first run: the caches go to a
temporary folder (PYTHONPYCACHEPREFIX), and PYTHONDONTWRITEBYTECODE is dropped, which otherwise makes
every run compile every module of pypto_tui again (about 0.1 s of a `tile` run). `--no-cache` measures
that case instead.

Run: .venv/bin/python benchmarks/bench_oneshot.py [--pairs 7] [--imports] [--json] [--source DIR]
(`--source DIR`: the pypto_tui of another checkout, e.g. `git archive` of an earlier commit, run as
`python -m pypto_tui`.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "tile": ["tile", "--shape", "16,256,256", "--dtype", "fp32", "--reduce-dim", "1"],
    "tile --tile": ["tile", "--shape", "16,256,256", "--dtype", "fp32", "--reduce-dim", "1", "--tile", "1,16,256"],
    "loop": ["loop", "--shape", "67108864", "--tile", "8192"],
    "kb list --json": ["kb", "list", "--json"],
}
BASE = [sys.executable, "-c", "import numpy"]


ENV = dict(os.environ)


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s: user + system of the child, which a busy machine disturbs less)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, env=ENV)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ratio(cmd: list[str], pairs: int) -> dict[str, float]:
    """Medians of the command's and numpy's wall and CPU times, and of the per-pair ratios."""
    _timed(cmd), _timed(BASE)  # warm the file cache (and write the bytecode caches)
    a, b = [], []
    for _ in range(pairs):
        a.append(_timed(cmd))
        b.append(_timed(BASE))
    med = statistics.median
    return {"command_ms": med(x[0] for x in a) * 1e3, "numpy_ms": med(y[0] for y in b) * 1e3,
            "ratio": med(x[0] / y[0] for x, y in zip(a, b, strict=True)),
            "cpu_ratio": med(x[1] / max(y[1], 1e-3) for x, y in zip(a, b, strict=True))}


def top_imports(args: list[str], n: int = 12) -> list[tuple[str, float]]:
    """The slowest imports (cumulative ms) of `pypto-tui ARGS`, numpy's own left out."""
    code = f"import sys; from pypto_tui.cli import app; sys.argv = ['pypto-tui', *{args!r}]; app()"
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         env=ENV).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:"):].split("|")]
        if parts[1].isdigit():
            rows.append((parts[2], int(parts[1]) / 1000))
    rows = [r for r in rows if not r[0].lstrip().startswith("numpy")]
    return sorted(rows, key=lambda r: -r[1])[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--imports", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-cache", action="store_true", help="no bytecode caches: every run compiles pypto_tui")
    ap.add_argument("--source", type=Path, help="a folder holding another pypto_tui to measure")
    args = ap.parse_args()
    if args.source is not None:
        ENV["PYTHONPATH"] = str(args.source.resolve())
    with tempfile.TemporaryDirectory() as cache:
        if args.no_cache:
            ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            ENV["PYTHONPYCACHEPREFIX"] = cache
        return _measure(args)


def _measure(args: argparse.Namespace) -> int:
    exe = [shutil.which("pypto-tui") or str(Path(sys.executable).with_name("pypto-tui"))]
    if args.source is not None:
        exe = [sys.executable, "-m", "pypto_tui"]
    out = {}
    for label, argv in COMMANDS.items():
        r = ratio([*exe, *argv], args.pairs)
        out[label] = {k: round(v, 2) for k, v in r.items()}
        if not args.json:
            print(f"pypto-tui {label:16} {r['command_ms']:6.0f} ms, numpy {r['numpy_ms']:4.0f} ms: {r['ratio']:.2f}x "
                  f"wall, {r['cpu_ratio']:.2f}x CPU" + ("   (target <= 1.3x)" if label == "tile" else ""))
        if args.imports and not args.json:
            for name, ms in top_imports(argv):
                print(f"    {ms:7.1f} ms  {name}")
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
