"""A module of several kernels: the kernels' syntax trees under one ModelNew, in one pass.

Each kernel of a module plan is generated as a module of its own (`generate`, which hands over its
syntax tree as well as its text). `compose` puts the trees together without reading any generated text
back: the shared preamble (imports, run-mode switches, helpers) once, every other top-level name of
kernel i suffixed `_K{i}` (its constants, its factory, its ModelNew), and one `ModelNew` (the pack's
`module_model_new` template) whose `__init__` is `Model.__init__` itself (the same parameters created in
the same order, so the same seed gives the same weights) and whose `forward` runs the kernels in order,
each on the values the plan says it reads: a task input, a parameter (`self.gemm.weight`), an earlier
kernel's output, or a free view of one of them, which forward keeps in a local.
"""

from __future__ import annotations

import json
import keyword
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from pypto_tui.codegen.rewrite import code_of, renamed
from pypto_tui.codegen.templates import fill_statements
from pypto_tui.contract.init_body import import_names
from pypto_tui.errors import Unsupported

SHARED_HINT = ("_for_this_machine", "ceil_div", "RUNTIME_OPTIONS", "DEBUG_OPTIONS", "_PYPTO_RUN_MODE",
               "_PYPTO_RUNTIME_DEBUG_MODE")


@dataclass(frozen=True)
class ViewStep:
    """One free view forward takes (plan.FREE_VIEW_STEPS): `unsqueeze(dim)` or `reshape(*shape)`.
    `sizes` writes a reshape for any input size (ops.views.symbolic_sizes: each size a literal or a
    product of the view's source axes), so the module runs at the sizes verification shrinks to."""

    kind: str
    dim: int = 0
    shape: tuple[int, ...] = ()
    sizes: tuple[int | tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class ForwardView:
    """`target = source.<steps>`: a view of an input, a parameter or a kernel's output."""

    target: str
    source: str  # a local name or a dotted parameter path (self.gemm.weight)
    steps: tuple[ViewStep, ...]


@dataclass(frozen=True)
class KernelCall:
    """`local = self._k{i}(*args)`: kernel i on the values it reads (locals or dotted parameter paths)."""

    local: str
    args: tuple[str, ...]
    modules: tuple[str, ...] = ()  # the task's modules the kernel calls, handed to its own ModelNew
    sources: tuple[str, ...] = ()  # each module's path in the task's module tree (default: its name)


@dataclass(frozen=True)
class ModuleWiring:
    """What forward does around the kernels: views before the first (`prelude`), the calls, the views
    right after kernel i (`after`), and the local it returns (`results`, a tuple of them, when the task's
    forward returns a tuple)."""

    calls: tuple[KernelCall, ...]
    result: str
    prelude: tuple[ForwardView, ...] = ()
    after: tuple[tuple[int, ForwardView], ...] = ()
    results: tuple[str, ...] = ()


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


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString))


def dotted(path: str) -> cst.BaseExpression:
    """`self.gemm.weight` as attribute nodes (built, not parsed). A path through a submodule that no
    attribute names (an nn.Sequential's or ModuleList's `layer1.0`) reaches it with `get_submodule`:
    `self.layer1.0.conv1.weight` is `self.get_submodule("layer1.0").conv1.weight`, the task's own module."""
    first, *rest = path.split(".")
    node: cst.BaseExpression = cst.Name(first)
    named = [not part.isidentifier() or keyword.iskeyword(part) for part in rest]
    if any(named):
        last = len(named) - 1 - named[::-1].index(True)
        text = ".".join(rest[:last + 1])
        node = cst.Call(cst.Attribute(node, cst.Name("get_submodule")), [cst.Arg(cst.SimpleString(json.dumps(text)))])
        rest = rest[last + 1:]
    for part in rest:
        node = cst.Attribute(node, cst.Name(part))
    return node


def _int(v: int) -> cst.BaseExpression:
    return cst.UnaryOperation(cst.Minus(), cst.Integer(str(-v))) if v < 0 else cst.Integer(str(v))


def _args(values: Sequence[cst.BaseExpression]) -> list[cst.Arg]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [cst.Arg(v, comma=comma if i < len(values) - 1 else cst.MaybeSentinel.DEFAULT)
            for i, v in enumerate(values)]


def _size(source: str, size: int | tuple[int, ...]) -> cst.BaseExpression:
    """A literal, or `source.shape[i] * source.shape[j]` for the source axes whose product it is."""
    if isinstance(size, int):
        return _int(size)
    node: cst.BaseExpression | None = None
    for axis in size:
        dim = cst.Subscript(cst.Attribute(dotted(source), cst.Name("shape")),
                            [cst.SubscriptElement(cst.Index(_int(axis)))])
        node = dim if node is None else cst.BinaryOperation(node, cst.Multiply(), dim)
    return node if node is not None else _int(1)


def _view_expr(view: ForwardView) -> cst.BaseExpression:
    node = dotted(view.source)
    for s in view.steps:
        if s.kind == "unsqueeze":
            node = cst.Call(cst.Attribute(node, cst.Name("unsqueeze")), _args([_int(s.dim)]))
        elif s.kind == "reshape":
            given = s.sizes if s.sizes is not None else s.shape
            sizes: list[cst.BaseExpression] = [_size(view.source, d) for d in given] or [cst.Tuple([])]
            node = cst.Call(cst.Attribute(node, cst.Name("reshape")), _args(sizes))
        else:
            raise Unsupported(f"forward would copy data for a '{s.kind}' view")
    return node


def _assign(target: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    node = dotted(target)
    assert isinstance(node, cst.Name | cst.Attribute)
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(node)], value)])


def _docstring(doc: str, indent: str) -> cst.SimpleStatementLine:
    text = textwrap.indent(f'"""{doc}"""', indent)[len(indent):]
    return cst.SimpleStatementLine([cst.Expr(cst.SimpleString(text))])


def compose(stages: Sequence[cst.Module], wiring: ModuleWiring, doc: str, model_new: str, init_params: cst.Parameters,
            init_body: Sequence[cst.BaseStatement], forward_params: cst.Parameters,
            support: Sequence[cst.BaseStatement] = (), methods: Sequence[cst.FunctionDef] = (),
            attributes: Sequence[cst.BaseStatement] = ()) -> cst.Module:
    """The module: `stages` are the kernels' generated trees in plan order; `model_new` is the pack's
    template text for the composed ModelNew; `init_body` is Model.__init__'s body (a bare
    `super().__init__()` when it is empty). `support` are the task file's statements `__init__` reaches
    (a submodule's class, a helper, the import they need: placed before ModelNew, an import only when the
    kernels' own imports do not bind its names), `methods` Model's methods it calls and `attributes` the
    class attributes it reads (ModelNew's too), so ModelNew builds the task's own module tree."""
    if len(wiring.calls) != len(stages):
        raise Unsupported("every kernel of the module needs its call")
    header: list[cst.BaseStatement] = []
    seen: dict[str, str] = {}  # statement code -> first kernel's name for it
    body: list[cst.BaseStatement] = []
    for i, module in enumerate(stages):
        renames: dict[str, str] = {}
        keep: list[cst.BaseStatement] = []
        for s in module.body:
            if _is_docstring(s):
                continue
            if _is_import(s):
                code = code_of(s).strip()
                if code not in seen:
                    seen[code] = ""
                    header.append(s)
                continue
            names = _defined(s)
            if names and any(n in SHARED_HINT for n in names):
                code = code_of(s).strip()
                if code in seen:
                    continue  # the same helper as an earlier kernel's
                seen[code] = names[0]
                keep.append(s)
                continue
            for n in names:
                renames[n] = f"{n}_K{i}"
            keep.append(s)
        body += [renamed(s, renames) for s in keep]
    init: list[cst.BaseStatement] = list(init_body) or [cst.SimpleStatementLine([cst.Expr(cst.Call(
        cst.Attribute(cst.Call(cst.Name("super")), cst.Name("__init__"))))])]
    init += [_assign(f"self._k{i}", cst.Call(cst.Name(f"ModelNew_K{i}"))) for i in range(len(stages))]
    init += [_assign(f"self._k{i}.{m}", dotted(f"self.{src}")) for i, c in enumerate(wiring.calls)
             for m, src in zip(c.modules, c.sources or c.modules, strict=True)]
    forward: list[cst.BaseStatement] = [_assign(v.target, _view_expr(v)) for v in wiring.prelude]
    for i, call in enumerate(wiring.calls):
        forward.append(_assign(call.local, cst.Call(dotted(f"self._k{i}"), _args([dotted(a) for a in call.args]))))
        forward += [_assign(v.target, _view_expr(v)) for k, v in wiring.after if k == i]
    returned: cst.BaseExpression = dotted(wiring.result)
    if wiring.results:
        returned = cst.Tuple([cst.Element(dotted(r)) for r in wiring.results], lpar=[], rpar=[])
    forward.append(cst.SimpleStatementLine([cst.Return(returned)]))
    model = fill_statements(model_new, doc=[_docstring(doc, "    ")], init_params=init_params, init_body=init,
                            forward_params=forward_params, forward_body=forward)
    if methods or attributes:
        model = [_with_methods(m, methods, attributes) for m in model]
    if model:
        model[0] = model[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    bound = {name for s in header for small in getattr(s, "body", ()) if isinstance(small, cst.Import | cst.ImportFrom)
             for name in import_names(small)}
    extra: list[cst.BaseStatement] = []
    for stmt in support:
        if isinstance(stmt, cst.SimpleStatementLine) and _is_import(stmt):
            binds = {n for small in stmt.body if isinstance(small, cst.Import | cst.ImportFrom)
                     for n in import_names(small)}
            if binds <= bound:
                continue
            bound |= binds
            header.append(stmt.with_changes(leading_lines=[]))
            continue
        extra.append(stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    statements: list[Any] = [_docstring(doc, ""), *header, *body, *extra, *model]
    return cst.Module(body=statements)


def _with_methods(stmt: cst.BaseStatement, methods: Sequence[cst.FunctionDef],
                  attributes: Sequence[cst.BaseStatement] = ()) -> cst.BaseStatement:
    """ModelNew with Model's class attributes after its docstring and Model's own helper methods
    after its __init__ and forward."""
    if not isinstance(stmt, cst.ClassDef) or stmt.name.value != "ModelNew":
        return stmt
    body = list(stmt.body.body)
    first = body[0] if body else None
    at = 1 if isinstance(first, cst.BaseStatement) and _is_docstring(first) else 0
    attrs = [a.with_changes(leading_lines=[cst.EmptyLine(indent=False)] if i == 0 else [])
             for i, a in enumerate(attributes)]
    spaced = [m.with_changes(leading_lines=[cst.EmptyLine(indent=False)]) for m in methods]
    return stmt.with_changes(body=stmt.body.with_changes(body=[*body[:at], *attrs, *body[at:], *spaced]))
