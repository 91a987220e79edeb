"""The pattern registry: every module in this package that exports `PATTERNS` takes part.

Adding an operator family is adding one module here (plus its pack data: rules, strategies,
templates); nothing else in the code lists the patterns. `find` picks the pattern for a
contract: among those whose families include the contract's, one that names the op (or narrows
the family with `when`) wins over one that takes every op of the family; modules are read in
name order, so the choice is stable.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from pypto_tui.codegen.pattern import Pattern
from pypto_tui.contract.model import Contract


@cache
def registry() -> tuple[Pattern, ...]:
    out: list[Pattern] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out.extend(getattr(module, "PATTERNS", ()))
    return tuple(out)


def find(c: Contract) -> Pattern | None:
    """The pattern that scaffolds `c`, or None when no pattern covers its family and op."""
    matching = [p for p in registry() if p.matches(c)]
    specific = [p for p in matching if p.specific]
    found = specific or matching
    return found[0] if found else None


def by_id(pattern_id: str) -> Pattern | None:
    return next((p for p in registry() if p.id == pattern_id), None)


def reason_for(c: Contract) -> str:
    """Why no pattern scaffolds `c`, in words a user can act on."""
    if c.family == "unknown":
        why = "the operator was not recognised"
    else:
        fams = sorted({f for p in registry() for f in p.families})
        ops = sorted({o for p in registry() if c.family in p.families for o in p.ops})
        why = (f"no pattern scaffolds {c.family} / {c.op}"
               + (f" (this family's patterns take {', '.join(ops)})" if ops else
                  f" (patterns exist for {', '.join(fams)})"))
    return f"{why} ({c.reason})" if c.reason else why


class _Registry:
    """The check behind the catalogue's `codegen.patterns`: every registered pattern, citing the
    rules the patterns implement (so `kb list` traces a family's rules to code with no list here)."""

    @property
    def __cites__(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for p in registry() for r in p.rules))

    def __repr__(self) -> str:
        return f"<{len(registry())} patterns: {', '.join(p.id for p in registry())}>"


PATTERN_REGISTRY = _Registry()
