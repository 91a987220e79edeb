"""Count lint findings per rule and level over some files: the before/after figures of issue 12.

    python tests/lint/count_findings.py [--pypto 0.2.0] [--strict] [--flavour docs] FILE_OR_DIR...

Prints one line per (rule, level) and the totals. It only uses `lint_paths`, so it also runs
against an older pypto-tui (put its tree first on PYTHONPATH) that has no --pypto/--strict.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--pypto")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--flavour")
    args = ap.parse_args()

    from pypto_tui.kb import get_kb
    from pypto_tui.lint import lint_paths

    extra = {"pypto": args.pypto} if args.pypto else {}
    if args.strict:
        extra["strict"] = True  # type: ignore[assignment]
    findings = lint_paths(args.paths, get_kb(), args.flavour, **extra)
    by_rule = Counter((f.rule, f.level) for f in findings)
    files = {f.path for f in findings}
    for (rule, level), n in sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n:4d}  {level:5s}  {rule}")
    levels = Counter(f.level for f in findings)
    print(f"total {len(findings)} findings in {len(files)} file(s): "
          + ", ".join(f"{levels[lv]} {lv}" for lv in ("error", "warn", "info") if levels[lv]))


if __name__ == "__main__":
    main()
