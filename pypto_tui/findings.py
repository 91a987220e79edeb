"""Findings: what every check reports, always citing the knowledge-pack rule behind it.

A finding says *whose* limit it is (`authority`: the compiler's, PyPTO's documentation, or the
rule documents'), so a user can tell a hard compiler wall from a performance habit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple, TypeVar

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
