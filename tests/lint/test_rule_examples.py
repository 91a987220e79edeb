"""Tests generated from every rule's own VALID / INVALID examples (the Fixit pattern)."""

from __future__ import annotations

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import CHECKS, RULES, Invalid, LintRule, Valid, fix_source, format_finding, lint_source
from pypto_tui.lint.profile import lint_settings

KB = get_kb()
SETTINGS = lint_settings(KB)


def _valid_cases() -> list[object]:
    out = []
    for rule in RULES:
        for i, v in enumerate(rule.VALID):
            out.append(pytest.param(rule, v, id=f"{rule.CHECK}-VALID-{i}"))
    return out


def _invalid_cases() -> list[object]:
    out = []
    for rule in RULES:
        for i, inv in enumerate(rule.INVALID):
            out.append(pytest.param(rule, inv, id=f"{rule.CHECK}-INVALID-{i}"))
    return out


def _fixed_cases() -> list[object]:
    return [
        pytest.param(rule, inv, id=f"{rule.CHECK}-FIXED-{i}")
        for rule in RULES for i, inv in enumerate(rule.INVALID) if inv.fixed is not None
    ]


def _show(findings: list) -> str:
    return "\n".join(format_finding(f) for f in findings) or "(no findings)"


@pytest.mark.parametrize(("rule", "case"), _valid_cases())
def test_valid_example_has_no_finding(rule: type[LintRule], case: str | Valid) -> None:
    v = case if isinstance(case, Valid) else Valid(case)
    findings = lint_source(v.code, kb=KB, flavour=v.flavour, task_source=v.task, pypto=v.pypto, strict=v.strict)
    assert not [f for f in findings if f.check in (rule.CHECK, "lint.internal", "lint.parse")], _show(findings)


@pytest.mark.parametrize(("rule", "case"), _invalid_cases())
def test_invalid_example_has_exactly_the_expected_finding(rule: type[LintRule], case: Invalid) -> None:
    findings = lint_source(case.code, kb=KB, flavour=case.flavour, task_source=case.task, pypto=case.pypto,
                           strict=case.strict)
    assert not [f for f in findings if f.check in ("lint.internal", "lint.parse")], _show(findings)
    mine = [f for f in findings if f.check == rule.CHECK]
    assert len(mine) == 1, _show(findings)
    f = mine[0]
    assert f.line == case.line, _show(mine)
    if case.col is not None:
        assert f.col == case.col, _show(mine)
    assert f.rule == (case.rule or rule.RULE)
    assert f.rule in rule.__cites__  # type: ignore[attr-defined]
    if case.message is not None:
        assert case.message in f.message, f.message
    assert f.fixable == (case.fixed is not None)
    # the pack's severity, except for the documents' style rules (lint.toml [[style]])
    assert f.level == (case.level or SETTINGS.level(KB.rules[f.rule], bool(case.strict)))


@pytest.mark.parametrize(("rule", "case"), _fixed_cases())
def test_invalid_example_fixes_to_the_expected_source(rule: type[LintRule], case: Invalid) -> None:
    new, remaining = fix_source(case.code, KB, flavour=case.flavour, task_source=case.task, pypto=case.pypto,
                                strict=case.strict)
    assert new == case.fixed
    assert not [f for f in remaining if f.check == rule.CHECK], _show(remaining)
    again, _ = fix_source(new, KB, flavour=case.flavour, task_source=case.task, pypto=case.pypto, strict=case.strict)
    assert again == new


@pytest.mark.parametrize("rule", RULES, ids=[r.CHECK for r in RULES])
def test_rule_is_documented_and_cites_pack_rules(rule: type[LintRule]) -> None:
    assert rule.CHECK.startswith("lint.") and CHECKS[rule.CHECK] is rule
    assert rule.MESSAGE
    assert rule.VALID and rule.INVALID, "every rule carries valid and invalid examples"
    for rid in rule.__cites__:  # type: ignore[attr-defined]
        assert rid in KB.rules, f"{rule.CHECK} cites {rid}, which the default pack does not have"
    cited = {inv.rule or rule.RULE for inv in rule.INVALID}
    assert cited == set(rule.__cites__), "every cited rule id has an INVALID example"  # type: ignore[attr-defined]


def test_fixable_rules_are_the_operator_forms() -> None:
    assert {r.CHECK for r in RULES if r.FIXABLE} == {"lint.scalar_left", "lint.unary_minus"}


def _style_cases() -> list[object]:
    """The INVALID examples whose rule is one of the rule documents' style rules (lint.toml)."""
    return [p for p in _invalid_cases()
            if ((p.values[1].rule or p.values[0].RULE) in SETTINGS.style)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("rule", "case"), _style_cases())
def test_a_style_rule_is_a_warning_or_silent_unless_strict(rule: type[LintRule], case: Invalid) -> None:
    """The severity change of issue 12: what the compiler accepts is never an error by default."""
    rid = case.rule or rule.RULE
    style = SETTINGS.style[rid]
    findings = [f for f in lint_source(case.code, kb=KB, flavour=case.flavour, task_source=case.task,
                                       pypto=case.pypto, strict=False) if f.rule == rid]
    if style.level == "off" or case.strict:  # off by default, or a case only --strict reports
        assert findings == [], _show(findings)
    else:
        assert [f.level for f in findings] == [style.level], _show(findings)
    strict = [f for f in lint_source(case.code, kb=KB, flavour=case.flavour, task_source=case.task,
                                     pypto=case.pypto, strict=True) if f.rule == rid]
    assert [f.level for f in strict] == [style.strict], _show(strict)
