"""A check's own proof: inputs it must pass and inputs it must flag, kept next to the check.

The lint rules carry VALID/INVALID examples; the core checks (contract, dims, tiles, loops) carry
the same through `@examples(valid=..., invalid=...)`. One generated test feeds every registered
check its examples, and a second switches each check off in turn and expects that test to fail:
a check that nobody could notice missing does not exist.

An example is the check's keyword arguments. Values the data cannot hold directly are markers the
test resolves: `Task("softmax_rows", {...edits})` is the contract of a bundled example task (with
the edits applied), `StrategyRef("elementwise-1d")` a rank strategy of the pack, `KB` the pack.
An invalid example expects a finding of `rule` (default: the check's first cited rule) at `level`
(default: the pack's severity for that rule), whose message contains `message` when given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pypto_tui.errors import InputError
from pypto_tui.findings import Finding

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Example:
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    rule: str | None = None
    level: str | None = None
    message: str | None = None
    needs: str | None = None  # "torch": run only where torch is installed


def ex(rule: str | None = None, level: str | None = None, message: str | None = None, needs: str | None = None,
       **kwargs: Any) -> Example:
    """`ex(prod=16385)`: an example in one line."""
    return Example(kwargs, rule, level, message, needs)


@dataclass(frozen=True)
class Task:
    """The contract of a bundled example task (knowledge/default/examples/<name>.py), or of a small
    task given as `source`, with `edits` applied."""

    name: str = ""
    edits: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True)
class StrategyRef:
    id: str


KB = object()  # marker: the knowledge pack under test


def examples(valid: Iterable[Example] = (), invalid: Iterable[Example] = ()) -> Callable[[F], F]:
    """Attach examples to a check (read by the generated test and by the catalogue's counts)."""

    def mark(obj: F) -> F:
        obj.__examples__ = (tuple(valid), tuple(invalid))  # type: ignore[attr-defined]
        return obj

    return mark


def examples_of(obj: Any) -> tuple[tuple[Example, ...], tuple[Example, ...]]:
    return getattr(obj, "__examples__", ((), ()))


def findings_of(call: Callable[[], Any], rule_on_error: str) -> list[Finding]:
    """A check's verdict as findings, whatever it returns: a finding, a list of them, None, a record
    with `.findings`, a tuple holding them; an input error counts as an error finding of its rule."""
    try:
        result = call()
    except InputError as exc:
        return [Finding(rule_on_error, "error", str(exc))]
    return list(_walk(result))


def _walk(value: Any) -> Iterable[Finding]:
    if isinstance(value, Finding):
        yield value
    elif value is None or isinstance(value, str | bool | int | float):
        return
    elif hasattr(value, "findings"):
        yield from _walk(tuple(value.findings))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk(v)
