"""Rewriting a libcst tree without libcst's visitor protocol.

A CSTTransformer rebuilds every node it passes and calls two hooks per attribute of each, whether or not
anything changes. Composing a 300-kernel module (ResNet-101) spent most of `scaffold`'s time there:
renaming a few names per kernel, and filling small templates once per statement. `transform` walks each
node's child fields once (their names cached per node type), calls a `leave` hook only where one is
registered for the node's type, and rebuilds only the nodes on a path to a change; every other subtree
stays the same object. The hooks keep libcst's meaning: called after the node's children (`original`
and `updated`), and a FlattenSentinel or RemovalSentinel returned for an element of a sequence is spliced
in or dropped, so a transformer's `leave_<Type>` methods run here unchanged (`hooks_of`). `code_of` writes
a tree's text as libcst does, without the position bookkeeping only metadata providers read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from typing import Any, TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState  # libcst>=1.8,<2 (pyproject): the state Module.code uses

N = TypeVar("N", bound=cst.CSTNode)
Hook = Callable[[Any, Any], Any]

_TRIVIA = (cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline,
           cst.Comment)
"""Node types that hold layout, never a name or a statement: not walked."""
_FIELDS: dict[type, tuple[str, ...]] = {}
_WALKED: dict[type, bool] = {}
"""Per type of a field's value: a node to walk (not trivia). isinstance against libcst's abstract
CSTNode costs an ABC check, 17 million of them for one large model: asked once per type instead."""


def _fields(t: type) -> tuple[str, ...]:
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    return names


def _walked(t: type) -> bool:
    known = _WALKED.get(t)
    if known is None:
        known = _WALKED[t] = issubclass(t, cst.CSTNode) and not issubclass(t, _TRIVIA)
    return known


def hooks_of(rewriter: object) -> dict[type, Hook]:
    """The `leave_<Type>` methods of an object (a CSTTransformer's, or any), keyed by libcst node type."""
    return {node_type: getattr(rewriter, attr) for node_type, attr in _leave_methods(type(rewriter))}


_LEAVES: dict[type, tuple[tuple[type, str], ...]] = {}


def _leave_methods(cls: type) -> tuple[tuple[type, str], ...]:
    """Per class, asked once: a template fill builds a hook table per fill, tens of thousands per model."""
    known = _LEAVES.get(cls)
    if known is None:
        known = _LEAVES[cls] = tuple((node_type, attr) for attr in dir(cls) if attr.startswith("leave_")
                                     and isinstance(node_type := getattr(cst, attr[6:], None), type))
    return known


def transform(node: N, hooks: Mapping[type, Hook], whole: Callable[[cst.CSTNode], Any] | None = None) -> Any:
    """`node` rewritten bottom-up by `hooks` (node type -> hook(original, updated)); `whole(n)`, when given
    and not None for a node, replaces that node outright, its insides unwalked."""
    if whole is not None and (outright := whole(node)) is not None:
        return outright
    changes: dict[str, object] = {}
    for field in _fields(type(node)):
        value = getattr(node, field)
        kind = type(value)
        if kind is tuple or kind is list:
            if not value:
                continue
            items: list[object] = []
            changed = False
            for v in value:
                if not _walked(type(v)):
                    items.append(v)
                    continue
                walked = transform(v, hooks, whole)
                if walked is v:
                    items.append(v)
                    continue
                changed = True
                if isinstance(walked, cst.FlattenSentinel):
                    items.extend(walked.nodes)
                elif not isinstance(walked, cst.RemovalSentinel):
                    items.append(walked)
            if changed:
                changes[field] = kind(items)
        elif _walked(kind):
            walked = transform(value, hooks, whole)
            if walked is not value:
                if isinstance(walked, cst.FlattenSentinel | cst.RemovalSentinel):
                    raise TypeError(f"{type(node).__name__}.{field} cannot be spliced or removed")
                changes[field] = walked
    updated = node.with_changes(**changes) if changes else node
    hook = hooks.get(type(node))
    return hook(node, updated) if hook is not None else updated


def renamed(node: N, names: Mapping[str, str]) -> N:
    """`node` with every Name whose value is a key of `names` given the mapped value (an attribute's and
    a keyword's too, as a transformer's `leave_Name` would)."""
    if not names:
        return node

    def rename(original: cst.Name, updated: cst.Name) -> cst.Name:
        new = names.get(updated.value)
        return updated.with_changes(value=new) if new else updated

    out: N = transform(node, {cst.Name: rename})
    return out


def walk(node: cst.CSTNode, enter: Callable[[cst.CSTNode], bool] | None = None) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself first), parents before children; `enter(n)` False skips n's
    insides (n itself is still given). A read-only visit that builds nothing."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if enter is not None and not enter(n):
            continue
        stack.extend(reversed(_children(n)))


def _children(n: cst.CSTNode) -> list[cst.CSTNode]:
    """n's child nodes in field order, layout trivia left out: what `walk` and `holders` descend into."""
    children: list[cst.CSTNode] = []
    for field in _fields(type(n)):
        value = getattr(n, field)
        kind = type(value)
        if kind is tuple or kind is list:
            children += [v for v in value if _walked(type(v))]
        elif _walked(kind):
            children.append(value)
    return children


def holders(node: cst.CSTNode, holds: Callable[[cst.CSTNode], bool]) -> frozenset[int]:
    """The ids of the nodes under `node` (itself included) whose subtree has a node `holds` accepts: the
    only nodes a rewrite whose hooks act on such nodes alone must walk (`transform`'s `whole` returns
    every other node as it is). Ids, so the caller keeps `node` alive as long as the set."""
    found: set[int] = set()

    def visit(n: cst.CSTNode) -> bool:
        held = holds(n)
        for child in _children(n):
            held = visit(child) or held  # every child is visited: each marks its own holders
        if held:
            found.add(id(n))
        return held

    visit(node)
    return frozenset(found)


class _PlainState(CodegenState):
    """libcst's code generation state without its position bookkeeping: `Module.code` enters a fresh
    context manager per node (1.5 million for DenseNet-201's module) only so that a metadata provider can
    record positions, which code generation never asks for; one shared no-op context does the same."""

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Any:  # libcst: a generator's context
        return _NO_POSITION


_NO_POSITION = nullcontext()
_PLAIN = cst.Module(body=[])


def code_of(node: cst.CSTNode, module: cst.Module = _PLAIN) -> str:
    """The source text of `node`, exactly as `module.code_for_node(node)` writes it (a Module: its
    `.code`), a quarter faster."""
    state = _PlainState(default_indent=module.default_indent, default_newline=module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)
