"""Kernel templates as data: find them in the knowledge pack and fill them with syntax-tree nodes.

A template is a `.py.tmpl` file of Python with `{placeholders}` (libcst's template syntax). It
lives in the pack (`<pack>/templates/<flavour>/NAME.py.tmpl`, shared ones in
`<pack>/templates/common/`), so a pack can change what a kernel looks like without touching code;
a pack that extends the default, or simply has no `templates/` folder, falls back to the bundled
default pack's templates file by file.

Lines at the top of a template that start with `##` document its placeholders and are dropped.

Filling follows libcst's template syntax (`libcst.helpers.parse_template_*`) and adds what kernel
bodies need: a placeholder alone on a line may become a *list* of statements (possibly empty; an
emptied block gets `pass`), and a placeholder argument may become a list of arguments. It is one
pass over a cached parse of the template (libcst's helpers re-parse and walk the tree three
times per call, which dominated export time), and a placeholder the generator does not fill is
an error rather than a silent set display.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from pypto_tui.codegen.rewrite import holders, hooks_of
from pypto_tui.codegen.rewrite import transform as rewrite
from pypto_tui.errors import InputError
from pypto_tui.fileio import read_text
from pypto_tui.kb import KnowledgeBase, bundled_pack_dir
from pypto_tui.source_bounds import MAX_BYTES, check_source

TEMPLATE_SUFFIX = ".py.tmpl"
COMMON = "common"



@dataclass(frozen=True)
class Template:
    name: str
    path: Path
    text: str


def template_dirs(kb: KnowledgeBase, flavour: str) -> list[Path]:
    """Where templates are looked up, first hit wins: the pack's flavour folder, the pack's common
    folder, then the same two in the bundled default pack, then (for a flavour that leaves its
    own fragments out: the run-mode header, the whole-tensor write) the pack's default flavour."""
    return list(_template_dirs(str(kb.path), flavour, kb.default_flavour))


@lru_cache(maxsize=64)
def _template_dirs(pack: str, flavour: str, default_flavour: str) -> tuple[Path, ...]:
    """Cached: resolving the two roots costs path system calls, and a large model's module looks up
    templates tens of thousands of times (the files themselves are still checked on every lookup)."""
    roots = [Path(pack) / "templates"]
    default = bundled_pack_dir() / "templates"
    if default.resolve() != roots[0].resolve():
        roots.append(default)
    dirs = [root / sub for root in roots for sub in (flavour, COMMON)]
    for fallback in (default_flavour, _bundled_default_flavour()):
        dirs += [root / fallback for root in roots if root / fallback not in dirs]
    return tuple(dirs)


@lru_cache(maxsize=1)
def _bundled_default_flavour() -> str:
    with (bundled_pack_dir() / "pack.toml").open("rb") as fh:
        return str(tomllib.load(fh)["pack"]["default_flavour"])


def find_template(kb: KnowledgeBase, flavour: str, name: str) -> Template:
    for d in _template_dirs(str(kb.path), flavour, kb.default_flavour):
        p = d / f"{name}{TEMPLATE_SUFFIX}"
        if p.is_file():
            return Template(name, p, _read(str(p), p.stat().st_mtime))
    where = ", ".join(str(d) for d in template_dirs(kb, flavour))
    raise InputError(f"no kernel template '{name}{TEMPLATE_SUFFIX}' for flavour '{flavour}' (looked in {where})")


@lru_cache(maxsize=256)
def _read(path: str, mtime: float) -> str:
    lines = read_text(path, "kernel template", MAX_BYTES).splitlines(keepends=True)  # bounded: packs are input
    while lines and lines[0].startswith("##"):
        lines.pop(0)
    while lines and not lines[0].strip():
        lines.pop(0)
    return "".join(lines)


# ------------------------------------------------------------------------------------ filling
Replacement = Any  # a libcst node, a list of statements, or a list of Args

_MARK = "__tmpl_{}__"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _used(text: str, replacements: Mapping[str, Replacement]) -> dict[str, Replacement]:
    """Only the placeholders the template mentions: a pack's template may leave some out."""
    return {k: v for k, v in replacements.items() if "{" + k + "}" in text}


def _mangle(text: str, names: frozenset[str]) -> str:
    out = _PLACEHOLDER.sub(lambda m: _MARK.format(m.group(1)) if m.group(1) in names else m.group(0), text)
    left = _PLACEHOLDER.search(out)
    if left:
        raise ValueError(f"template placeholder {left.group(0)} is not filled by the generator "
                         f"(it fills {', '.join(sorted(names)) or 'nothing'} here)")
    return out


def line_rewrite(line: cst.SimpleStatementLine, hooks: Mapping[type, Any]) -> Any:
    """`line.visit(transformer)` for a transformer given as its hooks: a transformer that only rewrites
    statement lines (WRITE's expansion) runs its hook once, since a statement line holds no other; any
    other is walked as libcst would."""
    if set(hooks) <= {cst.SimpleStatementLine}:
        hook = hooks.get(cst.SimpleStatementLine)
        return hook(line, line) if hook is not None else line
    return rewrite(line, hooks)


@dataclass(frozen=True)
class _Parsed:
    """A template's tree and, by node id, the nodes a fill must walk: those holding a placeholder
    (`marked`), and those holding a placeholder or a statement line (`lines`, when a transform runs on
    each line). Every other subtree comes out of the fill as the same object, so it is not walked: most
    of a template (module paths, calls, literals) holds no placeholder."""

    tree: cst.CSTNode
    marked: frozenset[int]
    lines: frozenset[int]

    def skip(self, transform: object | None) -> Any:
        walk = self.marked if transform is None else self.lines
        return lambda n: None if id(n) in walk else n


def _is_marker(n: cst.CSTNode) -> bool:
    return type(n) is cst.Name and n.value.startswith("__tmpl_")


def _parsed(tree: cst.CSTNode) -> _Parsed:
    return _Parsed(tree, holders(tree, _is_marker),
                   holders(tree, lambda n: _is_marker(n) or type(n) is cst.SimpleStatementLine))


@lru_cache(maxsize=512)
def _parsed_module(text: str, names: frozenset[str]) -> _Parsed:
    source = _mangle(text, names)
    check_source(source, "a kernel template")  # a pack's template is input: bounded before libcst
    return _parsed(cst.parse_module(source))


@lru_cache(maxsize=512)
def _parsed_expression(text: str, names: frozenset[str]) -> _Parsed:
    return _parsed(cst.parse_expression(_mangle(text, names)))


class _Fill:
    """One pass over a parsed template: every marker becomes its replacement.

    Expressions go where a name is, shared rather than deep-copied where a placeholder appears several
    times: libcst nodes are immutable, and the one pass keyed on node identity (codegen/cse.py) numbers a
    subtree by its structure, so a shared subtree and its copies get the same number;
    Parameters and Annotations where a one-parameter list or an annotation is the marker;
    argument lists and statement lists are spliced (an emptied block gets `pass`). Spliced
    statements are not copied: libcst nodes are immutable and each list is spliced once.
    """

    def __init__(self, replacements: Mapping[str, Replacement], transform: cst.CSTTransformer | None) -> None:
        self.expr: dict[str, cst.BaseExpression] = {}
        self.params: dict[str, cst.Parameters] = {}
        self.annotations: dict[str, cst.Annotation] = {}
        self.args: dict[str, list[cst.Arg]] = {}
        self.stmts: dict[str, list[cst.BaseStatement]] = {}
        for key, value in replacements.items():
            m = _MARK.format(key)
            if isinstance(value, list | tuple):
                if value and all(isinstance(v, cst.Arg) for v in value):
                    self.args[m] = list(value)
                else:
                    self.stmts[m] = [as_statement(v) for v in value]
            elif isinstance(value, cst.Parameters):
                self.params[m] = value
            elif isinstance(value, cst.Annotation):
                self.annotations[m] = value
            elif isinstance(value, cst.BaseStatement | cst.BaseSmallStatement):
                self.stmts[m] = [as_statement(value)]
            elif isinstance(value, cst.BaseExpression):
                self.expr[m] = value
            else:
                raise TypeError(f"template replacement {key}={value!r} is not a syntax-tree node")
        self.transform = transform
        self.line_hooks = hooks_of(transform) if transform is not None else {}
        self.hooks = hooks_of(self)  # run by codegen.rewrite.transform: libcst's visitor rebuilds every node

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> Any:
        v = self.expr.get(updated.value)
        return v if v is not None else updated

    def leave_Parameters(self, original: cst.Parameters, updated: cst.Parameters) -> cst.Parameters:
        if len(updated.params) == 1 and not updated.kwonly_params and updated.star_kwarg is None:
            p = self.params.get(original.params[0].name.value)
            if p is not None:
                return p
        return updated

    def leave_Annotation(self, original: cst.Annotation, updated: cst.Annotation) -> cst.Annotation:
        if isinstance(original.annotation, cst.Name) and original.annotation.value in self.annotations:
            return self.annotations[original.annotation.value]
        return updated

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> Any:
        if isinstance(original.value, cst.Name) and original.value.value in self.args:
            return cst.FlattenSentinel(list(self.args[original.value.value]))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not any(isinstance(a.value, cst.Name) and a.value.value in self.args for a in original.args):
            return updated
        args = list(updated.args)
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        fixed = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT if i == len(args) - 1 else
                                (a.comma if a.comma is not cst.MaybeSentinel.DEFAULT else comma))
                 for i, a in enumerate(args)]
        return updated.with_changes(args=fixed)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> Any:
        body = original.body
        if len(body) == 1 and isinstance(body[0], cst.Expr) and isinstance(body[0].value, cst.Name):
            stmts = self.stmts.get(body[0].value.value)
            if stmts is not None:
                if not stmts:
                    return cst.RemoveFromParent()
                out = list(stmts)
                if updated.leading_lines:
                    first: Any = out[0]
                    out[0] = first.with_changes(leading_lines=(*updated.leading_lines, *first.leading_lines))
                return cst.FlattenSentinel(out)
        if self.transform is not None:
            return line_rewrite(updated, self.line_hooks)
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


def fill_module(text: str, transform: cst.CSTTransformer | None = None, **replacements: Replacement) -> cst.Module:
    """A whole template filled in one pass: expressions, parameter lists, annotations, argument
    lists and statement lists.

    `transform` runs on the template's own simple statements (after their expressions are in),
    never on the statement lists being spliced, so nested bodies are not walked again.
    """
    used = _used(text, replacements)
    parsed = _parsed_module(text, frozenset(used))
    fill = _Fill(used, transform)
    out = rewrite(parsed.tree, fill.hooks, parsed.skip(transform))
    assert isinstance(out, cst.Module)
    return out


def fill_statements(text: str, transform: cst.CSTTransformer | None = None,
                    **replacements: Replacement) -> list[cst.BaseStatement]:
    """A template of one or more statements, filled, as a list (for splicing into a body). Comment
    lines before the first statement (a module's header, to libcst) stay attached to it."""
    module = fill_module(text, transform, **replacements)
    body: list[cst.BaseStatement] = list(module.body)
    header = [line for line in module.header if line.comment is not None]
    if body and header:
        first = body[0]
        assert isinstance(first, cst.SimpleStatementLine | cst.BaseCompoundStatement)
        body[0] = first.with_changes(leading_lines=[*header, *first.leading_lines])
    return body


def fill_expression(text: str, **replacements: Replacement) -> cst.BaseExpression:
    used = _used(text, replacements)
    if any(isinstance(v, cst.BaseStatement | cst.BaseSmallStatement) for v in used.values()):
        raise ValueError("an expression template takes no statement placeholders")
    fill = _Fill(used, None)
    parsed = _parsed_expression(text, frozenset(used))
    out = rewrite(parsed.tree, fill.hooks, parsed.skip(None))
    assert isinstance(out, cst.BaseExpression)
    return out


def as_statement(node: Any) -> cst.BaseStatement:
    if isinstance(node, cst.BaseStatement):
        return node
    if isinstance(node, cst.BaseSmallStatement):
        return cst.SimpleStatementLine([node])
    if isinstance(node, cst.BaseExpression):
        return cst.SimpleStatementLine([cst.Expr(node)])
    raise TypeError(f"not a statement: {node!r}")


def statements(items: Sequence[Any]) -> list[cst.BaseStatement]:
    """Flatten a mix of statements and lists of statements."""
    out: list[cst.BaseStatement] = []
    for it in items:
        if isinstance(it, list | tuple):
            out.extend(statements(it))
        elif it is not None:
            out.append(as_statement(it))
    return out
