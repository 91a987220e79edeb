"""PyPTO lint: libcst rules for kernel modules, each citing a rule id of the knowledge pack.

Pure core (no textual/typer/rich). Public API:

* `lint_source(source, path, kb, flavour, task_source)` -> findings
* `lint_paths(paths, kb, flavour, task_source)` -> findings
* `fix_source(source, kb)` -> (new source, remaining findings)
* `format_finding(f)` -> "file:line:col RULE-ID message"
* `RULES` (every rule class) and `CHECKS` ({check name: rule class}, each with `__cites__`)
"""

from __future__ import annotations

from pypto_tui.lint.base import Invalid, LintFinding, LintRule, Valid
from pypto_tui.lint.engine import (
    CHECKS,
    RULES,
    fix_source,
    format_finding,
    lint_paths,
    lint_source,
    task_init_signature,
)

__all__ = [
    "CHECKS", "RULES", "Invalid", "LintFinding", "LintRule", "Valid", "fix_source", "format_finding",
    "lint_paths", "lint_source", "task_init_signature",
]
