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
from typing import TypeVar

import libcst as cst

from pypto_tui.codegen.rewrite import code_of, transform, walk

N = TypeVar("N", bound=cst.CSTNode)

PREFIX = "shared"
# pypto calls that are statements or settings, never values to share
NOT_VALUES = frozenset({"loop", "set_vec_tile_shapes", "set_cube_tile_shapes", "assemble", "set_pass_options"})


def _pypto_call(node: cst.CSTNode) -> str | None:
    """The function name of a `pypto.<fn>(...)` call, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        f = node.func
        if isinstance(f.value, cst.Name) and f.value.value == "pypto":
            return f.attr.value
    return None


class _Numbering:
    """Value numbering of one statement: every subexpression gets the number of its structure
    (parentheses ignored), so equal subtrees share a number, in one pass over the tree (a fused
    chain's statement can hold thousands of nodes; comparing source text pairwise took a minute)."""

    def __init__(self, tensors: frozenset[str]) -> None:
        self.tensors = tensors
        self.number: dict[int, int] = {}  # id(node) -> value number
        self.values: dict[tuple[object, ...], int] = {}
        self.first: list[cst.BaseExpression] = []  # value number -> its first node
        self.reads: list[bool] = []  # value number -> reads a tensor
        self.candidate: list[bool] = []
        self.uses: Counter[int] = Counter()  # value number -> how many parents (or the statement) use it

    def value(self, node: cst.BaseExpression) -> int:
        """The number of `node`, numbering its children first; one use of each child is counted per
        distinct parent value, so a value is shared when two different expressions (or two slots of
        one) need it."""
        known = self.number.get(id(node))
        if known is not None:
            return known
        children: list[int] = []
        fn = _pypto_call(node)
        if isinstance(node, cst.BinaryOperation):
            children = [self.value(node.left), self.value(node.right)]
            key: tuple[object, ...] = ("bin", type(node.operator).__name__, *children)
        elif isinstance(node, cst.UnaryOperation):
            children = [self.value(node.expression)]
            key = ("un", type(node.operator).__name__, *children)
        elif fn is not None and isinstance(node, cst.Call):
            children = [self.value(a.value) for a in node.args]
            words = tuple((a.keyword.value if a.keyword else None, a.star) for a in node.args)
            key = ("call", fn, words, *children)
        else:
            key = ("leaf", code_of(node.with_changes(lpar=[], rpar=[])
                                                        if getattr(node, "lpar", None) else node))
        n = self.values.get(key)
        if n is None:
            n = len(self.first)
            self.values[key] = n
            self.first.append(node)
            reads = (isinstance(node, cst.Name) and node.value in self.tensors) or fn is not None \
                or any(self.reads[c] for c in children)
            self.reads.append(reads)
            self.candidate.append(
                (isinstance(node, cst.BinaryOperation | cst.UnaryOperation) and reads)
                or (fn is not None and fn not in NOT_VALUES))
            self.uses.update(children)  # numbers are given children first: range(len(first)) is a topological order
        self.number[id(node)] = n
        return n


def _number_outermost(stmt: cst.CSTNode, numbering: _Numbering) -> None:
    """Number every outermost expression of the statement (calls' receivers, arguments, values)."""

    def enter(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BinaryOperation | cst.UnaryOperation) or _pypto_call(node) is not None:
            numbering.uses[numbering.value(node)] += 1  # type: ignore[arg-type]
            return False
        return True

    for _ in walk(stmt, enter):
        pass


def _replaced(node: N, numbering: _Numbering, names: dict[int, str], keep: int | None = None) -> N:
    """Each occurrence of a shared value -> its name (except the definition being written), replaced
    whole, its insides not walked."""

    def named(n: cst.CSTNode) -> cst.Name | None:
        number = numbering.number.get(id(n))
        return cst.Name(names[number]) if number is not None and number != keep and number in names else None

    out: N = transform(node, {}, named)
    return out


def _bound(body: Sequence[cst.BaseStatement]) -> tuple[set[str], set[str]]:
    """Every name the body uses (so a new one never clashes) and every name it assigns (the kernel's
    locals, tensors unless proven otherwise), in one walk."""
    used: set[str] = set()
    assigned: set[str] = set()
    for stmt in body:
        for n in walk(stmt):
            if isinstance(n, cst.Name):
                used.add(n.value)
            elif isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name):
                assigned.add(n.target.value)
    return used, assigned


def _split(stmt: cst.SimpleStatementLine, tensors: frozenset[str],
           fresh: Iterator[str]) -> list[cst.SimpleStatementLine]:
    """The statement preceded by `sharedN = <expr>` for every tensor expression it uses twice or more,
    children defined before the values that use them."""
    numbering = _Numbering(tensors)
    _number_outermost(stmt, numbering)
    shared = [n for n in range(len(numbering.first)) if numbering.candidate[n] and numbering.uses[n] >= 2]
    if not shared:
        return [stmt]
    names = {n: next(fresh) for n in shared}
    lines = []
    for n in shared:
        node = numbering.first[n]
        rhs = _replaced(node, numbering, names, keep=n)
        rhs = rhs.with_changes(lpar=[], rpar=[]) if getattr(rhs, "lpar", None) else rhs
        lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(names[n]))], rhs)]))
    lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
    body = _replaced(stmt.with_changes(leading_lines=[]), numbering, names)
    return [*lines, body]


def _block(body: Sequence[cst.BaseStatement], tensors: frozenset[str],
           fresh: Iterator[str]) -> list[cst.BaseStatement]:
    """Each simple statement split (see `_split`); compound statements (the kernel's loops) recursively."""
    out: list[cst.BaseStatement] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            if len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr | cst.Assign):
                out += _split(stmt, tensors, fresh)
            else:
                out.append(stmt)
        elif isinstance(getattr(stmt, "body", None), cst.IndentedBlock):
            block = stmt.body  # type: ignore[attr-defined]
            out.append(stmt.with_changes(body=block.with_changes(body=_block(block.body, tensors, fresh))))
        else:
            out.append(stmt)
    return out


def share_repeats(body: Sequence[cst.BaseStatement], tensor_params: Sequence[str]) -> list[cst.BaseStatement]:
    """`body` with every repeated tensor subexpression of a statement computed once (see the module doc)."""
    used, assigned = _bound(body)
    taken = used | set(tensor_params)
    tensors = frozenset(set(tensor_params) | assigned)

    def fresh() -> Iterator[str]:
        i = 0
        while True:
            n = f"{PREFIX}{i}"
            i += 1
            if n not in taken:
                yield n

    return _block(body, tensors, fresh())
