"""Issue 25's table: every constant bomb in `tests/robust/bombs/` through every command that reads a
task file, as a user would run it from a shell.

    .venv/bin/python benchmarks/hostile_table.py [--json OUT.json] [--limit-s 60]

A cell passes when the command ends by itself within the limit, with exit status 2, one line on
stderr that names the file and the line of the bomb, and no "internal error" or traceback. A folder
export is a batch: it writes the tasks it can, gives the bomb its row with the file and line as the
reason, and exits 1 (some task failed), so that is its pass. The
table prints the worst time per command. `tests/robust/test_constant_bombs.py` asserts the same for
one bomb per command (and every bomb through the reader); this measures the whole grid.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOMBS = ROOT / "tests" / "robust" / "bombs"
CLI = [sys.executable, "-m", "pypto_tui"]

# (label, argv after the task path); "{out}" is a fresh output folder
COMMANDS = (
    ("contract", ["contract", "{task}"]),
    ("contract --run", ["contract", "{task}", "--run", "--timeout", "5"]),
    ("tile", ["tile", "{task}"]),
    ("loop", ["loop", "{task}"]),
    ("scaffold", ["scaffold", "{task}", "-o", "{out}/kernel.py"]),
    ("export (folder)", ["export", "{folder}", "-o", "{out}"]),
    ("verify", ["verify", "{task}", "--timeout", "2"]),
    ("sim", ["sim", "{task}", "--timeout", "2"]),
)


def run_cell(argv: list[str], limit_s: float, batch: bool = False) -> dict[str, object]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    t0 = time.monotonic()
    try:
        proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=limit_s, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": limit_s, "ok": False, "line": f"still running at {limit_s:.0f} s"}
    took = time.monotonic() - t0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "note:" not in ln]
    first = lines[0] if lines else ""
    clean = "internal error" not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    if batch:
        row = next((ln for ln in proc.stdout.splitlines() if ".py" in ln and ", line " in ln), "")
        ok = clean and proc.returncode == 1 and not lines and bool(row)
        first = " ".join(row.replace("│", " ").split())
    else:
        ok = clean and proc.returncode == 2 and len(lines) == 1 and ", line " in first
    return {"exit": proc.returncode, "seconds": round(took, 2), "ok": ok, "line": first[:160]}


def measure(limit_s: float) -> list[dict[str, object]]:
    rows = []
    for bomb in sorted(BOMBS.glob("*.py")):
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            folder = Path(tmp) / "tasks"
            folder.mkdir()
            shutil.copy(bomb, folder / bomb.name)
            for label, template in COMMANDS:
                out = Path(tmp) / f"out-{len(rows)}"
                argv = [a.format(task=folder / bomb.name, folder=folder, out=out) for a in template]
                if label.startswith("scaffold"):
                    out.mkdir()
                rows.append({"bomb": bomb.stem, "command": label,
                             **run_cell(argv, limit_s, batch=label.startswith("export"))})
    return rows


def table(rows: list[dict[str, object]]) -> str:
    bombs = sorted({str(r["bomb"]) for r in rows})
    labels = [c for c, _ in COMMANDS]
    out = ["| bomb | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for b in bombs:
        cells = []
        for c in labels:
            r = next(r for r in rows if r["bomb"] == b and r["command"] == c)
            cells.append(f"{'exit ' + str(r['exit']) if r['exit'] is not None else 'hung'}, {r['seconds']} s"
                         + ("" if r["ok"] else " ✗"))
        out.append(f"| {b} | " + " | ".join(cells) + " |")
    good = sum(bool(r["ok"]) for r in rows)
    worst = max(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
    out.append(f"\n{good}/{len(rows)} cells refused with the bomb's file and line (exit 2; a folder export: its row,"
               f" exit 1); slowest {worst:.2f} s")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--limit-s", type=float, default=60.0)
    args = ap.parse_args()
    rows = measure(args.limit_s)
    print(table(rows))
    for r in rows:
        if not r["ok"]:
            print(f"NOT REFUSED {r['bomb']} / {r['command']}: exit {r['exit']}: {r['line']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
