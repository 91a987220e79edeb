"""`Model.__init__`'s body as statements, for a module of several kernels whose ModelNew must
create the same parameters in the same order (the same seed then gives the same weights)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


class _BareSuper(cst.CSTTransformer):
    """`super(Model, self)` becomes `super()`: ModelNew has no `Model` to name, and the zero-argument
    form is the same call."""

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if (isinstance(updated.func, cst.Name) and updated.func.value == "super" and len(updated.args) == 2
                and isinstance(updated.args[0].value, cst.Name) and updated.args[0].value.value == "Model"
                and isinstance(updated.args[1].value, cst.Name) and updated.args[1].value.value == "self"):
            return updated.with_changes(args=[])
        return updated

    def leave_TrailingWhitespace(self, original: cst.TrailingWhitespace,
                                 updated: cst.TrailingWhitespace) -> cst.TrailingWhitespace:
        if updated.comment is None:  # a space left at a line's end in the task file is not copied
            return updated.with_changes(whitespace=cst.SimpleWhitespace(""))
        return updated


def init_statements(source: str) -> list[cst.BaseStatement] | None:
    """The statements of `class Model`'s `__init__` (the task file's own, read from its text), or None
    when the file has none. A comment after the last statement is left out (it belongs to no statement)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == "Model":
            for item in stmt.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
                    if not isinstance(item.body, cst.IndentedBlock):
                        return [item.body.visit(_BareSuper())]  # type: ignore[list-item]
                    return [s.visit(_BareSuper()) for s in item.body.body]  # type: ignore[misc]
    return None


TASK_FUNCTIONS = ("get_inputs", "get_init_inputs")
"""The harness's functions: a kernel module defines its own inputs nowhere (verify reads the task's)."""


@dataclass(frozen=True)
class TaskSupport:
    """What `Model.__init__` reaches beyond its own body: the task file's module-level statements (a
    submodule class, a helper function, a constant, the import they use) and Model's own methods other
    than `__init__` and `forward` (ResNet's `_make_layer`), in the file's order."""

    statements: tuple[cst.BaseStatement, ...] = ()
    methods: tuple[cst.FunctionDef, ...] = ()
    # Model's class-level assignments __init__ or those methods read through self (ResNet's
    # `expansion = 1`, read as `out_channels * self.expansion`)
    attributes: tuple[cst.BaseStatement, ...] = ()


class _Names(cst.CSTVisitor):
    """Every name a statement reads, and the `self.<attr>` it reads (a method call of Model); the names
    its functions bind themselves (parameters, assignments, loop targets) are left out, so a parameter
    `channels` does not reach a module-level `channels = 8` the harness reads."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.local: set[str] = set()
        self.attrs: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.local.add(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.local |= {n.value for n in _names_in(node.target)}

    def visit_For(self, node: cst.For) -> None:
        self.local |= {n.value for n in _names_in(node.target)}

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.local |= {n.value for n in _names_in(node.target)}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.attrs.add(node.attr.value)


class _Free:
    def __init__(self, names: set[str], attrs: set[str]) -> None:
        self.names, self.attrs = names, attrs


def _read(nodes: list[cst.CSTNode]) -> _Free:
    seen = _Names()
    for n in nodes:
        n.visit(seen)
    return _Free(seen.names - seen.local, seen.attrs)


def _bound(stmt: cst.BaseStatement) -> set[str]:
    """The module-level names a statement binds (a class, a function, an assignment's names, an import's)."""
    if isinstance(stmt, cst.ClassDef | cst.FunctionDef):
        return {stmt.name.value}
    out: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Import | cst.ImportFrom):
                out |= import_names(small)
            elif isinstance(small, cst.Assign):
                for t in small.targets:
                    out |= {n.value for n in _names_in(t.target)}
            elif isinstance(small, cst.AnnAssign):
                out |= {n.value for n in _names_in(small.target)}
    return out


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, cst.Tuple | cst.List):
        return [n for e in node.elements for n in _names_in(e.value)]
    return []


def import_names(small: cst.Import | cst.ImportFrom) -> set[str]:
    """The names an import statement binds (`import torch.nn as nn` -> nn; `import torch.nn` -> torch)."""
    if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
        return {"*"}
    out: set[str] = set()
    for alias in small.names:  # type: ignore[union-attr]
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            out.add(alias.asname.name.value)
        else:
            name = cst.Module(body=[]).code_for_node(alias.name)
            out.add(name.split(".")[0])
    return out


def task_support(source: str) -> TaskSupport:
    """The statements and methods `Model.__init__` reaches, transitively (nothing for a task whose
    __init__ builds only `nn` modules: its composed module is unchanged by this)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return TaskSupport()
    model = next((s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == "Model"), None)
    if model is None:
        return TaskSupport()
    defs = {s.name.value: s for s in model.body.body if isinstance(s, cst.FunctionDef)}
    init = defs.get("__init__")
    if init is None:
        return TaskSupport()
    methods = {k: v for k, v in defs.items() if k not in ("__init__", "forward")}
    items = [s for s in module.body if s is not model and not (
        isinstance(s, cst.FunctionDef) and s.name.value in TASK_FUNCTIONS)]
    bound = [_bound(s) for s in items]
    read = _read([init])
    names, wanted_methods = set(read.names), {a for a in read.attrs if a in methods}
    chosen: set[int] = set()
    todo = [methods[m] for m in wanted_methods]
    for m in todo:
        names |= _read([m]).names
    changed = True
    while changed:
        changed = False
        for i, (stmt, binds) in enumerate(zip(items, bound, strict=True)):
            if i in chosen or not (binds & names):
                continue
            chosen.add(i)
            names |= _read([stmt]).names
            changed = True
        more = {a for m in (methods[w] for w in wanted_methods) for a in _read([m]).attrs if a in methods}
        if more - wanted_methods:
            for a in more - wanted_methods:
                names |= _read([methods[a]]).names
            wanted_methods |= more
            changed = True
    attrs = set(read.attrs)
    for w in wanted_methods:
        attrs |= _read([methods[w]]).attrs
    attributes = tuple(a for a in model.body.body if isinstance(a, cst.SimpleStatementLine) and _bound(a) & attrs)
    for line in attributes:  # a class attribute's value may read a module-level constant too
        names |= _read([line]).names
    for i, binds in enumerate(bound):
        if i not in chosen and binds & names:
            chosen.add(i)
    statements = tuple(s.visit(_BareSuper()) for i, s in enumerate(items) if i in chosen)
    kept = tuple(m.visit(_BareSuper()) for k, m in methods.items() if k in wanted_methods)
    return TaskSupport(statements, kept, attributes)  # type: ignore[arg-type]  # visit() keeps each node's type
