"""Facts about one module that several rules share: imports, scopes, constants, jit kernels.

Rules must not each guess what `pt.maximum` or `TILE` means, so this module answers three
questions once per file:

* which dotted name an expression refers to, through the file's imports
  (`import pypto as pt`, `from pypto.frontend import jit`, `import torch.nn.functional as F`);
* the compile-time value of an expression, when it is built from literals and names bound exactly
  once in the module or an enclosing function (`N = 16384`, `TILE = (1, N // 2)`, `rows, cols =
  x.shape`), evaluated by the contract's evaluator (`consts.ScopeEvaluator`);
* for every jit kernel, which names hold tensors, which hold scalars, the annotated shapes and
  dtypes (`Tensor([DYNAMIC, 512], DT)`, `Tensor([DYNAMIC, ...], DT)`, `Tensor[[M, N], DT]`), and
  where its `pypto.loop`s are;
* which helper functions of the module a kernel calls (directly or through other helpers): they
  are kernel code too, read with what the kernel passes them.

Everything here is a heuristic over source text, tuned to miss rather than to invent: an unknown
value is `None` and an unknown kind is `Kind.UNKNOWN`, and rules stay silent on unknowns.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from pypto_tui.contract.values import DType, Ref, broadcast
from pypto_tui.lint.consts import KernelTensor, ScopeEvaluator, dims_of, is_dynamic_marker, plain_value

JIT_DECORATORS = frozenset({"pypto.frontend.jit", "pypto.jit"})
LOOP_FUNCS = frozenset({"pypto.loop", "pypto.loop_unroll"})


class Kind(enum.Enum):
    TENSOR = "tensor"
    SCALAR = "scalar"
    UNKNOWN = "unknown"


def join(kinds: list[Kind]) -> Kind:
    """Flow-insensitive merge of a name's bindings: a tensor once is a tensor."""
    if any(k is Kind.TENSOR for k in kinds):
        return Kind.TENSOR
    if kinds and all(k is Kind.SCALAR for k in kinds):
        return Kind.SCALAR
    return Kind.UNKNOWN


# pypto.* callables that do not produce a tensor (configuration, control, types).
_PYPTO_NON_TENSOR = frozenset({
    "loop", "loop_unroll", "cond", "jit", "frontend", "dynamic", "verify", "compile", "ceil_div", "symbolic_scalar",
    "is_loop_begin", "is_loop_end", "options",
})
# pypto.min / pypto.max work on symbolic scalars (loop indices), not tensors (0.2.0 operation.py).
_PYPTO_SCALAR = frozenset({"min", "max", "ceildiv", "ceil_div"})
_PYPTO_NON_TENSOR_PREFIXES = ("set_", "get_", "is_", "frontend.", "experimental.", "config.", "distributed.")
# Tensor methods whose result is not a tensor.
_NON_TENSOR_METHODS = frozenset({
    "dim", "size", "numel", "nelement", "ndimension", "stride", "is_contiguous", "item", "tolist",
    "data_ptr", "element_size", "move", "assemble", "shape", "dtype",
})
# Tensor attributes the tracer knows (Python values, or symbolic scalars for a dynamic axis).
_TRACE_ATTRS = frozenset({"shape", "dtype", "dim", "ndim", "format"})
_SCALAR_BUILTINS = frozenset({
    "float", "int", "abs", "min", "max", "len", "round", "ceil_div", "bool", "sum", "pow",
})
_DTYPE_RE = re.compile(r"(?:^|\.)DT_([A-Z0-9]+(?:_[A-Z0-9]+)*)$")


# `CSTNode.children` re-visits the node to collect them, which dominated the lint's run time.
# While a file is linted, a child table built once from the parent metadata answers instead.
_KIDS: ContextVar[Mapping[cst.CSTNode, Sequence[cst.CSTNode]] | None] = ContextVar("pypto_lint_kids", default=None)


def children(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    kids = _KIDS.get()
    if kids is not None:
        known = kids.get(node)
        if known is not None:
            return known
    return node.children


@contextmanager
def fast_children(kids: Mapping[cst.CSTNode, Sequence[cst.CSTNode]]) -> Iterator[None]:
    token = _KIDS.set(kids)
    try:
        yield
    finally:
        _KIDS.reset(token)


class _Parents(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {}
        self.end: dict[cst.CSTNode, int] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.order[node] = len(self.order)
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.end[original_node] = len(self.order) - 1
        self.stack.pop()


@dataclass
class Tree:
    """Parents, and each node's source order: `order` in pre-order, `end` the last index under it."""

    parents: dict[cst.CSTNode, cst.CSTNode]
    order: dict[cst.CSTNode, int]
    end: dict[cst.CSTNode, int]


def tree_of(module: cst.Module) -> Tree:
    """One traversal for what ParentNodeProvider gives (about 3x faster) plus source order."""
    v = _Parents()
    module.visit(v)
    return Tree(v.parents, v.order, v.end)


def child_table(parents: Mapping[cst.CSTNode, cst.CSTNode]) -> dict[cst.CSTNode, list[cst.CSTNode]]:
    """Invert ParentNodeProvider's map (it lists each parent's children in source order)."""
    kids: dict[cst.CSTNode, list[cst.CSTNode]] = {}
    for child, parent in parents.items():
        kids.setdefault(parent, []).append(child)
        kids.setdefault(child, [])
    return kids


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return f"{base}.{expr.attr.value}" if base else None
    return None


def iter_nodes(node: cst.CSTNode, *, into_defs: bool = False) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself included), not entering nested defs/classes/lambdas."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in reversed(children(n)):
            if not into_defs and isinstance(child, cst.FunctionDef | cst.ClassDef | cst.Lambda):
                continue
            stack.append(child)


def iter_load_names(expr: cst.CSTNode) -> Iterator[cst.Name]:
    """Names read by an expression or a block of statements (not attribute names, keyword names,
    lambda parameters, assignment or loop targets, nor anything inside a nested def)."""
    if isinstance(expr, cst.Name):
        yield expr
        return
    if isinstance(expr, cst.Attribute | cst.Arg):
        yield from iter_load_names(expr.value)
        return
    if isinstance(expr, cst.Lambda | cst.FunctionDef | cst.ClassDef | cst.AssignTarget):
        return
    if isinstance(expr, cst.For):
        yield from iter_load_names(expr.iter)
        yield from iter_load_names(expr.body)
        return
    if isinstance(expr, cst.AnnAssign):
        if expr.value is not None:
            yield from iter_load_names(expr.value)
        return
    for child in children(expr):
        yield from iter_load_names(child)


def value_reads(node: cst.CSTNode) -> Iterator[cst.Name | cst.Subscript]:
    """What an expression reads for its value: names, and `t.shape[i]` as a whole (not `t`, whose
    annotation fixes its shape), skipping `.shape`/`.dtype` attributes and lambdas."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape":
        yield node
        return
    if isinstance(node, cst.Attribute):
        if node.attr.value not in ("shape", "dtype"):
            yield from value_reads(node.value)
        return
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Arg):
        yield from value_reads(node.value)
        return
    if isinstance(node, cst.Lambda):
        return
    for child in children(node):
        yield from value_reads(child)


def numeric_literal(expr: cst.BaseExpression) -> float | int | None:
    """The value of `3`, `2.5`, `-1.0`, `(+4)`; None for anything else."""
    if isinstance(expr, cst.Integer | cst.Float):
        try:
            return expr.evaluated_value
        except (ValueError, SyntaxError):  # pragma: no cover - libcst validated it
            return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus | cst.Plus):
        v = numeric_literal(expr.expression)
        if v is None:
            return None
        return -v if isinstance(expr.operator, cst.Minus) else v
    return None


def call_arg(call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    """The argument at positional `index` or passed as `keyword=`; None if absent or starred."""
    pos = 0
    for a in call.args:
        if a.keyword is not None:
            if a.keyword.value == keyword:
                return a.value
            continue
        if a.star:
            return None
        if pos == index:
            return a.value
        pos += 1
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None]


# ------------------------------------------------------------------------------------- scopes
@dataclass
class Binding:
    """One way a name gets bound in a scope. `value` is the bound expression when known."""

    value: cst.BaseExpression | None
    node: cst.CSTNode
    how: str  # "assign" | "aug" | "for" | "import" | "def" | "with" | "other"


@dataclass
class Scope:
    node: cst.CSTNode  # cst.Module or cst.FunctionDef
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    params: dict[str, cst.Param] = field(default_factory=dict)

    def add(self, name: str, b: Binding) -> None:
        self.bindings.setdefault(name, []).append(b)

    def binds(self, name: str) -> bool:
        return name in self.bindings or name in self.params


def _target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, cst.Tuple | cst.List):
        for el in target.elements:
            yield from _target_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


def _bind_target(scope: Scope, target: cst.BaseExpression, value: cst.BaseExpression | None,
                 node: cst.CSTNode, how: str) -> None:
    if isinstance(target, cst.Name):
        scope.add(target.value, Binding(value, node, how))
        return
    if isinstance(target, cst.Tuple | cst.List):
        vals: list[cst.BaseExpression] | None = None
        starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
        literal = isinstance(value, cst.Tuple | cst.List)
        if literal and not starred and len(value.elements) == len(target.elements) and not any(  # type: ignore[union-attr]
            isinstance(e, cst.StarredElement) for e in value.elements  # type: ignore[union-attr]
        ):
            vals = [e.value for e in value.elements]  # type: ignore[union-attr]
        elif value is not None and not starred and not literal:
            # `rows, cols = x.shape`: each name is bound to `x.shape[i]` (a node outside the tree,
            # only ever evaluated)
            vals = [_item(value, i) for i in range(len(target.elements))]
        for i, el in enumerate(target.elements):
            _bind_target(scope, el.value, vals[i] if vals else None, node, how)
        return
    if isinstance(target, cst.StarredElement):
        _bind_target(scope, target.value, None, node, how)
    # attribute / subscript targets bind no name


def _item(value: cst.BaseExpression, i: int) -> cst.BaseExpression:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(cst.Integer(str(i))))])


# ------------------------------------------------------------------------------------- kernels
Shape = tuple[int | None, ...]

# pypto functions (and tensor methods) whose result has the broadcast shape of their tensor arguments.
_ELEMENTWISE = frozenset({
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "relu", "sigmoid", "tanh", "maximum", "minimum",
    "reciprocal", "add", "sub", "mul", "div", "neg", "pow", "clip", "clamp", "where", "cast", "lrelu", "sin",
    "cos", "erf", "gelu", "silu", "square", "sign", "floor", "ceil", "round", "softmax", "log_softmax",
    "logical_not", "fmod", "remainder", "hypot", "exp2", "log2",
})
_REDUCE_FUNCS = frozenset({"sum", "amax", "amin", "prod", "mean"})


@dataclass
class TensorShape:
    """A tensor whose rank (and maybe shape and dtype) the source states."""

    name: str
    rank: int | None
    shape: tuple[int | None, ...] | None
    dtype: str | None
    node: cst.CSTNode
    dynamic: frozenset[int] = frozenset()
    """The axes declared dynamic (`pypto.DYNAMIC`, `pypto.frontend.dynamic(...)`): their size is a
    symbolic scalar. An axis whose size is merely unknown here (a factory parameter) is not."""

    @property
    def known(self) -> tuple[int, ...] | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return tuple(d for d in self.shape if d is not None)


@dataclass
class KernelInfo:
    node: cst.FunctionDef
    scope: Scope
    params: list[str]
    tensor_params: dict[str, TensorShape]
    kinds: dict[str, Kind]
    loops: list[cst.For]
    local_tensors: list[TensorShape]
    shape_env: dict[str, Shape | None] = field(default_factory=dict)
    shape_memo: dict[cst.CSTNode, Shape | None] = field(default_factory=dict)
    via: tuple[str, ...] = ()
    """For a helper: the jit kernel that reaches it and the helpers in between (kernel first)."""

    @property
    def name(self) -> str:
        return self.node.name.value

    @property
    def is_helper(self) -> bool:
        return bool(self.via)

    def where(self) -> str:
        """' (in helper `h`, called from jit kernel `k`)' for a helper, '' for a kernel."""
        if not self.via:
            return ""
        chain = " -> ".join((*self.via[1:], self.name))
        return f" (in helper `{chain}`, called from jit kernel `{self.via[0]}`)"

    def all_tensors(self) -> list[TensorShape]:
        return [*self.tensor_params.values(), *self.local_tensors]

    def ranks(self) -> set[int]:
        return {t.rank for t in self.all_tensors() if t.rank}


class ModuleInfo:
    """Built once per module (the wrapper's copy, so node identities match the rules')."""

    def __init__(self, module: cst.Module, tree: Tree | None = None) -> None:
        self.module = module
        self.tree = tree or tree_of(module)
        self._parents = self.tree.parents
        self.kids = child_table(self._parents)
        with fast_children(self.kids):
            self._build(module)

    def _build(self, module: cst.Module) -> None:
        self.aliases: dict[str, str] = {}
        self.scopes: dict[cst.CSTNode, Scope] = {}
        self._collect_imports(module)
        self.module_scope = self._build_scope(module, None)
        self.values = ScopeEvaluator(self)
        self.kernels: dict[cst.FunctionDef, KernelInfo] = {}
        self.helpers: dict[cst.FunctionDef, KernelInfo] = {}
        for fn, scope in self.scopes.items():
            if isinstance(fn, cst.FunctionDef) and self.is_jit(fn):
                self.kernels[fn] = self._kernel(fn, scope)
        self._follow_helpers()

    # -------------------------------------------------------------- names
    def _collect_imports(self, module: cst.Module) -> None:
        for node in iter_nodes(module, into_defs=True):
            if isinstance(node, cst.Import):
                for alias in node.names:
                    full = dotted(alias.name) or ""
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        self.aliases[alias.asname.name.value] = full
                    else:
                        head = full.split(".", 1)[0]
                        self.aliases[head] = head
            elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
                base = dotted(node.module) or ""
                if isinstance(node.names, cst.ImportStar):
                    continue
                for alias in node.names:
                    name = dotted(alias.name) or ""
                    local = name
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        local = alias.asname.name.value
                    self.aliases[local] = f"{base}.{name}"

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The dotted name `expr` refers to through the imports (`pt.exp` -> `pypto.exp`)."""
        d = dotted(expr)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        target = self.aliases.get(head, head)
        return f"{target}.{rest}" if rest else target

    def pypto_name(self, expr: cst.BaseExpression) -> str | None:
        """`exp` for `pypto.exp`/`pt.exp`, None if `expr` is not under pypto."""
        q = self.qualify(expr)
        if q and q.startswith("pypto."):
            return q[len("pypto."):]
        return None

    def pypto_call(self, node: cst.CSTNode, *names: str) -> str | None:
        """The pypto function a Call invokes (restricted to `names` when given)."""
        if not isinstance(node, cst.Call):
            return None
        name = self.pypto_name(node.func)
        if name is None or (names and name not in names):
            return None
        return name

    def pypto_alias(self) -> str:
        """How this file spells the pypto module (for code a fix inserts)."""
        for local, target in sorted(self.aliases.items()):
            if target == "pypto":
                return local
        return "pypto"

    def jit_decorators(self, fn: cst.FunctionDef) -> list[cst.Decorator]:
        """The decorators of `fn` that make it a jit kernel (`@pypto.frontend.jit`, `@pypto.jit`, with
        or without options)."""
        out = []
        for d in fn.decorators:
            expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if self.qualify(expr) in JIT_DECORATORS:
                out.append(d)
        return out

    def is_jit(self, fn: cst.FunctionDef) -> bool:
        return bool(self.jit_decorators(fn))

    def is_pypto_loop(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.For) and isinstance(node.iter, cst.Call) and (
            self.qualify(node.iter.func) in LOOP_FUNCS
        )

    # -------------------------------------------------------------- parents and order
    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """`a` starts before `b` in the source."""
        return self.tree.order[a] < self.tree.order[b]

    def after_end(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """`a` starts after the whole of `b` (its last descendant) in the source."""
        return self.tree.order[a] > self.tree.end[b]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def kernel_of(self, node: cst.CSTNode) -> KernelInfo | None:
        """The innermost jit kernel, or helper a kernel calls, around `node` (a def line counts as
        inside)."""
        for a in (node, *self.ancestors(node)):
            if isinstance(a, cst.FunctionDef):
                found = self.kernels.get(a) or self.helpers.get(a)
                if found is not None:
                    return found
        return None

    def loop_variable(self, binding: Binding, name: str) -> str | None:
        """How a `for` binding's variable behaves in a kernel: "symbolic" for a pypto.loop index (and
        loop_unroll's index), "static" for a plain int the trace unrolls (loop_unroll's factor, a
        Python `range` or list loop); None when `binding` is not a `for`."""
        loop = binding.node
        if binding.how != "for" or not isinstance(loop, cst.For):
            return None
        q = self.qualify(loop.iter.func) if isinstance(loop.iter, cst.Call) else None
        if q == "pypto.loop":
            return "symbolic"
        if q == "pypto.loop_unroll":
            target = loop.target
            if isinstance(target, cst.Tuple | cst.List) and len(target.elements) == 2:
                first = target.elements[0].value
                return "symbolic" if isinstance(first, cst.Name) and first.value == name else "static"
            return "symbolic"
        return "static"

    def loops_around(self, node: cst.CSTNode) -> list[cst.For]:
        """The pypto.loop statements whose body holds `node`, innermost first (within one def)."""
        out: list[cst.For] = []
        child = node
        for a in self.ancestors(node):
            if isinstance(a, cst.FunctionDef | cst.ClassDef | cst.Lambda):
                break
            if self.is_pypto_loop(a) and child is a.body:  # type: ignore[attr-defined]
                out.append(a)  # type: ignore[arg-type]
            child = a
        return out

    def scope_of(self, node: cst.CSTNode) -> Scope:
        for a in (node, *self.ancestors(node)):
            if a in self.scopes:
                return self.scopes[a]
        return self.module_scope

    # -------------------------------------------------------------- scopes
    def _build_scope(self, owner: cst.CSTNode, parent: Scope | None) -> Scope:
        scope = Scope(owner, parent)
        self.scopes[owner] = scope
        if isinstance(owner, cst.FunctionDef):
            ps = owner.params
            for p in (*ps.posonly_params, *ps.params, *ps.kwonly_params):
                scope.params[p.name.value] = p
            for star in (ps.star_arg, ps.star_kwarg):
                if isinstance(star, cst.Param):
                    scope.params[star.name.value] = star
            body: cst.CSTNode = owner.body
        else:
            body = owner
        self._walk_body(body, scope, scope)
        return scope

    def _walk_body(self, node: cst.CSTNode, scope: Scope, fn_parent: Scope) -> None:
        for child in children(node):
            if isinstance(child, cst.FunctionDef):
                scope.add(child.name.value, Binding(None, child, "def"))
                self._build_scope(child, fn_parent)
                continue
            if isinstance(child, cst.ClassDef):
                scope.add(child.name.value, Binding(None, child, "def"))
                # Methods see the enclosing function/module scope, not the class body.
                self._walk_class(child, fn_parent)
                continue
            if isinstance(child, cst.Lambda):
                continue
            if isinstance(child, cst.Assign):
                for t in child.targets:
                    _bind_target(scope, t.target, child.value, child, "assign")
            elif isinstance(child, cst.AnnAssign):
                _bind_target(scope, child.target, child.value, child, "assign")
            elif isinstance(child, cst.AugAssign):
                for n in _target_names(child.target):
                    scope.add(n.value, Binding(child.value, child, "aug"))
            elif isinstance(child, cst.For):
                for n in _target_names(child.target):
                    scope.add(n.value, Binding(None, child, "for"))
            elif isinstance(child, cst.WithItem) and child.asname is not None:
                for n in _target_names(child.asname.name):
                    scope.add(n.value, Binding(None, child, "with"))
            elif isinstance(child, cst.Import | cst.ImportFrom):
                names = child.names
                if not isinstance(names, cst.ImportStar):
                    for alias in names:
                        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                            local = alias.asname.name.value
                        else:
                            local = (dotted(alias.name) or "").split(".", 1)[0]
                        scope.add(local, Binding(None, child, "import"))
            elif isinstance(child, cst.NamedExpr) and isinstance(child.target, cst.Name):
                scope.add(child.target.value, Binding(child.value, child, "assign"))
            elif isinstance(child, cst.ExceptHandler) and child.name is not None:
                for n in _target_names(child.name.name):
                    scope.add(n.value, Binding(None, child, "other"))
            elif isinstance(child, cst.CompFor):
                continue  # comprehension variables do not leak
            self._walk_body(child, scope, fn_parent)

    def _walk_class(self, cls: cst.ClassDef, fn_parent: Scope) -> None:
        for child in children(cls.body):
            self._walk_class_child(child, fn_parent)

    def _walk_class_child(self, node: cst.CSTNode, fn_parent: Scope) -> None:
        if isinstance(node, cst.FunctionDef):
            self._build_scope(node, fn_parent)
            return
        if isinstance(node, cst.ClassDef):
            self._walk_class(node, fn_parent)
            return
        for child in children(node):
            self._walk_class_child(child, fn_parent)

    def lookup(self, name: str, scope: Scope) -> tuple[Scope | None, list[Binding] | None]:
        """The scope that binds `name` seen from `scope`, and its bindings (None for a param)."""
        s: Scope | None = scope
        while s is not None:
            if name in s.params:
                return s, None
            if name in s.bindings:
                return s, s.bindings[name]
            s = s.parent
        return None, None

    # -------------------------------------------------------------- constants
    def const_value(self, expr: cst.BaseExpression, scope: Scope) -> Any:
        """The compile-time value of `expr` (int, float, bool or a tuple of them), else None."""
        return plain_value(self.values.value(expr, scope))

    def param_tensor(self, scope: Scope, name: str) -> KernelTensor | None:
        """A tensor parameter of a kernel (or helper) scope, as the evaluator sees it (`x.shape`)."""
        fn = scope.node
        if not isinstance(fn, cst.FunctionDef):
            return None
        info = self.kernels.get(fn) or self.helpers.get(fn)
        if info is not None:
            t = info.tensor_params.get(name)
            return KernelTensor(t.shape, t.dtype) if t is not None else None
        if self.is_jit(fn):  # while the kernel itself is being read
            p = scope.params.get(name)
            ann = self.tensor_annotation(p, scope.parent or self.module_scope) if p is not None else None
            return KernelTensor(ann.shape, ann.dtype) if ann is not None else None
        return None

    # -------------------------------------------------------------- kernels
    def _kernel(self, fn: cst.FunctionDef, scope: Scope) -> KernelInfo:
        outer = scope.parent or self.module_scope
        tparams: dict[str, TensorShape] = {}
        kinds: dict[str, Kind] = {}
        for p in _params(fn):
            name = p.name.value
            ann = self.tensor_annotation(p, outer)
            if ann is not None:
                tparams[name] = ann
                kinds[name] = Kind.TENSOR
            elif _scalar_param(p, self.qualify):
                kinds[name] = Kind.SCALAR
            else:
                kinds[name] = Kind.UNKNOWN
        return self._function_info(fn, scope, tparams, kinds, ())

    def _function_info(self, fn: cst.FunctionDef, scope: Scope, tparams: dict[str, TensorShape],
                       param_kinds: dict[str, Kind], via: tuple[str, ...]) -> KernelInfo:
        """What a kernel (or a helper it reaches) holds: kinds and shapes of its names, its loops and
        the tensors it makes, from what its parameters are known to be."""
        kinds = dict(param_kinds)
        info = KernelInfo(fn, scope, [p.name.value for p in _params(fn)], tparams, kinds, [], [], via=via)
        # Kinds of the function's own names: iterate to a fixed point (bindings may refer forward).
        for _ in range(6):
            changed = False
            for name, bindings in scope.bindings.items():
                ks = [self._binding_kind(b, info) for b in bindings]
                if name in param_kinds:
                    ks.append(param_kinds[name])
                new = join(ks)
                if kinds.get(name) is not new:
                    kinds[name] = new
                    changed = True
            if not changed:
                break
        # Shapes of the function's names (two passes, so a name used before its binding settles).
        for _ in range(2):
            info.shape_memo.clear()
            for name, bindings in scope.bindings.items():
                if name in tparams:
                    continue
                found = {self.shape_of(b.value, info) if b.how == "assign" and b.value is not None else None
                         for b in bindings}
                info.shape_env[name] = found.pop() if len(found) == 1 else None
        seen: set[tuple[Shape, str | None]] = set()
        for node in iter_nodes(fn.body):
            if self.is_pypto_loop(node):
                info.loops.append(node)  # type: ignore[arg-type]
            if not isinstance(node, cst.Call | cst.BinaryOperation | cst.UnaryOperation):
                continue
            made = self._local_tensor(node, scope)
            if made is not None and made.shape is not None:
                shape: Shape | None = made.shape
                dtype = made.dtype
            elif self.kind_of(node, info) is Kind.TENSOR:
                shape, dtype = self.shape_of(node, info), None
            else:
                continue
            if shape is None or (shape, dtype) in seen:
                continue
            seen.add((shape, dtype))
            info.local_tensors.append(TensorShape("", len(shape), shape, dtype, node))
        return info

    # -------------------------------------------------------------- helpers a kernel calls
    def _follow_helpers(self) -> None:
        """Every function of the module a kernel calls, directly or through other helpers, read as
        kernel code with what its callers pass it (a parameter's kind, shape and dtype are known
        when every call site agrees)."""
        sites: dict[cst.FunctionDef, list[tuple[KernelInfo, cst.Call]]] = {}
        frontier = list(self.kernels.values())
        done: set[cst.FunctionDef] = set(self.kernels)
        for _ in range(MAX_HELPER_DEPTH):
            reached: list[cst.FunctionDef] = []
            for caller in frontier:
                for call, fn in self._helper_calls(caller):
                    sites.setdefault(fn, []).append((caller, call))
                    if fn not in done:
                        done.add(fn)
                        reached.append(fn)
            if not reached:
                break
            for fn in reached:
                first = sites[fn][0][0]
                via = (*first.via, first.name) if first.via else (first.name,)
                self.helpers[fn] = self._helper_info(fn, sites[fn], via)
            frontier = [self.helpers[fn] for fn in reached]

    def _helper_calls(self, caller: KernelInfo) -> Iterator[tuple[cst.Call, cst.FunctionDef]]:
        for node in iter_nodes(caller.node.body):
            fn = self.called_function(node)
            if fn is not None and fn not in self.kernels and not self._trace_time(fn, node, caller):  # type: ignore[arg-type]
                yield node, fn  # type: ignore[misc]

    def _trace_time(self, fn: cst.FunctionDef, call: cst.Call, caller: KernelInfo) -> bool:
        """A helper that runs as plain Python while the kernel is traced (`unroll_list=powers_of_2(32)`):
        it is passed no tensor and names nothing of pypto, so it records no kernel code."""
        if any(self.kind_of(a.value, caller) is not Kind.SCALAR for a in call.args):
            return False
        return not any(isinstance(n, cst.Name | cst.Attribute) and self.pypto_name(n) is not None
                       for n in iter_nodes(fn.body))

    def _test_value(self, test: cst.BaseExpression, scope: Scope) -> Any:
        """An `if` test's compile-time value; `x is None` / `x is not None` for a name bound once to
        None too (`bias = None` ... `if bias is not None:`)."""
        if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Is | cst.IsNot)):
            right = test.comparisons[0].comparator
            if isinstance(right, cst.Name) and right.value == "None" and isinstance(test.left, cst.Name):
                _owner, bindings = self.lookup(test.left.value, scope)
                if bindings is not None and len(bindings) == 1 and bindings[0].how == "assign":
                    value = bindings[0].value
                    is_none = isinstance(value, cst.Name) and value.value == "None"
                    if is_none or isinstance(value, cst.Integer | cst.Float | cst.SimpleString):
                        return is_none == isinstance(test.comparisons[0].operator, cst.Is)
            return None
        return self.const_value(test, scope)

    def is_dead(self, node: cst.CSTNode) -> bool:
        """`node` lies in a branch of an `if` whose test is a compile-time constant that never takes
        it (`k = 0` ... `if k < LIMIT: ... else: <dead>`): the tracer never records it."""
        child = node
        for a in self.ancestors(node):
            if isinstance(a, cst.If) and child is not a.test:
                taken = self._test_value(a.test, self.scope_of(a))
                if isinstance(taken, bool | int | float) and (child is a.body) != bool(taken):
                    return True
            if isinstance(a, cst.Module):
                break
            child = a
        return False

    def called_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function of this module a call `f(...)` runs, when `f` is bound once to a def."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name):
            return None
        owner, bindings = self.lookup(node.func.value, self.scope_of(node))
        if owner is None or not bindings or len(bindings) != 1 or bindings[0].how != "def":
            return None
        fn = bindings[0].node
        return fn if isinstance(fn, cst.FunctionDef) and fn in self.scopes else None

    def symbolic_reason(self, expr: cst.BaseExpression, k: KernelInfo) -> str | None:
        """Why `expr` is a symbolic scalar in kernel (or helper) `k`, as a sentence: it reads a
        pypto.loop index, a dynamic axis (`x.shape[0]` of a `[DYNAMIC, ...]` tensor) or a local
        computed from one. None when it is a compile-time value as far as the source shows
        (constants, closure values, loop_unroll factors, Python range indices, a helper's params)."""
        found = self._symbolic_root(expr, k, frozenset())
        if found is None:
            return None
        via, root = found
        return f"'{via}' depends on {root}" if via else f"it reads {root}"

    def _symbolic_root(self, expr: cst.BaseExpression, k: KernelInfo,
                       seen: frozenset[str]) -> tuple[str | None, str] | None:
        """(the local it comes through, the symbolic source) for the first symbolic read in `expr`."""
        for part in value_reads(expr):
            if isinstance(part, cst.Subscript):
                axis = self._dynamic_axis(part, k)
                if axis is not None:
                    return None, f"the dynamic axis {axis}"
                continue
            name = part.value
            owner, bindings = self.lookup(name, k.scope)
            if name in seen or owner is not k.scope or bindings is None:
                continue
            for b in bindings:
                how = self.loop_variable(b, name)
                if how == "symbolic":
                    return None, f"the pypto.loop index '{name}'"
                if how is None and b.how in ("assign", "aug") and b.value is not None:
                    inner = self._symbolic_root(b.value, k, seen | {name})
                    if inner is not None:
                        return name, inner[1]
        return None

    def _dynamic_axis(self, expr: cst.Subscript, k: KernelInfo) -> str | None:
        base = expr.value.value  # type: ignore[attr-defined]
        if not isinstance(base, cst.Name) or base.value not in k.tensor_params or len(expr.slice) != 1:
            return None
        t = k.tensor_params[base.value]
        sl = expr.slice[0].slice
        if not isinstance(sl, cst.Index):
            return None
        axis = self.const_value(sl.value, k.scope)
        if not isinstance(axis, int) or isinstance(axis, bool) or t.shape is None:
            return None
        if -len(t.shape) <= axis < len(t.shape) and axis % len(t.shape) in t.dynamic:
            return f"{base.value}.shape[{axis}]"
        return None

    def _helper_info(self, fn: cst.FunctionDef, sites: list[tuple[KernelInfo, cst.Call]],
                     via: tuple[str, ...]) -> KernelInfo:
        params = _params(fn)
        seen_args: dict[str, list[tuple[Kind, Shape | None, str | None]]] = {p.name.value: [] for p in params}
        for caller, call in sites:
            for name, arg in _bind_call(params, call):
                kind = self.kind_of(arg, caller)
                shape = self.shape_of(arg, caller) if kind is Kind.TENSOR else None
                seen_args[name].append((kind, shape, self.dtype_in(arg, caller) if kind is Kind.TENSOR else None))
        kinds: dict[str, Kind] = {}
        tparams: dict[str, TensorShape] = {}
        for p in params:
            name = p.name.value
            got = seen_args[name]
            # a parameter no call site sets keeps its default: a Python value, never a tensor
            kinds[name] = join([k for k, _, _ in got]) if got else Kind.UNKNOWN
            if len(got) != len(sites):
                kinds[name] = Kind.UNKNOWN if kinds[name] is Kind.TENSOR else kinds[name]
            if kinds[name] is Kind.TENSOR:
                shapes = {s for _, s, _ in got}
                dtypes = {d for _, _, d in got}
                shape = shapes.pop() if len(shapes) == 1 else None
                tparams[name] = TensorShape(name, len(shape) if shape is not None else None, shape,
                                            dtypes.pop() if len(dtypes) == 1 else None, p)
        return self._function_info(fn, self.scopes[fn], tparams, kinds, via)

    def dtype_in(self, expr: cst.BaseExpression, k: KernelInfo, depth: int = 0) -> str | None:
        """The declared dtype of a tensor expression that is a parameter or a view of one, also
        through a local bound once to such a view (`block = pypto.view(x, ...)` handed to a helper
        that sets its own tile: the helper's alignment check needs the dtype)."""
        if isinstance(expr, cst.Name) and expr.value in k.tensor_params:
            return k.tensor_params[expr.value].dtype
        if isinstance(expr, cst.Name) and depth < MAX_HELPER_DEPTH:
            owner, bindings = self.lookup(expr.value, k.scope)
            if owner is k.scope and bindings is not None and len(bindings) == 1 and bindings[0].how == "assign" \
                    and bindings[0].value is not None:
                return self.dtype_in(bindings[0].value, k, depth + 1)
            return None
        if isinstance(expr, cst.Call) and self.pypto_call(expr, "view") is not None:
            src = call_arg(expr, 0, "input")
            return self.dtype_in(src, k, depth + 1) if src is not None else None
        if isinstance(expr, cst.Call) and self.pypto_call(expr, "matmul") is not None:
            # the result's dtype is the one the call asks for, whatever the operands are (fp16 in, fp32 out)
            return self.dtype_of(call_arg(expr, 2, "out_dtype"), k.scope)
        return None

    # -------------------------------------------------------------- shapes
    def shape_of(self, expr: cst.BaseExpression, k: KernelInfo) -> Shape | None:
        """The shape of a tensor expression when the kernel's stated shapes determine it."""
        if expr in k.shape_memo:
            return k.shape_memo[expr]
        k.shape_memo[expr] = None  # guards against cycles
        try:
            shape = self._shape_of(expr, k)
        except (ArithmeticError, ValueError, TypeError, IndexError, RecursionError):
            shape = None
        k.shape_memo[expr] = shape
        return shape

    def _tensor_shapes(self, exprs: Sequence[cst.BaseExpression], k: KernelInfo) -> list[Shape] | None:
        shapes = []
        for e in exprs:
            kind = self.kind_of(e, k)
            if kind is Kind.SCALAR:
                continue
            s = self.shape_of(e, k)
            if s is None:
                return None
            shapes.append(s)
        return shapes or None

    def _shape_of(self, expr: cst.BaseExpression, k: KernelInfo) -> Shape | None:
        if isinstance(expr, cst.Name):
            if expr.value in k.tensor_params:
                return k.tensor_params[expr.value].shape
            return k.shape_env.get(expr.value)
        if isinstance(expr, cst.UnaryOperation):
            return self.shape_of(expr.expression, k)
        if isinstance(expr, cst.BinaryOperation):
            if self.kind_of(expr, k) is not Kind.TENSOR:
                return None
            shapes = self._tensor_shapes([expr.left, expr.right], k)
            return broadcast(*shapes) if shapes else None
        if not isinstance(expr, cst.Call):
            return None
        pname = self.pypto_name(expr.func)
        args = [a.value for a in expr.args if a.keyword is None and not a.star]
        method = None
        if pname is None and isinstance(expr.func, cst.Attribute) and self.kind_of(expr.func.value, k) is Kind.TENSOR:
            method = expr.func.attr.value
            args = [expr.func.value, *args]
        op = pname or method
        if op is None:
            return None
        if pname in ("tensor", "zeros", "ones", "full", "empty", "view"):
            made = self._local_tensor(expr, k.scope)
            return made.shape if made else None
        if op in ("reshape", "expand_clone", "expand") and len(args) >= 2:
            _rank, shape = self._shape(args[1], k.scope)
            return shape
        if op in _REDUCE_FUNCS:
            if not args:
                return None
            src = self.shape_of(args[0], k)
            shift = 0 if pname else 1  # a method's dim is its first argument
            dim_e = call_arg(expr, 1 - shift, "dim")
            keep_e = call_arg(expr, 2 - shift, "keepdim")
            dim = self.const_value(dim_e, k.scope) if dim_e is not None else None
            keep = self.const_value(keep_e, k.scope) if keep_e is not None else False
            if src is None or not isinstance(dim, int) or isinstance(dim, bool) or not isinstance(keep, bool):
                return None
            d = dim + len(src) if dim < 0 else dim
            if not 0 <= d < len(src):
                return None
            return (*src[:d], 1, *src[d + 1:]) if keep else (*src[:d], *src[d + 1:])
        if op == "matmul" and len(args) >= 2:
            a, b = self.shape_of(args[0], k), self.shape_of(args[1], k)
            if a is None or b is None or len(a) < 2 or len(b) < 2:
                return None
            a_t = self.const_value(call_arg(expr, 99, "a_trans") or cst.Name("False"), k.scope)
            b_t = self.const_value(call_arg(expr, 99, "b_trans") or cst.Name("False"), k.scope)
            rows = a[-1] if a_t else a[-2]
            cols = b[-2] if b_t else b[-1]
            return (*a[:-2], rows, cols)
        if op in _ELEMENTWISE:
            shapes = self._tensor_shapes(args, k)
            return broadcast(*shapes) if shapes else None
        return None

    def _binding_kind(self, b: Binding, info: KernelInfo) -> Kind:
        if b.how == "for":
            it = b.node.iter if isinstance(b.node, cst.For) else None
            if isinstance(it, cst.Call) and (self.qualify(it.func) in LOOP_FUNCS or self.qualify(it.func) == "range"):
                return Kind.SCALAR
            return Kind.UNKNOWN
        if b.value is None:
            return Kind.UNKNOWN
        k = self.kind_of(b.value, info)
        if b.how == "aug" and isinstance(b.node, cst.AugAssign):
            return join([k, self.kind_of(b.node.target, info)]) if k is not Kind.TENSOR else k
        return k

    def tensor_annotation(self, p: cst.Param, scope: Scope) -> TensorShape | None:
        """`pypto.Tensor((16, n), pypto.DT_FP16)` (or `pypto.Tensor[[16, n], pypto.DT_FP16]`) on a
        parameter -> its rank, shape and dtype. `pypto.DYNAMIC` is an axis of unknown size; `...`
        or an empty shape leave the rank unknown."""
        if p.annotation is None:
            return None
        ann = p.annotation.annotation
        shape_expr: cst.BaseExpression | None
        dtype_expr: cst.BaseExpression | None
        if isinstance(ann, cst.Call) and self.pypto_name(ann.func) == "Tensor":
            shape_expr, dtype_expr = call_arg(ann, 0, "shape"), call_arg(ann, 1, "dtype")
        elif isinstance(ann, cst.Subscript) and self.pypto_name(ann.value) == "Tensor":
            items = [el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]
            shape_expr = items[0] if items else None
            dtype_expr = items[1] if len(items) > 1 else None
        elif self.pypto_name(ann) == "Tensor":
            return TensorShape(p.name.value, None, None, None, p)
        else:
            return None
        rank, shape = self._shape(shape_expr, scope)
        if rank == 0:  # `pypto.Tensor([], DT)`: a dynamic shape, of any rank
            rank, shape = None, None
        dynamic = self._dynamic_axes(shape_expr, scope) if shape is not None else frozenset()
        return TensorShape(p.name.value, rank, shape, self.dtype_of(dtype_expr, scope), p, dynamic)

    def _dynamic_axes(self, expr: cst.BaseExpression | None, scope: Scope) -> frozenset[int]:
        v = self.values.value(expr, scope) if expr is not None else None
        if not isinstance(v, list | tuple):
            return frozenset()
        return frozenset(i for i, d in enumerate(v) if is_dynamic_marker(d))

    def _shape(self, expr: cst.BaseExpression | None, scope: Scope) -> tuple[int | None, tuple[int | None, ...] | None]:
        """(rank, dims) of a shape expression: a list/tuple, or a name or call giving one, or one size."""
        if expr is None:
            return None, None
        v = self.values.value(expr, scope)
        if isinstance(v, list | tuple):
            dims = dims_of(v)
            return (len(dims), dims) if dims is not None else (None, None)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return 1, (v,)
        return None, None

    def dtype_of(self, expr: cst.BaseExpression | None, scope: Scope | None = None) -> str | None:
        """The dtype an expression names (`pypto.DT_FP16`, `pypto.DataType.DT_FP16`, a constant
        holding one, `x.dtype` of a declared tensor), lower-case without the DT_ ('fp16')."""
        if expr is None:
            return None
        v = self.values.value(expr, scope or self.module_scope)
        if isinstance(v, DType):
            return v.name
        d = v.dotted if isinstance(v, Ref) else dotted(expr)
        if d is None:
            return None
        mt = _DTYPE_RE.search(d)
        return mt.group(1).lower() if mt else None

    def _local_tensor(self, node: cst.CSTNode, scope: Scope) -> TensorShape | None:
        """Tensors a kernel makes with a stated shape: pypto.tensor / zeros / full / view."""
        name = self.pypto_call(node, "tensor", "zeros", "ones", "full", "empty", "view")
        if name is None:
            return None
        call: cst.Call = node  # type: ignore[assignment]
        if name == "view":
            shape_expr = call_arg(call, 1, "shape")
            dtype = None
        elif name in ("zeros", "ones", "empty"):
            pos = positional_args(call)
            if len(pos) == 1:
                shape_expr = pos[0].value
            elif pos:
                shape_expr = cst.Tuple([cst.Element(a.value) for a in pos])
            else:
                shape_expr = call_arg(call, 0, "size")
            dtype = self.dtype_of(call_arg(call, 99, "dtype"), scope) or "fp32"
        else:
            shape_expr = call_arg(call, 0, "shape") or call_arg(call, 0, "size")
            dtype = self.dtype_of(call_arg(call, 1, "dtype"), scope) if name == "tensor" else None
        if shape_expr is None:
            return None
        if name != "view" and not isinstance(shape_expr, cst.Tuple | cst.List):
            v = self.const_value(shape_expr, scope)
            if isinstance(v, int) and not isinstance(v, bool):
                shape_expr = cst.Tuple([cst.Element(shape_expr)])  # `pypto.zeros(N)`: one axis
            elif not isinstance(v, tuple):
                return None  # a size or a shape the source does not show
        rank, shape = self._shape(shape_expr, scope)
        if rank is None:
            return None
        return TensorShape("", rank, shape, dtype, node)

    def kind_of(self, expr: cst.BaseExpression, info: KernelInfo | None) -> Kind:
        """TENSOR / SCALAR / UNKNOWN for an expression inside kernel `info`."""
        if numeric_literal(expr) is not None or isinstance(expr, cst.Integer | cst.Float | cst.Imaginary):
            return Kind.SCALAR
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return Kind.SCALAR
            if info is not None and (expr.value in info.scope.bindings or expr.value in info.scope.params):
                return info.kinds.get(expr.value, Kind.UNKNOWN)
            # Bound outside the kernel: a Python value captured at trace time, never a pypto tensor.
            return Kind.SCALAR
        if isinstance(expr, cst.Attribute):
            if self.pypto_name(expr) is not None:
                return Kind.SCALAR
            base = self.kind_of(expr.value, info)
            if expr.attr.value in ("T", "mT") and base is Kind.TENSOR:
                return Kind.TENSOR
            if expr.attr.value in _TRACE_ATTRS and base is Kind.TENSOR:
                return Kind.SCALAR  # `x.shape`, `x.dtype`: known when the kernel is traced
            return Kind.UNKNOWN
        if isinstance(expr, cst.Call):
            pname = self.pypto_name(expr.func)
            if pname is not None:
                if pname in _PYPTO_SCALAR:
                    return Kind.SCALAR
                if (pname in _PYPTO_NON_TENSOR or pname.startswith(_PYPTO_NON_TENSOR_PREFIXES)
                        or pname[:1].isupper()):
                    return Kind.UNKNOWN
                return Kind.TENSOR
            if isinstance(expr.func, cst.Attribute) and self.kind_of(expr.func.value, info) is Kind.TENSOR:
                return Kind.UNKNOWN if expr.func.attr.value in _NON_TENSOR_METHODS else Kind.TENSOR
            q = self.qualify(expr.func)
            arg_kinds = [self.kind_of(a.value, info) for a in expr.args]
            if q is not None and (q in _SCALAR_BUILTINS or q.startswith("math.")):
                return Kind.SCALAR if Kind.TENSOR not in arg_kinds else Kind.UNKNOWN
            return Kind.UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            return join([self.kind_of(expr.left, info), self.kind_of(expr.right, info)])
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return Kind.SCALAR
            return self.kind_of(expr.expression, info)
        if isinstance(expr, cst.Subscript):
            return self._subscript_kind(expr, info)
        if isinstance(expr, cst.IfExp):
            return join([self.kind_of(expr.body, info), self.kind_of(expr.orelse, info)])
        if isinstance(expr, cst.Comparison):
            parts = [self.kind_of(expr.left, info), *(self.kind_of(c.comparator, info) for c in expr.comparisons)]
            return join(parts)
        return Kind.UNKNOWN

    def _subscript_kind(self, expr: cst.Subscript, info: KernelInfo | None) -> Kind:
        """`x[i]` of a tensor: a view when any index is a slice or there are fewer indices than axes,
        one element (a scalar, PyPTO's GetTensorData) when every axis gets an index; unknown when the
        rank is not known. `x.shape[i]` and other subscripts of scalars are scalars."""
        base = self.kind_of(expr.value, info)
        if base is Kind.SCALAR:
            return Kind.SCALAR
        if base is not Kind.TENSOR:
            return Kind.UNKNOWN
        indices: list[cst.BaseExpression] = []
        for el in expr.slice:
            if not isinstance(el.slice, cst.Index) or el.slice.star is not None:
                return Kind.TENSOR  # a slice `a:b` or `*idx`
            if isinstance(el.slice.value, cst.Ellipsis):
                return Kind.TENSOR
            indices.append(el.slice.value)
        if len(indices) == 1 and isinstance(indices[0], cst.Tuple):
            return Kind.UNKNOWN  # `x[(i, j)]`: not how kernels are written; say nothing
        if any(self.kind_of(i, info) is Kind.TENSOR for i in indices):
            return Kind.TENSOR  # a gather by an index tensor
        rank = self.rank_of(expr.value, info)
        if rank is None:
            return Kind.UNKNOWN
        return Kind.SCALAR if len(indices) >= rank else Kind.TENSOR

    def rank_of(self, expr: cst.BaseExpression, info: KernelInfo | None) -> int | None:
        """The rank of a tensor expression when the source states it."""
        if info is None:
            return None
        if isinstance(expr, cst.Name) and expr.value in info.tensor_params:
            return info.tensor_params[expr.value].rank
        shape = self.shape_of(expr, info)
        return len(shape) if shape is not None else None

    def loop_dependent(self, loop: cst.For) -> set[str]:
        """The loop's index names and every name the body derives from them (`off = i * B`)."""
        names = {n.value for n in _target_names(loop.target)}
        assigns: list[tuple[list[str], cst.BaseExpression]] = []
        for node in iter_nodes(loop.body):
            if isinstance(node, cst.Assign):
                targets = [n.value for t in node.targets for n in _target_names(t.target)]
                assigns.append((targets, node.value))
            elif isinstance(node, cst.AnnAssign | cst.AugAssign) and node.value is not None:
                assigns.append(([n.value for n in _target_names(node.target)], node.value))
        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                if set(targets) <= names:
                    continue
                if any(n.value in names for n in iter_load_names(value)):
                    names.update(targets)
                    changed = True
        return names


MAX_HELPER_DEPTH = 6


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    ps = fn.params
    return [*ps.posonly_params, *ps.params, *ps.kwonly_params]


def _bind_call(params: Sequence[cst.Param], call: cst.Call) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(parameter name, argument) for the arguments of `call` that map to `params` plainly."""
    names = [p.name.value for p in params]
    pos = 0
    for a in call.args:
        if a.star:
            return
        if a.keyword is not None:
            if a.keyword.value in names:
                yield a.keyword.value, a.value
            continue
        if pos < len(names):
            yield names[pos], a.value
        pos += 1


def _scalar_param(p: cst.Param, qualify: Any) -> bool:
    """A parameter annotated int/float/bool or defaulting to a number is a scalar."""
    if p.annotation is not None and qualify(p.annotation.annotation) in ("int", "float", "bool"):
        return True
    return p.default is not None and numeric_literal(p.default) is not None
