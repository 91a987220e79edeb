"""Every registered check proves itself: its own valid and invalid examples, fed to it here.

The examples live next to the checks (`@examples` in tiles, loops, shapes, dims and the contract
checks; VALID / INVALID on the lint rules). An invalid example must produce the check's finding at
the pack's severity (or the level it names); a valid one must not. A check without examples fails
`test_every_check_has_examples`, and `test_switching_a_check_off_turns_its_examples_red` proves the
examples depend on the check: replaced by a stub that finds nothing, its examples test fails.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pypto_tui.catalogue import CHECK_NAMES, module_of
from pypto_tui.examples import KB, Example, StrategyRef, Task, examples_of, findings_of
from pypto_tui.findings import Finding
from pypto_tui.kb import KnowledgeBase, bundled_pack_dir

HAS_TORCH = importlib.util.find_spec("torch") is not None
CORE = sorted(n for n in CHECK_NAMES if not n.startswith("lint."))
LINT = sorted(n for n in CHECK_NAMES if n.startswith("lint."))


def check_object(name: str) -> Any:
    return importlib.import_module(module_of(name)).CHECKS[name]


def live_function(name: str) -> Callable[..., Any]:
    """The check as its module holds it now (so a monkeypatched stub is what runs)."""
    obj = check_object(name)
    return getattr(importlib.import_module(obj.__module__), obj.__name__)


def _resolve(value: Any, kb: KnowledgeBase, tmp: Path) -> Any:
    if value is KB:
        return kb
    if isinstance(value, StrategyRef):
        return next(s for s in kb.strategies if s.id == value.id)
    if isinstance(value, Task):
        from pypto_tui.contract.edits import apply_edits
        from pypto_tui.contract.extract import extract_contract

        if value.source:
            path = tmp / "task.py"
            path.write_text(value.source, encoding="utf-8")
            c = extract_contract(path, kb, strict=False)
        else:
            c = extract_contract(bundled_pack_dir() / "examples" / f"{value.name}.py", kb)
        return apply_edits(c, value.edits, kb) if value.edits else c
    return value


def run_example(name: str, example: Example, kb: KnowledgeBase, tmp: Path) -> list[Finding]:
    fn = live_function(name)
    kwargs = {k: _resolve(v, kb, tmp) for k, v in example.kwargs.items()}
    if "kb" in inspect.signature(check_object(name)).parameters and "kb" not in kwargs:
        kwargs["kb"] = kb
    cites = check_object(name).__cites__
    return findings_of(lambda: fn(**kwargs), cites[0])


def violations(name: str, kb: KnowledgeBase) -> set[tuple[str, str]]:
    """(rule, level) pairs the check's invalid examples expect: what a valid input must not produce."""
    obj = check_object(name)
    out = set()
    for e in examples_of(obj)[1]:
        rule = e.rule or obj.__cites__[0]
        r = kb.rule(rule)
        out.add((rule, e.level or (r.severity if r else "warn")))
    return out


def assert_valid(name: str, example: Example, kb: KnowledgeBase, tmp: Path) -> None:
    banned = violations(name, kb)
    found = run_example(name, example, kb, tmp)
    bad = [f for f in found if f.level == "error" or (f.rule, f.level) in banned]
    assert not bad, f"{name}: valid example {example.kwargs} was flagged: {bad}"


def assert_invalid(name: str, example: Example, kb: KnowledgeBase, tmp: Path) -> None:
    rule = example.rule or check_object(name).__cites__[0]
    r = kb.rule(rule)
    assert r is not None, f"{name}: example names unknown rule {rule}"
    level = example.level or r.severity
    found = run_example(name, example, kb, tmp)
    mine = [f for f in found if f.rule == rule and f.level == level
            and (example.message is None or example.message in f.message)]
    assert mine, (f"{name}: invalid example {example.kwargs} should give {rule} at {level}"
                  + (f" saying '{example.message}'" if example.message else "") + f"; got {found}")


def _cases() -> list[Any]:
    out = []
    for name in CORE:
        valid, invalid = examples_of(check_object(name))
        for kind, items in (("valid", valid), ("invalid", invalid)):
            for i, e in enumerate(items):
                marks = [pytest.mark.torch] if e.needs == "torch" else []
                out.append(pytest.param(name, kind, e, id=f"{name}-{kind}-{i}", marks=marks))
    return out


@pytest.mark.parametrize(("name", "kind", "example"), _cases())
def test_check_example(kb, tmp_path, name, kind, example):
    if example.needs == "torch" and not HAS_TORCH:
        pytest.skip("needs CPU torch")
    (assert_valid if kind == "valid" else assert_invalid)(name, example, kb, tmp_path)


@pytest.mark.parametrize("name", sorted(CHECK_NAMES))
def test_every_check_has_examples(name):
    """A check that carries no proof of what it catches and what it leaves alone does not pass."""
    if name.startswith("lint."):
        from pypto_tui.lint import CHECKS

        rule = CHECKS[name]
        valid, invalid = rule.VALID, rule.INVALID
    else:
        valid, invalid = examples_of(check_object(name))
    assert valid and invalid, f"{name} has {len(valid)} valid and {len(invalid)} invalid examples: give it both"


def _stub(*_: Any, **__: Any) -> None:
    return None


@pytest.mark.parametrize("name", CORE)
def test_switching_a_check_off_turns_its_examples_red(kb, tmp_path, monkeypatch, name):
    obj = check_object(name)
    _, invalid = examples_of(obj)
    runnable = [e for e in invalid if e.needs != "torch" or HAS_TORCH]
    if not runnable:
        pytest.skip("its examples need CPU torch")
    monkeypatch.setattr(importlib.import_module(obj.__module__), obj.__name__, _stub)
    for e in runnable:
        with pytest.raises(AssertionError):
            assert_invalid(name, e, kb, tmp_path)


@pytest.mark.parametrize("name", LINT)
def test_switching_a_lint_rule_off_turns_its_examples_red(kb, monkeypatch, name):
    from pypto_tui.lint import CHECKS, lint_source

    rule = CHECKS[name]
    monkeypatch.setattr(rule, "report", lambda self, *a, **k: None)
    for case in rule.INVALID:
        found = lint_source(case.code, kb=kb, flavour=case.flavour, task_source=case.task)
        assert not [f for f in found if f.check == name], f"{name} still reports with report() switched off"


def test_kb_list_counts_each_rules_examples(kb):
    """`kb list --json`: per rule, the examples of the checks that verify it, summed."""
    from pypto_tui.cli.proof import example_counts, rule_examples

    counts = example_counts()
    r = kb.rule("P4.tile-budget")
    assert r is not None and "tiles.prod_budget" in r.enforced_by
    want = sum(counts[n][1] for n in r.enforced_by)
    assert rule_examples(r) == {"valid": sum(counts[n][0] for n in r.enforced_by), "invalid": want} and want > 0
    from pypto_tui.lint import CHECKS

    for name in LINT:  # the light count (ast, no libcst) agrees with the imported rule classes
        assert counts[name] == (len(CHECKS[name].VALID), len(CHECKS[name].INVALID)), name


def test_every_rule_is_checked_applied_or_advice(kb):
    for r in kb.rules.values():
        assert r.enforced_by or r.applied_by or r.advice, r.id
