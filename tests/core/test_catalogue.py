"""Every rule traces to code: each `enforced_by` name resolves to an object that cites the rule."""

from __future__ import annotations

import importlib

import pytest

from pypto_tui.catalogue import CHECK_NAMES, MODULES, module_of


def _checks_of(module: str) -> dict[str, object]:
    return dict(importlib.import_module(module).CHECKS)


def test_catalogue_equals_the_modules_checks():
    found: set[str] = set()
    for prefix, module in MODULES.items():
        names = set(_checks_of(module))
        assert all(n.startswith(prefix + ".") for n in names), module
        found |= names
    assert found == set(CHECK_NAMES)


def test_every_enforced_rule_is_cited_by_its_check(kb):
    for rule in kb.rules.values():
        for name in rule.enforced_by:
            obj = _checks_of(module_of(name))[name]
            cites = getattr(obj, "__cites__", ())
            assert rule.id in cites, f"{name} does not cite {rule.id} (cites {cites})"


def test_every_check_is_named_by_a_rule(kb):
    named = {n for r in kb.rules.values() for n in r.enforced_by}
    assert set(CHECK_NAMES) <= named, sorted(set(CHECK_NAMES) - named)


@pytest.mark.parametrize("prefix", sorted(MODULES))
def test_cited_ids_exist(kb, prefix):
    for name, obj in _checks_of(MODULES[prefix]).items():
        for rid in getattr(obj, "__cites__", ()):
            assert rid in kb.rules, f"{name} cites unknown rule {rid}"


def test_every_cited_rule_lists_its_check(kb):
    """The other direction: `kb list` shows every check that cites a rule."""
    for module in MODULES.values():
        for name, obj in _checks_of(module).items():
            for rid in getattr(obj, "__cites__", ()):
                assert name in kb.rules[rid].enforced_by, f"{rid} does not list {name} in enforced_by"
