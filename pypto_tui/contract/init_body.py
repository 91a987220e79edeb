"""`Model.__init__`'s body as statements, for a module of several kernels whose ModelNew must
create the same parameters in the same order (the same seed then gives the same weights)."""

from __future__ import annotations

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
