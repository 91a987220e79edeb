"""Nothing a user reads names the team's issues: the pack's texts (rules, sources, notes) and the
messages, docstrings and comments of the package and the app say what a thing is, not which issue asked
for it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def test_no_shipped_file_names_an_issue() -> None:
    shipped = [p for folder in ("knowledge", "pypto_tui", "screens") for p in (ROOT / folder).rglob("*")
               if p.is_file() and p.suffix in {".py", ".toml", ".tmpl", ".tcss", ".md"}]
    assert len(shipped) > 100
    found = [f"{p.relative_to(ROOT)}:{n}" for p in shipped
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ISSUE.search(line)]
    assert found == []
