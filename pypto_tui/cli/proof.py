"""How well each rule is proven: the checks that verify it and how many examples each carries.

`kb list` and `kb show` report it next to every rule, so a reader sees at a glance which rules
are backed by checks that prove themselves (valid and invalid examples, run by the tests) and
which are only applied by a generator or are advice. This must stay light (the one-shot `kb`
command imports it): the core checks' examples are read from their `@examples` marks, the lint
rules' from their source with the standard library's `ast`, so libcst is never imported.

It lives with the CLI because it loads every check's module by name (`catalogue.module_of`), the
compiler layer's (`pypto_tui.sim`) included: only the top layer may import them all.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

from pypto_tui.catalogue import CHECK_NAMES, module_of
from pypto_tui.examples import examples_of
from pypto_tui.kb import Rule

LINT_RULES = Path(__file__).resolve().parents[1] / "lint" / "rules"


@cache
def example_counts() -> dict[str, tuple[int, int]]:
    """(valid, invalid) examples per check name."""
    out: dict[str, tuple[int, int]] = dict(_lint_counts())
    for name in CHECK_NAMES:
        if name in out or name.startswith("lint."):
            continue
        obj = importlib.import_module(module_of(name)).CHECKS.get(name)
        valid, invalid = examples_of(obj)
        out[name] = (len(valid), len(invalid))
    return out


def rule_examples(rule: Rule) -> dict[str, int]:
    """The examples of every check that verifies `rule`, summed."""
    counts = example_counts()
    return {"valid": sum(counts.get(n, (0, 0))[0] for n in rule.enforced_by),
            "invalid": sum(counts.get(n, (0, 0))[1] for n in rule.enforced_by)}


def _lint_counts() -> dict[str, tuple[int, int]]:
    """Each lint rule class's CHECK and the lengths of its VALID / INVALID tuples, read as source."""
    out: dict[str, tuple[int, int]] = {}
    for path in sorted(LINT_RULES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            fields: dict[str, ast.expr] = {}
            for stmt in cls.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    fields[stmt.targets[0].id] = stmt.value
            check = fields.get("CHECK")
            if isinstance(check, ast.Constant) and isinstance(check.value, str):
                out[check.value] = (_length(fields.get("VALID")), _length(fields.get("INVALID")))
    return out


def _length(node: ast.expr | None) -> int:
    return len(node.elts) if isinstance(node, ast.Tuple | ast.List) else 0
