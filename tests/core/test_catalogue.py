"""Every rule traces to code: each `enforced_by` (or `applied_by`) name resolves to an object that
cites the rule, and every finding the core emits comes out of a registered check or generator."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from pypto_tui.catalogue import APPLIER_NAMES, CHECK_NAMES, MODULES, module_of

CORE = Path(__file__).resolve().parents[2] / "pypto_tui"


def _registered(module: str, table: str) -> dict[str, object]:
    return dict(getattr(importlib.import_module(module), table, {}))


def test_catalogue_equals_the_modules_tables():
    checks: set[str] = set()
    appliers: set[str] = set()
    for prefix, module in MODULES.items():
        for table, found in (("CHECKS", checks), ("APPLIES", appliers)):
            names = set(_registered(module, table))
            assert all(n.startswith(prefix + ".") for n in names), module
            found |= names
    assert checks == set(CHECK_NAMES)
    assert appliers == set(APPLIER_NAMES)


def _object(name: str) -> object:
    table = "CHECKS" if name in CHECK_NAMES else "APPLIES"
    return _registered(module_of(name), table)[name]


def test_every_named_rule_is_cited_by_its_code(kb):
    for rule in kb.rules.values():
        for name in (*rule.enforced_by, *rule.applied_by):
            cites = getattr(_object(name), "__cites__", ())
            assert rule.id in cites, f"{name} does not cite {rule.id} (cites {cites})"


def test_every_check_and_generator_is_named_by_a_rule(kb):
    named = {n for r in kb.rules.values() for n in (*r.enforced_by, *r.applied_by)}
    assert set(CHECK_NAMES) | set(APPLIER_NAMES) <= named, sorted((set(CHECK_NAMES) | set(APPLIER_NAMES)) - named)


@pytest.mark.parametrize("prefix", sorted(MODULES))
def test_cited_ids_exist(kb, prefix):
    for table in ("CHECKS", "APPLIES"):
        for name, obj in _registered(MODULES[prefix], table).items():
            for rid in getattr(obj, "__cites__", ()):
                assert rid in kb.rules, f"{name} cites unknown rule {rid}"


def test_every_cited_rule_lists_its_check(kb):
    """The other direction: `kb list` shows every check and generator that cites a rule."""
    for module in MODULES.values():
        for table, attr in (("CHECKS", "enforced_by"), ("APPLIES", "applied_by")):
            for name, obj in _registered(module, table).items():
                for rid in getattr(obj, "__cites__", ()):
                    assert name in getattr(kb.rules[rid], attr), f"{rid} does not list {name} in {attr}"


# ------------------------------------------------------------------------------ findings come from checks
# the one place a finding is made from a rule id, and the examples harness that turns a refused input
# (an InputError) into the finding it stands for
FACTORIES = {"findings.rule_finding", "examples.findings_of"}


def _emitters() -> dict[str, set[str]]:
    """Per core module, the functions (qualified names) whose body builds a finding."""
    out: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE)
        if rel.parts[0] in ("cli", "screens", "lint", "knowledge"):
            continue  # the UI layers show findings; lint rules report through LintRule.report
        module = ".".join(("pypto_tui", *rel.with_suffix("").parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for call in ast.walk(fn):
                builds = (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                          and call.func.id in ("Finding", "rule_finding"))
                if builds and not any(isinstance(k, ast.keyword) and k.arg is None for k in call.keywords):
                    out.setdefault(module, set()).add(fn.name)  # Finding(**d) is a record read back
    return out


def test_every_finding_is_emitted_by_a_registered_check_or_generator():
    """No finding appears from code the catalogue cannot see: a function that builds findings is a
    registered check or generator, or a private helper (leading underscore) of its module."""
    registered: dict[str, set[str]] = {}
    for module in MODULES.values():
        for table in ("CHECKS", "APPLIES"):
            for obj in _registered(module, table).values():
                owner = getattr(obj, "__module__", None)
                fname = getattr(obj, "__name__", None) or getattr(obj, "__qualname__", None)
                if owner and fname:
                    registered.setdefault(owner, set()).add(fname.rsplit(".", 1)[-1])
    stray = []
    for module, fns in _emitters().items():
        for fn in fns:
            qual = f"{module.removeprefix('pypto_tui.')}.{fn}"
            if qual in FACTORIES or fn.startswith("_") or fn in registered.get(module, set()):
                continue
            stray.append(qual)
    assert not stray, f"findings built outside any registered check or generator: {sorted(stray)}"
