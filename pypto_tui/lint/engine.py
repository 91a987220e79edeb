"""Run the lint rules over sources and files, apply the mechanical fixes, format findings.

A file that does not parse yields one `lint.parse` finding, never a traceback; a rule that
crashes on odd code yields one `lint.internal` finding and the other rules still run. Findings
can be silenced where a deviation is deliberate (the documents' BatchNorm loops over channels)
with a trailing or preceding comment: `# pypto-lint: ignore` or
`# pypto-lint: ignore[lint.loop_axis, P6.outermost-axis]`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from pypto_tui.contract.model import Signature
from pypto_tui.contract.reader import read_signature
from pypto_tui.errors import InputError
from pypto_tui.fileio import read_text
from pypto_tui.kb import KnowledgeBase, get_kb
from pypto_tui.lint.analysis import ModuleInfo, fast_children, tree_of
from pypto_tui.lint.base import Fix, LintContext, LintFinding, LintRule, run_batched
from pypto_tui.lint.expected import as_expected
from pypto_tui.lint.profile import LintSettings, VersionProfile, lint_settings, release_key
from pypto_tui.lint.release import AUTO, infer_release
from pypto_tui.lint.rules import ALL_RULES
from pypto_tui.source_bounds import MAX_KERNEL_BYTES, MAX_KERNEL_NODES, SourceTooComplex, check_source

RULES: tuple[type[LintRule], ...] = ALL_RULES
CHECKS: dict[str, type[LintRule]] = {r.CHECK: r for r in RULES}

PARSE_CHECK, PARSE_RULE = "lint.parse", "syntax-error"
INTERNAL_CHECK, INTERNAL_RULE = "lint.internal", "internal-error"
IO_CHECK, IO_RULE = "lint.io", "io-error"
MAX_FIX_PASSES = 8

_IGNORE = re.compile(r"#\s*pypto-lint:\s*ignore(?:\[([^\]]*)\])?")


@dataclass
class _Run:
    findings: list[LintFinding]
    fixes: list[Fix] = field(default_factory=list)
    module: cst.Module | None = None
    release: str = ""
    """The release the file was linted for, and why when it was inferred (`--pypto auto`)."""
    why: str = ""
    kernels: int = 0
    """How many jit kernels the file defines (0: nothing was checked against kernel rules)."""


@dataclass(frozen=True)
class FileFacts:
    """What the lint learnt about one file besides its findings."""

    release: str
    why: str
    kernels: int


def format_finding(f: LintFinding) -> str:
    """`file:line:col RULE-ID message`, the line every linter prints."""
    return f"{f.path}:{f.line}:{f.col} {f.rule} {f.message}"


def task_init_signature(task_source: str) -> Signature:
    """`Model.__init__`'s parameters from a task file's source, read by the contract's (bounded) reader."""
    return read_signature(task_source)


def lint_source(
    source: str,
    path: str = "<string>",
    kb: KnowledgeBase | None = None,
    flavour: str | None = None,
    task_source: str | None = None,
    *,
    checks: Iterable[str] | None = None,
    task_signature: Signature | None = None,
    pypto: str | None = None,
    strict: bool | None = None,
) -> list[LintFinding]:
    """Every finding in `source`, sorted by position. `flavour` defaults to the pack's default;
    `pypto` (the release; "auto": inferred from what the source uses) to the installed pypto's, else the
    pack's; `strict` to the pack's. The task's
    Model signature comes from its source, or already read (`task_signature`: the contract holds it,
    so the app does not read the task file again)."""
    return _run(source, path, kb, flavour, task_source, checks, task_init=task_signature, pypto=pypto,
                strict=strict).findings


def lint_paths(
    paths: Iterable[str | Path],
    kb: KnowledgeBase | None = None,
    flavour: str | None = None,
    task_source: str | None = None,
    *,
    checks: Iterable[str] | None = None,
    pypto: str | None = None,
    strict: bool | None = None,
    facts: dict[str, FileFacts] | None = None,
) -> list[LintFinding]:
    """Lint files (folders are searched for *.py, in sorted order). With `pypto="auto"` each file's
    release is inferred from what it uses; `facts`, when given, receives each linted file's release,
    why it was chosen and its number of jit kernels."""
    kb = kb or get_kb()
    task_init = task_init_signature(task_source) if task_source is not None else None
    out: list[LintFinding] = []
    for file in expand_paths(paths):
        try:
            text = read_text(file, "kernel module", MAX_KERNEL_BYTES)
        except InputError as exc:  # a FIFO, a device, too large, not UTF-8, unreadable: one finding
            out.append(LintFinding(str(file), 1, 1, IO_RULE, IO_CHECK, "error", f"cannot read the file: {exc}"))
            continue
        run = _run(text, str(file), kb, flavour, None, checks, task_init=task_init, pypto=pypto, strict=strict)
        out.extend(run.findings)
        if facts is not None and run.release:
            facts[str(file)] = FileFacts(run.release, run.why or f"pypto {run.release}", run.kernels)
    return out


def fix_source(
    source: str,
    kb: KnowledgeBase | None = None,
    *,
    path: str = "<string>",
    flavour: str | None = None,
    task_source: str | None = None,
    pypto: str | None = None,
    strict: bool | None = None,
) -> tuple[str, list[LintFinding]]:
    """Apply the mechanical fixes (scalar-left forms, unary minus) until none is left.

    Returns the new source and the findings that remain in it. Fixes are applied innermost
    first, one layer per pass, so a fix never rebuilds a node from a stale child.
    """
    kb = kb or get_kb()
    task_init = task_init_signature(task_source) if task_source is not None else None
    current = source
    run = _run(current, path, kb, flavour, None, None, task_init=task_init, pypto=pypto, strict=strict)
    for _ in range(MAX_FIX_PASSES):
        if not run.fixes or run.module is None:
            break
        new_module = run.module.visit(_Apply(run.fixes))
        new = new_module.code
        if new == current:
            break
        after = _run(new, path, kb, flavour, None, None, task_init=task_init, pypto=pypto, strict=strict)
        if after.module is None:  # a fix must never break the file: keep the last good source
            break
        current, run = new, after
    return current, run.findings


# --------------------------------------------------------------------------------- internals
def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """The files to lint: folders are searched for *.py (sorted). Every *.py entry that is not a
    folder is kept, so a FIFO or a dangling link is reported as unreadable, never skipped as clean."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(q for q in path.rglob("*.py") if not q.is_dir()))
        else:
            out.append(path)
    return out


def _first_line(msg: str) -> str:
    return msg.strip().splitlines()[0] if msg.strip() else "syntax error"


def _parse_error(source: str, path: str, exc: cst.ParserSyntaxError) -> LintFinding:
    line, col, msg = exc.raw_line, exc.raw_column + 1, _first_line(exc.message)
    try:
        ast.parse(source)
    except SyntaxError as err:  # Python's own message is the one users know
        line, col, msg = err.lineno or line, err.offset or col, err.msg
    except (ValueError, RecursionError):
        pass
    return LintFinding(path, line, col, PARSE_RULE, PARSE_CHECK, "error", f"syntax error: {msg}")


def _selected(checks: Iterable[str] | None) -> list[type[LintRule]]:
    if checks is None:
        return list(RULES)
    wanted = set(checks)
    unknown = wanted - set(CHECKS)
    if unknown:
        raise InputError(f"unknown check(s) {', '.join(sorted(unknown))}: use one of {', '.join(CHECKS)}")
    return [r for r in RULES if r.CHECK in wanted]


def _run(
    source: str,
    path: str,
    kb: KnowledgeBase | None,
    flavour: str | None,
    task_source: str | None,
    checks: Iterable[str] | None,
    *,
    task_init: Signature | None = None,
    pypto: str | None = None,
    strict: bool | None = None,
) -> _Run:
    kb = kb or get_kb()
    flav = kb.flavour(flavour)
    settings = lint_settings(kb)
    auto = pypto == AUTO
    release = settings.profile(None if auto else pypto)
    if task_source is not None and task_init is None:
        task_init = task_init_signature(task_source)
    rules = _selected(checks)
    try:
        invalid = check_source(source, path, MAX_KERNEL_BYTES, MAX_KERNEL_NODES)
    except SourceTooComplex as exc:
        return _Run([LintFinding(path, 1, 1, PARSE_RULE, PARSE_CHECK, "error", f"cannot lint: {exc}")])
    if invalid is not None:
        return _Run([LintFinding(path, invalid.lineno or 1, invalid.offset or 1, PARSE_RULE, PARSE_CHECK, "error",
                                 f"syntax error: {invalid.msg}")])
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return _Run([_parse_error(source, path, exc)])
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # freshly parsed: nobody else holds it
    tree = tree_of(wrapper.module)
    parents = tree.parents
    try:
        info = ModuleInfo(wrapper.module, tree)
    except Exception as err:
        return _Run([LintFinding(path, 1, 1, INTERNAL_RULE, INTERNAL_CHECK, "info",
                                 f"could not analyse this file, so nothing was checked: {type(err).__name__}: {err}")])
    why = ""
    if auto:
        inferred = infer_release(info, settings)
        release, why = inferred.profile, inferred.why

    def resolve(provider: type) -> Mapping[cst.CSTNode, Any]:
        return parents if provider is ParentNodeProvider else wrapper.resolve(provider)

    ctx = LintContext(path=path, kb=kb, flavour=flav, info=info, task_init=task_init, resolve=resolve,
                      settings=settings, release=release, strict=strict)
    findings: list[LintFinding] = []
    fixes: list[Fix] = []
    lines = source.splitlines()
    active = [
        rule_cls(ctx) for rule_cls in rules
        if not (rule_cls.OUT_PARAM_ONLY and not flav.out_param) and not (rule_cls.NEEDS_TASK and task_init is None)
    ]
    with fast_children(info.kids):
        crashed = run_batched(wrapper, active)
    for rule in active:
        if rule in crashed:
            crash = crashed[rule]
            # the lint's own failure says nothing about the kernel: never an error (nor a warning)
            findings.append(LintFinding(path, 1, 1, INTERNAL_RULE, INTERNAL_CHECK, "info",
                                        f"{rule.CHECK} failed on this file, so it was not checked: "
                                        f"{type(crash).__name__}: {crash}"))
            continue
        for f, fix in _pair(rule):
            if f.rule not in kb.rules or _ignored(lines, f):
                continue  # the pack decides which rules exist; a comment may silence one
            findings.append(f)
            if fix is not None:
                fixes.append(fix)
    findings.sort(key=lambda f: (f.line, f.col, f.check, f.rule, f.message))
    findings, lowered = as_expected(findings, source)
    newer = _newer_for([f for i, f in enumerate(findings) if i not in lowered], settings, release) if auto else None
    if newer is not None:
        # the module writes what this release refuses and the next accepts (builtin min() of a
        # symbolic value, a loop without cond...): that is what it is written for, as a newer name
        # would say; the user can still lint it for the older release with --pypto
        prefix = _REFUSED_BY[release.pypto]
        lines_of: dict[str, list[int]] = {}
        for f in findings:
            if f.rule.startswith(prefix) and not settings.applies(f.rule, newer.pypto):
                lines_of.setdefault(f.rule, []).append(f.line)
        used = [f"{rule} (line{'s' if len(ls) > 1 else ''} {', '.join(map(str, sorted(set(ls))[:3]))}"
                f"{', ...' if len(set(ls)) > 3 else ''})" for rule, ls in sorted(lines_of.items())]
        rerun = _run(source, path, kb, flavour, task_source, checks, task_init=task_init, pypto=newer.pypto,
                     strict=strict)
        rerun.why = (f"pypto {newer.pypto}: it writes {'; '.join(used)}, which {release.pypto} refuses and "
                     f"{newer.pypto} accepts (--pypto {release.pypto} checks it for {release.pypto})")
        return rerun
    return _Run(findings, fixes, wrapper.module, release.pypto, why, len(info.kernels))


# per release, the id prefix of the rules for constructs it refuses and the next release accepts
# (V020.*: measured with pypto 0.2.0)
_REFUSED_BY = {"0.2.0": "V020."}


def _newer_for(findings: list[LintFinding], settings: LintSettings, release: VersionProfile) -> VersionProfile | None:
    """The next release after `release` when the module writes constructs `release` refuses, else None."""
    prefix = _REFUSED_BY.get(release.pypto)
    later = sorted((p for p in settings.profiles.values() if release_key(p.pypto) > release_key(release.pypto)),
                   key=lambda p: release_key(p.pypto))
    if prefix is None or not later:
        return None
    # only what the next release accepts moves the module to it: a rule that holds for both (a
    # `return` in a kernel: V020.out-param) would be reported again by the release it was moved to
    nxt = later[0]
    if any(f.rule.startswith(prefix) and not settings.applies(f.rule, nxt.pypto) for f in findings):
        return nxt
    return None


def _pair(rule: LintRule) -> list[tuple[LintFinding, Fix | None]]:
    fixes = iter(rule.fixes)
    return [(f, next(fixes) if f.fixable else None) for f in rule.findings]


def _ignored(lines: Sequence[str], f: LintFinding) -> bool:
    candidates = []
    if 0 < f.line <= len(lines):
        candidates.append(lines[f.line - 1])
    if 1 < f.line <= len(lines) + 1 and lines[f.line - 2].lstrip().startswith("#"):
        candidates.append(lines[f.line - 2])
    for text in candidates:
        mt = _IGNORE.search(text)
        if mt is None:
            continue
        if mt.group(1) is None:
            return True
        names = {n.strip() for n in mt.group(1).split(",") if n.strip()}
        if f.check in names or f.rule in names:
            return True
    return False


class _Apply(cst.CSTTransformer):
    """Swap each reported node for its replacement, but only where its children are unchanged."""

    def __init__(self, fixes: Sequence[Fix]) -> None:
        super().__init__()
        self._repl = {fx.node: fx.replacement for fx in fixes}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[no-untyped-def]
        repl = self._repl.get(original_node)
        if repl is not None and updated_node.deep_equals(original_node):
            return repl
        return updated_node
