"""Errors and warnings of `pypto-tui lint` by rule over a corpus of PyPTO's own kernel files.

    .venv/bin/python benchmarks/lint_corpus.py --src /work/pypto-src [--split dev|heldout|all]
        [--pypto 0.2.1|head|auto|0.2.0] [--json OUT.json] [--findings OUT.txt] [--compare BEFORE.json]
        [--judged benchmarks/lint_judged_pypto.csv] [--per-100-lines models]

The corpus is read where it lies (PyPTO's code is never copied into this project): every `*.py`
under the checkout's `models/`, `python/tests/` and `examples/` that declares a jit kernel. A file
belongs to the held-out part when the first hex digit of the SHA-1 of its path (relative to the
checkout) is 0, 1 or 2 (about 3 files in 16); the split never changes with the lint, so the rules
are tuned on `dev` and `heldout` shows what tuning did not see.

It only calls `lint_paths`, so it runs against an older pypto-tui too (put that tree first on
PYTHONPATH); `--pypto auto` needs a lint that has it. `--findings` writes every finding, one line
each, for reading them one by one (how the false ones were counted). `--compare` prints the
before/after table by rule and level next to a JSON this script wrote earlier.

`--judged` reads a judged sample (CSV: file, line, rule, verdict right|wrong, reason; `#` lines are
comments) of findings on the same checkout and prints each rule's precision: of the judged
findings the lint still reports as a warning or an error, how many are right, next to the
sample's own figure (every judged finding) and the findings the sample has not judged yet. A
change to a rule shows its effect there; a rule whose default reports are right less than 4 times
in 5 is due for narrowing. `--per-100-lines PART` prints the warnings and errors per 100 lines of
the kernel files under that part of the checkout (e.g. `models`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import time
from collections import Counter
from pathlib import Path

PARTS = ("models", "python/tests", "examples")
_JIT = re.compile(r"^\s*@\s*(?:\w+\.)*jit\b", re.MULTILINE)
HELD_OUT_DIGITS = "012"


def corpus(src: Path, split: str) -> list[Path]:
    """The kernel files of the checkout at `src` in `split` (dev, heldout or all), sorted."""
    out = []
    for part in PARTS:
        for f in sorted((src / part).rglob("*.py")):
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if not _JIT.search(text):
                continue
            rel = f.relative_to(src).as_posix()
            held = hashlib.sha1(rel.encode()).hexdigest()[0] in HELD_OUT_DIGITS
            if split == "all" or (split == "heldout") == held:
                out.append(f)
    return out


def read_judged(path: Path) -> list[dict[str, str]]:
    """The judged sample: one dict per row (file, line, rule, verdict, reason)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    rows = list(csv.DictReader(lines))
    for r in rows:
        if r["verdict"] not in ("right", "wrong"):
            raise SystemExit(f"{path}: verdict must be right or wrong, not {r['verdict']!r} ({r['file']}:{r['line']})")
    return rows


def precision_table(judged: list[dict[str, str]], reported: set[tuple[str, int, str]],
                    reported_by_rule: Counter[str]) -> list[str]:
    """Markdown rows: per rule, the sample's precision and the precision of what is still reported."""
    out = ["| rule | judged (right) | sample precision | still reported (right) | precision now | "
           "reported, not judged |", "|---|--:|--:|--:|--:|--:|"]
    rules = sorted({r["rule"] for r in judged})
    for rule in rules:
        rows = [r for r in judged if r["rule"] == rule]
        right = sum(r["verdict"] == "right" for r in rows)
        kept = [r for r in rows if (r["file"], int(r["line"]), rule) in reported]
        kept_right = sum(r["verdict"] == "right" for r in kept)
        now = f"{kept_right / len(kept):.0%}" if kept else "-"
        out.append(f"| `{rule}` | {len(rows)} ({right}) | {right / len(rows):.0%} | {len(kept)} ({kept_right}) | "
                   f"{now} | {reported_by_rule[rule] - len(kept)} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="a checkout of PyPTO's repository")
    ap.add_argument("--split", choices=("dev", "heldout", "all"), default="all")
    ap.add_argument("--pypto", help="the release to lint for (default: the lint's default)")
    ap.add_argument("--json", type=Path, help="write the counts here")
    ap.add_argument("--findings", type=Path, help="write every finding here, one per line")
    ap.add_argument("--compare", type=Path, help="a JSON of an earlier run: print before/after")
    ap.add_argument("--judged", type=Path, help="a judged sample (CSV): print precision per rule")
    ap.add_argument("--per-100-lines", metavar="PART", help="print findings per 100 lines of this part's files")
    args = ap.parse_args()

    from pypto_tui.kb import get_kb
    from pypto_tui.lint import format_finding, lint_paths

    files = corpus(args.src, args.split)
    extra = {"pypto": args.pypto} if args.pypto else {}
    kb = get_kb()
    start = time.perf_counter()
    findings = lint_paths(files, kb, None, **extra)
    took = time.perf_counter() - start
    counts = Counter(f"{f.level} {f.rule}" for f in findings)
    levels = Counter(f.level for f in findings)
    result = {"files": len(files), "split": args.split, "pypto": args.pypto or "default",
              "errors": levels["error"], "warnings": levels["warn"], "infos": levels["info"],
              "by_rule": dict(sorted(counts.items())), "seconds": round(took, 1)}
    if args.findings:
        base = str(args.src.resolve()) + "/"
        args.findings.write_text("".join(format_finding(f).replace(base, "") + "\n" for f in findings),
                                 encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        keys = sorted(set(before["by_rule"]) | set(counts), key=lambda k: (k.split()[0] != "error", k))
        print("| level | rule | before | after |\n|---|---|--:|--:|")
        for k in keys:
            level, rule = k.split(" ", 1)
            print(f"| {level} | `{rule}` | {before['by_rule'].get(k, 0)} | {counts.get(k, 0)} |")
        print(f"| | **errors / warnings** | {before['errors']} / {before['warnings']} | "
              f"{levels['error']} / {levels['warn']} |")
    else:
        for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{n:4d}  {k}")
    src = args.src.resolve()
    loud = [f for f in findings if f.level in ("warn", "error")]
    if args.judged:
        reported = {(Path(f.path).resolve().relative_to(src).as_posix(), f.line, f.rule) for f in loud}
        print("\n".join(precision_table(read_judged(args.judged), reported, Counter(f.rule for f in loud))))
    if args.per_100_lines:
        part = (src / args.per_100_lines).resolve()
        mine = [f for f in files if f.resolve().is_relative_to(part)]
        n_lines = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in mine)
        n = sum(1 for f in loud if Path(f.path).resolve().is_relative_to(part))
        print(f"{args.per_100_lines}: {n} warnings and errors in {len(mine)} kernel files, {n_lines} lines: "
              f"{100 * n / max(n_lines, 1):.2f} per 100 lines")
    print(f"{len(files)} files ({args.split}), pypto {result['pypto']}: {levels['error']} errors, "
          f"{levels['warn']} warnings, {levels['info']} infos in {took:.1f} s")


if __name__ == "__main__":
    main()
