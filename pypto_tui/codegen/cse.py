"""Bind each tensor subexpression a kernel statement repeats to a local name, computed once.

Why: pypto traces the kernel's Python, so every occurrence of `x + bias` in the text is one more
vector op in the compiled graph. A chain the planner fuses into one kernel writes its operators
as one nested expression, and composed activations repeat their input: mish is `x * tanh(softplus(x))`
with `x` three times, so mish(mish(y)) wrote the inner mish three times and `y` nine. Measured on
KernelBench level-2 task 29 (Matmul_Mish_Mish, full shape, pypto 0.2.0 SIM): the fused elementwise
kernel took 695.9 µs against 111-113 µs per operator unfused, and the fused plan lost to the
unfused one (2662.6 against 2304.9 µs in total). Sharing the repeats makes the fused kernel do no
more vector work than the chain of kernels it replaces.

Only expressions that read a tensor are shared (a pypto call, or a tensor parameter or local of the
kernel); offsets and sizes stay where they are written. The hoisted assignments go right before
the statement, in the same block, in dependency order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import libcst as cst

PREFIX = "shared"
# pypto calls that are statements or settings, never values to share
NOT_VALUES = frozenset({"loop", "set_vec_tile_shapes", "set_cube_tile_shapes", "assemble", "set_pass_options"})


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


def _key(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(_bare(node))  # type: ignore[arg-type]


def _pypto_call(node: cst.CSTNode) -> str | None:
    """The function name of a `pypto.<fn>(...)` call, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        f = node.func
        if isinstance(f.value, cst.Name) and f.value.value == "pypto":
            return f.attr.value
    return None


class _Reads(cst.CSTVisitor):
    def __init__(self, tensors: frozenset[str]) -> None:
        self.tensors = tensors
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        if node.value in self.tensors:
            self.found = True
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if _pypto_call(node) is not None:
            self.found = True
        return not self.found


def _reads_tensor(node: cst.CSTNode, tensors: frozenset[str]) -> bool:
    v = _Reads(tensors)
    node.visit(v)
    return v.found


def _is_candidate(node: cst.CSTNode, tensors: frozenset[str]) -> bool:
    if isinstance(node, cst.BinaryOperation | cst.UnaryOperation):
        return _reads_tensor(node, tensors)
    fn = _pypto_call(node)
    return fn is not None and fn not in NOT_VALUES


class _Collect(cst.CSTVisitor):
    def __init__(self, tensors: frozenset[str]) -> None:
        self.tensors = tensors
        self.counts: Counter[str] = Counter()
        self.nodes: dict[str, cst.BaseExpression] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseExpression) and _is_candidate(node, self.tensors):
            k = _key(node)
            self.counts[k] += 1
            self.nodes.setdefault(k, node)
        return True


class _Replace(cst.CSTTransformer):
    def __init__(self, key: str, to: str) -> None:
        self.key, self.to = key, to

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        if isinstance(original, cst.BinaryOperation | cst.UnaryOperation | cst.Call) and _key(original) == self.key:
            return cst.Name(self.to)
        return updated


def _names(nodes: Sequence[cst.CSTNode]) -> set[str]:
    seen: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            seen.add(node.value)

    for n in nodes:
        n.visit(V())
    return seen


def _assigned(nodes: Sequence[cst.CSTNode]) -> set[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                out.add(node.target.value)

    for n in nodes:
        n.visit(V())
    return out


def _split(stmt: cst.SimpleStatementLine, tensors: frozenset[str],
           fresh: Iterator[str]) -> list[cst.SimpleStatementLine]:
    """The statement preceded by `sharedN = <expr>` for every tensor expression it repeats (largest first, so
    a repeated composite is bound whole and its own repeats are then found inside its definition)."""
    small = stmt.body[0]
    defs: list[tuple[str, cst.BaseExpression]] = []
    while True:
        seen = _Collect(tensors)
        small.visit(seen)
        for _, rhs in defs:
            rhs.visit(seen)
        repeated = [k for k, n in seen.counts.items() if n >= 2]
        if not repeated:
            break
        best = max(repeated, key=len)
        to = next(fresh)
        rewrite = _Replace(best, to)
        defs = [(n, rhs.visit(rewrite)) for n, rhs in defs]  # type: ignore[misc]
        defs.append((to, _bare(seen.nodes[best])))
        small = small.visit(rewrite)  # type: ignore[assignment]
    if not defs:
        return [stmt]
    # a later (smaller) definition can only appear inside earlier ones: define it first
    lines = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(n))], rhs)]) for n, rhs in reversed(defs)]
    lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
    return [*lines, stmt.with_changes(body=[small], leading_lines=[])]


class _Statements(cst.CSTTransformer):
    def __init__(self, tensors: frozenset[str], fresh: Iterator[str]) -> None:
        self.tensors, self.fresh = tensors, fresh

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> cst.BaseStatement | cst.FlattenSentinel:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Expr | cst.Assign):
            return updated
        out = _split(updated, self.tensors, self.fresh)
        return out[0] if len(out) == 1 else cst.FlattenSentinel(out)


def share_repeats(body: Sequence[cst.BaseStatement], tensor_params: Sequence[str]) -> list[cst.BaseStatement]:
    """`body` with every repeated tensor subexpression of a statement computed once (see the module doc)."""
    if not body:
        return list(body)
    taken = _names(body) | set(tensor_params)
    tensors = frozenset(set(tensor_params) | _assigned(body))

    def fresh() -> Iterator[str]:
        i = 0
        while True:
            n = f"{PREFIX}{i}"
            i += 1
            if n not in taken:
                yield n

    module = cst.Module(body=list(body)).visit(_Statements(tensors, fresh()))
    return list(module.body)
