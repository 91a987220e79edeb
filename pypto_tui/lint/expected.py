"""Kernels their own test expects the compiler to refuse.

PyPTO's tests of its error paths (`test_error.py`, `test_control_flow_error.py`, ...) write a
kernel that pypto must reject and call it only under `pytest.raises`: the lint is right that the
compiler refuses it, and the file's author says so. Such a kernel's error findings are reported at
info level, naming the call that expects the refusal, so a corpus of real code counts only the
errors nobody expects; so are its warnings (advice on a kernel written to be refused is moot). A
kernel referenced anywhere outside such a block (called, passed on, stored) is not covered: its
findings stand.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from pypto_tui.lint.base import LintFinding

RAISES = frozenset({"raises", "assertRaises", "assertRaisesRegex"})
"""The context managers that say the code inside must fail (pytest, unittest)."""


@dataclass(frozen=True)
class ExpectedRefusal:
    kernel: str
    first: int      # the kernel's first line (its decorators included)
    last: int
    expects: int    # the line of the `with pytest.raises(...)` around its call


def _callee_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _is_jit(decorator: ast.expr) -> bool:
    return _callee_name(decorator) == "jit"


def _raises_block(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> int | None:
    """The line of the innermost `with pytest.raises(...)` (or unittest's assertRaises) that
    encloses `node`, or None."""
    at: ast.AST | None = parents.get(node)
    while at is not None:
        if isinstance(at, ast.With | ast.AsyncWith) and any(
                isinstance(item.context_expr, ast.Call) and _callee_name(item.context_expr) in RAISES
                for item in at.items):
            return at.lineno
        at = parents.get(at)
    return None


def expected_refusals(source: str) -> list[ExpectedRefusal]:
    """Every jit kernel of `source` whose every use is a call inside a block expecting an error."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    parents: dict[ast.AST, ast.AST] = {}
    kernels: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(map(_is_jit, node.decorator_list)):
            kernels.setdefault(node.name, []).append(node)
    uses: dict[str, list[ast.Name]] = {name: [] for name in kernels}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in uses:
            uses[node.id].append(node)
    out = []
    for name, defs in kernels.items():
        if len(defs) != 1 or not uses[name]:
            continue  # two kernels of one name, or one never used: nothing says what is expected
        blocks = [_raises_block(use, parents) if isinstance(parents.get(use), ast.Call)
                  and parents[use].func is use else None for use in uses[name]]  # type: ignore[attr-defined]
        if all(b is not None for b in blocks):
            fn = defs[0]
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            out.append(ExpectedRefusal(name, first, fn.end_lineno or fn.lineno, min(b for b in blocks if b)))
    return out


def as_expected(findings: list[LintFinding], source: str) -> tuple[list[LintFinding], set[int]]:
    """The findings with each error or warning inside an expected refusal lowered to info (the call that
    expects it named), and the indices of the findings lowered."""
    refusals = expected_refusals(source) if any(f.level in ("error", "warn") for f in findings) else []
    if not refusals:
        return findings, set()
    out, lowered = [], set()
    for i, f in enumerate(findings):
        e = next((r for r in refusals if r.first <= f.line <= r.last), None)
        if e is None or f.level not in ("error", "warn"):
            out.append(f)
            continue
        lowered.add(i)
        out.append(replace(f, level="info", message=f"{f.message} [expected: `{e.kernel}` is only called "
                                                    f"under the `with` at line {e.expects}, which expects an error]"))
    return out, lowered


__all__ = ["RAISES", "ExpectedRefusal", "as_expected", "expected_refusals"]
