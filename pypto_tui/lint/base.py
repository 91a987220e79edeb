"""The lint-rule base: a libcst visitor that reports findings citing a rule of the knowledge pack.

Borrowed from Fixit's pattern (not its code, and without depending on it): every rule is a
`MatcherDecoratableVisitor` with class attributes naming its check, the pack rule it cites, and
its own VALID / INVALID examples. The tests are generated from those examples, so a rule cannot
exist without proof of what it catches and what it leaves alone.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ParentNodeProvider, PositionProvider

from pypto_tui.contract.model import Signature
from pypto_tui.kb import Flavour, KnowledgeBase, Limits

if TYPE_CHECKING:
    from pypto_tui.lint.analysis import KernelInfo, ModuleInfo
    from pypto_tui.lint.profile import LintSettings, VersionProfile


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One problem at one place. `col` is 1-based, like every other linter's."""

    path: str
    line: int
    col: int
    rule: str
    check: str
    level: str
    message: str
    fixable: bool = False
    authority: str = "rule-docs"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "line": self.line, "col": self.col, "rule": self.rule,
            "check": self.check, "level": self.level, "message": self.message,
            "fixable": self.fixable, "authority": self.authority,
        }


def example(code: str) -> str:
    """Normalise an inline example: dedent it and drop the leading newline, so line 1 is code."""
    return textwrap.dedent(code).lstrip("\n")


@dataclass(frozen=True)
class Valid:
    """A VALID example that needs more than code: a task file (init_signature), a flavour, a
    release (`pypto`) or strict mode."""

    code: str
    task: str | None = None
    flavour: str | None = None
    pypto: str | None = None
    strict: bool | None = None


@dataclass(frozen=True)
class Invalid:
    """An INVALID example: exactly one finding of the rule's check at `line` (and `col` if given).

    `fixed` is the whole source expected after `fix_source`; `rule` the cited id when the check
    cites several; `message` a fragment the message must contain.
    """

    code: str
    line: int
    col: int | None = None
    fixed: str | None = None
    rule: str | None = None
    message: str | None = None
    task: str | None = None
    flavour: str | None = None
    pypto: str | None = None
    strict: bool | None = None
    level: str | None = None
    """The level expected when it is not the pack's (a finding the rule reports `at_most` warn)."""


@dataclass
class LintContext:
    """What every rule may read: the pack, the flavour, the shared module facts, the task, and the
    release the kernel is checked against (its profile) with the lint's settings."""

    path: str
    kb: KnowledgeBase
    flavour: Flavour
    info: ModuleInfo
    task_init: Signature | None = None
    resolve: Callable[[type], Mapping[cst.CSTNode, Any]] | None = None
    """Resolves a metadata provider on first use (positions are only computed for findings)."""
    settings: LintSettings = None  # type: ignore[assignment]  # default: the pack's lint.toml
    release: VersionProfile = None  # type: ignore[assignment]  # default: the settings' profile
    strict: bool | None = None

    def __post_init__(self) -> None:
        from pypto_tui.lint.profile import lint_settings

        if self.settings is None:
            self.settings = lint_settings(self.kb)
        if self.release is None:
            self.release = self.settings.profile(None)
        if self.strict is None:
            self.strict = self.settings.strict

    def level_of(self, rule_id: str) -> str | None:
        """The level a finding of `rule_id` is reported at, None when it is not reported for this
        release or in this mode."""
        if not self.settings.applies(rule_id, self.release.pypto):
            return None
        level = self.settings.level(self.kb.rules.get(rule_id), bool(self.strict))
        return None if level == "off" else level


@dataclass
class Fix:
    node: cst.CSTNode
    replacement: cst.CSTNode


_UNSET: Any = object()
_HANDLERS: dict[type, tuple[dict[Any, tuple[Any, ...]], dict[Any, tuple[Any, ...]]]] = {}


def _handlers(cls: type) -> tuple[dict[Any, tuple[Any, ...]], dict[Any, tuple[Any, ...]]]:
    """The @m.visit / @m.leave handlers a rule class defines, as plain functions (cached)."""
    if cls not in _HANDLERS:
        from libcst.matchers._decorators import CONSTRUCTED_LEAVE_MATCHER_ATTR, CONSTRUCTED_VISIT_MATCHER_ATTR

        visit: dict[Any, tuple[Any, ...]] = {}
        leave: dict[Any, tuple[Any, ...]] = {}
        seen: set[str] = set()
        for klass in cls.__mro__:
            if klass is LintRule or not issubclass(klass, LintRule):
                continue
            for name, func in vars(klass).items():
                if name in seen or not callable(func):
                    continue
                seen.add(name)
                for mt in getattr(func, CONSTRUCTED_VISIT_MATCHER_ATTR, []):
                    visit[mt] = (*visit.get(mt, ()), func)
                for mt in getattr(func, CONSTRUCTED_LEAVE_MATCHER_ATTR, []):
                    leave[mt] = (*leave.get(mt, ()), func)
        _HANDLERS[cls] = (visit, leave)
    return _HANDLERS[cls]


class LintRule(m.MatcherDecoratableVisitor):
    """Base of every rule. Subclasses set CHECK, RULE, MESSAGE, VALID and INVALID."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    CHECK: ClassVar[str] = ""
    RULE: ClassVar[str] = ""
    ALSO_CITES: ClassVar[tuple[str, ...]] = ()
    MESSAGE: ClassVar[str] = ""
    VALID: ClassVar[Sequence[str | Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    OUT_PARAM_ONLY: ClassVar[bool] = False
    """Run only for flavours whose kernels take output parameters (pypto 0.2.0)."""
    NEEDS_TASK: ClassVar[bool] = False
    """Run only when a task file was given."""
    FIXABLE: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.RULE:
            cls.__cites__ = (cls.RULE, *(r for r in cls.ALSO_CITES if r != cls.RULE))  # type: ignore[attr-defined]
        cls.FIXABLE = any(inv.fixed is not None for inv in cls.INVALID)

    def __init__(self, ctx: LintContext) -> None:
        # MatcherDecoratableVisitor.__init__ scans dir(self) (hundreds of visit_* names) on every
        # instance; a file runs ~20 rules, so gather the decorated handlers once per class instead.
        cst.CSTVisitor.__init__(self)
        visit, leave = _handlers(type(self))
        self._extra_visit_funcs = {mt: tuple(f.__get__(self) for f in fs) for mt, fs in visit.items()}
        self._extra_leave_funcs = {mt: tuple(f.__get__(self) for f in fs) for mt, fs in leave.items()}
        self._matchers = {}  # no @call_if_inside gates: nothing to track
        self.ctx = ctx
        self.findings: list[LintFinding] = []
        self.fixes: list[Fix] = []

    # ------------------------------------------------------------------ conveniences
    @property
    def info(self) -> ModuleInfo:
        return self.ctx.info

    @property
    def limits(self) -> Limits:
        return self.ctx.kb.limits

    def kernel_of(self, node: cst.CSTNode) -> KernelInfo | None:
        """The jit kernel that contains `node`, if any."""
        return self.info.kernel_of(node)

    def model_new_module(self) -> bool:
        """The module defines a ModelNew (a KernelBench module), where the rule documents' advice is
        the advice; a library kernel (PyPTO's models) is not written for their harness."""
        found = getattr(self.info, "_pypto_lint_model_new", None)
        if found is None:
            found = any(isinstance(n, cst.ClassDef) and n.name.value == "ModelNew" for n in self.info.module.body)
            self.info._pypto_lint_model_new = found  # type: ignore[attr-defined]
        return found

    def docs_advice_applies(self) -> bool:
        """A rule documents' style rule reports by default in a KernelBench module, and with --strict
        anywhere (on PyPTO's own code it was right 0 times: benchmarks/lint_judged_pypto.csv)."""
        return bool(self.ctx.strict) or self.model_new_module()

    def get_metadata(self, key: Any, node: cst.CSTNode, default: Any = _UNSET) -> Any:
        """As libcst's, but a provider not resolved up front is resolved on first use."""
        if key not in self.metadata and self.ctx.resolve is not None:
            self.metadata = {**self.metadata, key: self.ctx.resolve(key)}
        if default is _UNSET:
            return super().get_metadata(key, node)
        return super().get_metadata(key, node, default)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        try:
            parent: cst.CSTNode | None = self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None
        return parent

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        replacement: cst.CSTNode | None = None,
        *,
        rule: str | None = None,
        at_most: str | None = None,
    ) -> None:
        """Record a finding at `node`; a `replacement` node makes it fixable by `fix_source`. In a
        helper function the message names the kernel that reaches it. `at_most="warn"` reports an
        error rule as a warning where the rule cannot be sure it applies; `at_most="info"` says what the
        rule could not check (a dtype without a whole byte width)."""
        rid = rule or self.RULE
        level = self.ctx.level_of(rid)
        if level is None or self.info.is_dead(node):
            return  # off for this release, or code the tracer never reaches
        if at_most == "warn" and level == "error":
            level = "warn"
        elif at_most == "info":
            level = "info"
        pos = self.get_metadata(PositionProvider, node).start
        k = self.info.kernel_of(node)
        text = (message or self.MESSAGE) + (k.where() if k is not None else "")
        self.findings.append(LintFinding(
            path=self.ctx.path, line=pos.line, col=pos.column + 1, rule=rid, check=self.CHECK,
            level=level, message=text, fixable=replacement is not None, authority=self.ctx.kb.authority_of(rid),
        ))
        if replacement is not None:
            self.fixes.append(Fix(node, replacement))


def _node_types(matcher: Any) -> tuple[type, ...]:
    """The libcst node classes a matcher can match (`m.If() | m.IfExp()` -> (If, IfExp))."""
    options = getattr(matcher, "options", None)
    if options is not None:
        return tuple(t for opt in options for t in _node_types(opt))
    node_type = getattr(cst, type(matcher).__name__, None)
    return (node_type,) if isinstance(node_type, type) else ()


class _Batch(cst.CSTVisitor):
    """One traversal for all rules: each node goes to the handlers whose matcher fits it."""

    def __init__(self, rules: list[LintRule]) -> None:
        super().__init__()
        self.errors: dict[LintRule, Exception] = {}
        self.table: dict[type, list[tuple[LintRule, Any, Any]]] = {}
        for rule in rules:
            visit, _leave = _handlers(type(rule))
            for mt, funcs in visit.items():
                for t in _node_types(mt):
                    for f in funcs:
                        self.table.setdefault(t, []).append((rule, mt, f))

    def on_visit(self, node: cst.CSTNode) -> bool:
        for rule, mt, func in self.table.get(type(node), ()):
            if rule in self.errors or not m.matches(node, mt):
                continue
            try:
                func(rule, node)
            except Exception as exc:
                self.errors[rule] = exc
        return True


def run_batched(wrapper: Any, rules: list[LintRule]) -> dict[LintRule, Exception]:
    """Run `rules` over the wrapper's module in one pass; returns the rules that crashed.

    Each rule stays an ordinary visitor (`wrapper.visit(rule)` works too); batching only saves
    the per-rule traversal, which dominates on small files. Rules use @m.visit handlers only;
    their metadata comes lazily from `ctx.resolve` (see `LintRule.get_metadata`).
    """
    batch = _Batch(rules)
    wrapper.module.visit(batch)
    return batch.errors
