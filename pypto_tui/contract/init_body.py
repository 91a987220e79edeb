"""`Model.__init__`'s body as source text, for a module of several kernels whose ModelNew must
create the same parameters in the same order (the same seed then gives the same weights)."""

from __future__ import annotations

import re
import textwrap

import libcst as cst


def init_body(source: str) -> str | None:
    """The body of `class Model`'s `__init__` (dedented), or None when the file has none."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == "Model":
            for item in stmt.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
                    code = cst.Module(body=[]).code_for_node(item.body)
                    lines = code.split("\n", 1)
                    body = textwrap.dedent(lines[1] if len(lines) > 1 else "").strip("\n")
                    # ModelNew has no `Model` to name: the zero-argument form is the same call
                    return re.sub(r"super\(\s*Model\s*,\s*self\s*\)", "super()", body)
    return None
