"""Generated modules before and after a change: write every task's module to a folder, or compare two.

    python benchmarks/module_snapshot.py write OUT_DIR TASK_DIR [TASK_DIR ...]
    python benchmarks/module_snapshot.py compare OLD_DIR NEW_DIR

`write` runs the scaffold path (`export.scaffold_task`, no file written by it) on every task file of
the folders and stores `<folder>__<task>.py` (the module) or `<folder>__<task>.refused` (the reason)
in OUT_DIR, with `index.json` holding the status and the seconds per task. `compare` lists every
task whose module or refusal differs, and the counts: what a refactoring of the pipeline must keep
byte-identical (or explain).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write(out: Path, folders: list[Path]) -> int:
    from pypto_tui.export import scaffold_task, task_files
    from pypto_tui.kb import get_kb

    kb = get_kb(None)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict[str, object]] = {}
    for folder in folders:
        for task in task_files(folder):
            name = f"{folder.name}__{task.stem}"
            t0 = time.perf_counter()
            try:
                r = scaffold_task(task, kb)
                status, text = r.status, (r.kernel.source if r.status == "ok" else r.reason)
            except Exception as exc:  # a crash is a result to compare too
                status, text = "error", f"{type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - t0
            suffix = ".py" if status == "ok" else ".refused"
            (out / f"{name}{suffix}").write_text(text, encoding="utf-8")
            index[name] = {"status": status, "seconds": round(seconds, 3)}
            print(f"{status:12} {seconds:7.2f}s {name}", flush=True)
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    ok = sum(1 for v in index.values() if v["status"] == "ok")
    print(f"{ok} of {len(index)} tasks get a module", flush=True)
    return 0


def compare(old: Path, new: Path, show: int) -> int:
    a = json.loads((old / "index.json").read_text())
    b = json.loads((new / "index.json").read_text())
    same = changed = 0
    for name in sorted(set(a) | set(b)):
        sa, sb = a.get(name, {}).get("status"), b.get(name, {}).get("status")
        fa = old / f"{name}{'.py' if sa == 'ok' else '.refused'}"
        fb = new / f"{name}{'.py' if sb == 'ok' else '.refused'}"
        ta = fa.read_text() if fa.exists() else ""
        tb = fb.read_text() if fb.exists() else ""
        if sa == sb and ta == tb:
            same += 1
            continue
        changed += 1
        print(f"DIFF {name}: {sa} -> {sb}")
        if show:
            for line in list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), lineterm="", n=1))[:show]:
                print("   ", line)
    print(f"{same} identical, {changed} differ")
    return 1 if changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out", type=Path)
    w.add_argument("folders", type=Path, nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--show", type=int, default=12, help="diff lines shown per task (0: none)")
    args = ap.parse_args()
    return write(args.out, args.folders) if args.cmd == "write" else compare(args.old, args.new, args.show)


if __name__ == "__main__":
    raise SystemExit(main())
