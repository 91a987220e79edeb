"""A module of several kernels (issue 21): the stage modules, merged, under one ModelNew.

Each kernel of a module plan is generated as a module of its own (the level-1 path, unchanged).
`compose` merges them: the shared preamble (imports, run-mode switches, helpers) once, every
other top-level name of stage i renamed with the suffix `_K{i}` (its constants, its factory,
its ModelNew), and one `ModelNew` whose `__init__` is `Model.__init__` itself (the same
parameters created in the same order, so the same seed gives the same weights) and whose
`forward` calls the stages in order, each on the values the plan says it reads: a task input,
a parameter (`self.gemm.weight`), or an earlier stage's output, which forward keeps in a local.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import libcst as cst

from pypto_tui.errors import Unsupported

SHARED_HINT = ("_for_this_machine", "ceil_div", "RUNTIME_OPTIONS", "DEBUG_OPTIONS", "_PYPTO_RUN_MODE",
               "_PYPTO_RUNTIME_DEBUG_MODE")


def _defined(stmt: cst.BaseStatement) -> list[str]:
    if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
        return [stmt.name.value]
    out: list[str] = []
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign):
                targets = [small.target]
            out += [t.value for t in targets if isinstance(t, cst.Name)]
    return out


class _Rename(cst.CSTTransformer):
    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.names.get(updated.value)
        return updated.with_changes(value=new) if new else updated


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString))


def compose(stages: Sequence[str], calls: Sequence[tuple[str, Sequence[str]]], result: str, doc: str,
            init_params: str, init_body: str, forward_params: str, prelude: Sequence[str] = (),
            shared: Sequence[str] = (), after: Sequence[tuple[int, str]] = ()) -> str:
    """The merged module.

    `stages`: each kernel's generated module source, in plan order; `calls[i]` = (the local the
    forward keeps stage i's output in, the expressions it passes); `result`: the local forward
    returns; `init_body`: Model.__init__'s body (without `super().__init__()` it is added);
    `prelude`: forward statements before the first stage (views of inputs); `after`: (i, statement)
    run right after stage i (views of its output)."""
    header: list[cst.BaseStatement] = []
    seen: dict[str, str] = {}  # statement code -> first stage's name for it
    body: list[cst.BaseStatement] = []
    empty = cst.Module(body=[])
    for i, src in enumerate(stages):
        module = cst.parse_module(src)
        stmts = [s for s in module.body if not _is_docstring(s)]
        renames: dict[str, str] = {}
        keep: list[cst.BaseStatement] = []
        for s in stmts:
            if _is_import(s):
                code = empty.code_for_node(s).strip()
                if code not in seen:
                    seen[code] = ""
                    header.append(s)
                continue
            names = _defined(s)
            code = empty.code_for_node(s).strip()
            if names and any(n in SHARED_HINT for n in names) and code in seen:
                continue  # the same helper as an earlier stage's
            if names and any(n in SHARED_HINT for n in names):
                seen[code] = names[0]
                keep.append(s)
                continue
            for n in names:
                renames[n] = f"{n}_K{i}"
            keep.append(s)
        renamer = _Rename(renames)
        body += [s.visit(renamer) for s in keep]  # type: ignore[misc]
    if len(calls) != len(stages):
        raise Unsupported("every kernel of the module needs its call")
    lines = ["class ModelNew(nn.Module):", textwrap.indent(f'"""{doc}"""', "    "), "",
             f"    def __init__({init_params}):",
             textwrap.indent(init_body.rstrip() or "super().__init__()", "        ")]
    lines += [f"        self._k{i} = ModelNew_K{i}()" for i in range(len(stages))]
    lines += [f"        {line}" for line in shared]
    lines += ["", f"    def forward({forward_params}):"]
    lines += [f"        {p}" for p in prelude]
    for i, (local, args) in enumerate(calls):
        lines.append(f"        {local} = self._k{i}({', '.join(args)})")
        lines += [f"        {stmt}" for k, stmt in after if k == i]
    lines.append(f"        return {result}")
    model = list(cst.parse_module("\n".join(lines) + "\n").body)
    docstring = list(cst.parse_module(f'"""{doc}"""\n').body)
    statements: list[Any] = [*docstring, *header, *body, *model]
    return cst.Module(body=statements).code
