"""Findings: what every check reports, always citing the knowledge-pack rule behind it.

A finding says *whose* limit it is (`authority`: the compiler's, PyPTO's documentation, or the
rule documents'), so a user can tell a hard compiler wall from a performance habit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

if TYPE_CHECKING:
    from pypto_tui.kb import KnowledgeBase

Level = Literal["error", "warn", "info", "ok"]
LEVEL_ORDER: dict[str, int] = {"ok": 0, "info": 1, "warn": 2, "error": 3}


class Finding(NamedTuple):
    """Immutable and cheap to build: the live tile check makes a dozen per keystroke."""

    rule: str
    level: Level
    message: str
    authority: str = "rule-docs"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "level": self.level, "message": self.message, "authority": self.authority}


def rule_finding(kb: KnowledgeBase, rule: str, message: str, level: Level | None = None) -> Finding:
    """A finding at the pack's severity for `rule` (unless a level is forced), with its authority:
    the pack, not the check, decides how loud a violation is."""
    r = kb.rule(rule)
    lvl: Level = level or (r.severity if r else "warn")  # type: ignore[assignment]
    return Finding(rule, lvl, message, r.authority if r else "rule-docs")


def worst(findings: Iterable[Finding]) -> Level:
    """The most severe level among findings ('ok' when there are none)."""
    best: Level = "ok"
    for f in findings:
        if LEVEL_ORDER[f.level] > LEVEL_ORDER[best]:
            best = f.level
    return best


def has_error(findings: Iterable[Finding]) -> bool:
    return any(f.level == "error" for f in findings)


F = TypeVar("F", bound=Callable[..., Any])


def cites(*rule_ids: str) -> Callable[[F], F]:
    """Mark a check with the rule ids it reports, so the catalogue test can trace rule -> code."""

    def mark(obj: F) -> F:
        obj.__cites__ = tuple(rule_ids)  # type: ignore[attr-defined]
        return obj

    return mark
