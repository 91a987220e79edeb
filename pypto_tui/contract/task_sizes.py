"""A task file's size constants (`batch_size = 1024`, `depth, height, width = 16, 32, 32`), read
and rewritten as source text.

Why: a chain of operators is verified at smaller sizes than the task's own (an 8192 x 8192 linear
weight is 64M elements, past what the interpreter runs with every compiler pass). Shrinking the
module-level constants, rather than the tensors one by one, keeps every shape the task derives
from them consistent: `get_inputs`, `get_init_inputs`, the nn modules' weights and every
intermediate tensor all follow, and the baseline is the task's own code at those sizes. The file
is read with libcst and never executed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import libcst as cst

from pypto_tui.errors import InputError


def _int_value(node: cst.BaseExpression) -> int | None:
    return node.evaluated_value if isinstance(node, cst.Integer) else None


def _int_items(node: cst.BaseExpression) -> tuple[int | None, ...] | None:
    """The elements of a list or tuple of whole numbers (`layer_sizes = [400, 800]`), or None: each
    element is a size of its own, named `layer_sizes[0]`, `layer_sizes[1]`."""
    if not isinstance(node, cst.List | cst.Tuple) or not node.elements:
        return None
    items = tuple(_int_value(e.value) for e in node.elements)
    return items if all(isinstance(e, cst.Element) for e in node.elements) and any(
        i is not None for i in items) else None


def _split(name: str) -> tuple[str, int | None]:
    """`layer_sizes[1]` -> ("layer_sizes", 1); a plain name -> (name, None)."""
    if name.endswith("]") and "[" in name:
        base, _, index = name[:-1].partition("[")
        if index.isdigit():
            return base, int(index)
    return name, None


def _targets(stmt: cst.Assign) -> list[tuple[str, cst.BaseExpression]] | None:
    """(name, value) pairs of a plain top-level assignment of whole numbers, or None."""
    if len(stmt.targets) != 1:
        return None
    target, value = stmt.targets[0].target, stmt.value
    if isinstance(target, cst.Name):
        return [(target.value, value)]
    if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements):
        pairs = []
        for t, v in zip(target.elements, value.elements, strict=True):
            if not isinstance(t.value, cst.Name):
                return None
            pairs.append((t.value.value, v.value))
        return pairs
    return None


def _chained(stmt: cst.Assign) -> list[tuple[str, cst.BaseExpression]] | None:
    """`height = width = 128`: every name gets the one value."""
    if len(stmt.targets) < 2 or not all(isinstance(t.target, cst.Name) for t in stmt.targets):
        return None
    return [(t.target.value, stmt.value) for t in stmt.targets if isinstance(t.target, cst.Name)]


def _parse(source: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise InputError(f"the task file does not parse ({exc.message}): fix it before verifying") from None


class _Binding(NamedTuple):
    statement: int            # the module-level statement that binds the name last
    value: int | None         # the whole number bound there, or None
    chain: tuple[str, ...]    # the names a chained `a = b = 128` binds with it (one value for all)
    items: tuple[int | None, ...] | None = None  # a list or tuple of whole numbers bound there


def _bindings(module: cst.Module) -> dict[str, _Binding]:
    """Each module-level name's last plain binding."""
    last: dict[str, _Binding] = {}
    for index, stmt in enumerate(module.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                chained = _chained(small)
                chain = tuple(n for n, _ in chained) if chained else ()
                for name, value in _targets(small) or chained or []:
                    last[name] = _Binding(index, _int_value(value), chain or (name,), _int_items(value))
            elif isinstance(small, cst.AugAssign | cst.AnnAssign) and isinstance(small.target, cst.Name):
                last[small.target.value] = _Binding(index, None, (small.target.value,))
    return last


def _sizes(last: dict[str, _Binding]) -> dict[str, int]:
    out = {k: b.value for k, b in last.items() if b.value is not None and b.value >= 2}
    for k, b in last.items():
        if b.items is not None and len(b.chain) == 1:
            out.update({f"{k}[{i}]": v for i, v in enumerate(b.items) if v is not None and v >= 2})
    return out


def size_constants(source: str) -> dict[str, int]:
    """Module-level names whose last binding is one whole number >= 2 (the value the task's
    functions see when they run)."""
    return _sizes(_bindings(_parse(source)))


def size_groups(source: str) -> list[tuple[str, ...]]:
    """The size constants as units that change together: `height = width = 128` binds one value to
    both names, so they take one size; every other constant is a unit of its own."""
    last = _bindings(_parse(source))
    sizes = _sizes(last)
    return sorted({tuple(m for m in last[n].chain if m in sizes and last[m].statement == last[n].statement)
                   if n in last else (n,) for n in sizes})


class _Rewrite(cst.CSTTransformer):
    """Rewrites each named constant's last binding (earlier ones are overwritten when the file runs)."""

    def __init__(self, values: Mapping[str, int], last: Mapping[str, _Binding]) -> None:
        self.values = values
        self.where = {name: last[_split(name)[0]].statement for name in values}
        self.items: dict[str, dict[int, int]] = {}
        for name, value in values.items():
            base, i = _split(name)
            if i is not None:
                self.items.setdefault(base, {})[i] = value
        self.index = -1

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False  # module level only

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def _mine(self, name: str | None) -> bool:
        return name is not None and self.where.get(name) == self.index

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        target = updated.targets[0].target if len(updated.targets) == 1 else None
        if isinstance(target, cst.Name) and self._mine(target.value):
            return updated.with_changes(value=cst.Integer(str(self.values[target.value])))
        listed = updated.value
        if isinstance(target, cst.Name) and isinstance(listed, cst.List | cst.Tuple) and target.value in self.items:
            items = self.items[target.value]
            if any(self._mine(f"{target.value}[{i}]") for i in items):
                elements = [e.with_changes(value=cst.Integer(str(items[i]))) if i in items else e
                            for i, e in enumerate(listed.elements)]
                return updated.with_changes(value=listed.with_changes(elements=elements))
        if isinstance(target, cst.Tuple) and isinstance(updated.value, cst.Tuple):
            elements = list(updated.value.elements)
            changed = False
            for i, t in enumerate(target.elements):
                name = t.value.value if isinstance(t.value, cst.Name) else None
                if self._mine(name):
                    elements[i] = elements[i].with_changes(value=cst.Integer(str(self.values[name])))  # type: ignore[index]
                    changed = True
            if changed:
                return updated.with_changes(value=updated.value.with_changes(elements=elements))
        if len(updated.targets) > 1:
            names = [t.target.value for t in updated.targets if isinstance(t.target, cst.Name)]
            new = {self.values[n] for n in names if self._mine(n)}
            if len(new) > 1:
                raise InputError(f"{' = '.join(names)} is one value: those names cannot take different sizes")
            if new:
                return updated.with_changes(value=cst.Integer(str(new.pop())))
        return updated


def with_sizes(source: str, values: Mapping[str, int]) -> str:
    """The task's source with the named size constants set to `values` (nothing else changes)."""
    module = _parse(source)
    last = _bindings(module)
    known = _sizes(last)
    for name, value in values.items():
        if name not in known:
            raise InputError(f"{name} is not a size constant of the task file (one of: {', '.join(sorted(known))})")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name}={value!r}: a size is a whole number >= 1")
    rewrite = _Rewrite(values, last)
    body = []
    for index, stmt in enumerate(module.body):
        rewrite.index = index
        body.append(stmt.visit(rewrite))
    return module.with_changes(body=body).code
