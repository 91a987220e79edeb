"""Read a KernelBench task file statically: constants, inputs, init parameters, forward tree.

This is the only place that walks the task's syntax tree. It produces `TaskFacts`, plain data
the recogniser and the semantics table work from, so those never see libcst. Problems that make
the file unusable (not Python, no `class Model`, no `get_inputs`) raise `TaskFileError` with the
one-line fix; everything else degrades to `Unknown` values with reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import libcst as cst

from pypto_tui.contract import ir
from pypto_tui.contract.budget import OutOfBudget
from pypto_tui.contract.ir import Node
from pypto_tui.contract.model import Signature
from pypto_tui.contract.signature import signature_of
from pypto_tui.contract.values import (
    DType,
    Evaluator,
    ModuleSpec,
    Ref,
    SelfObj,
    TensorSpec,
    Unknown,
    find_unknown,
    module_aliases,
)
from pypto_tui.errors import TaskFileError
from pypto_tui.ops import registry
from pypto_tui.source_bounds import check_source

NOISE = re.compile(r"change to desired|example", re.IGNORECASE)


@dataclass
class Param:
    name: str
    default: Any  # `NO_DEFAULT` when required
    kind: str  # positional | kwonly | varargs | varkw


NO_DEFAULT = object()


@dataclass
class TaskFacts:
    path: str | None
    aliases: dict[str, str]
    env: dict[str, Any]
    init_params: list[Param]
    init_values: dict[str, Any]  # bound values (may hold Unknown)
    init_problems: list[str]
    attributes: dict[str, Any]  # self.x -> value (may hold Unknown / ModuleSpec / TensorSpec)
    forward_params: list[str]
    inputs: list[Any]  # evaluated get_inputs() items, in order
    inputs_problem: str | None
    root: Node
    forward_source: str
    noise_comments: list[str] = field(default_factory=list)
    signature: Signature | None = None


def parse(source: str, path: str | None) -> cst.Module:
    """libcst's tree of a task file, after the bounds check (a hostile file is refused, not parsed)."""
    where = path or "the task file"
    invalid = check_source(source, where)
    if invalid is not None:
        raise TaskFileError(
            f"{where} is not valid Python ({_position(invalid.lineno, invalid.offset)}{invalid.msg}); "
            "fix the syntax or point at a KernelBench task file"
        )
    check_input_count(source, where)
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        raise TaskFileError(
            f"{where} is not valid Python ({_position(exc.raw_line, exc.raw_column)}{msg}); "
            "fix the syntax or point at a KernelBench task file"
        ) from None
    except Exception as exc:  # libcst raises a few other errors on odd input
        raise TaskFileError(f"{where} cannot be parsed as Python ({type(exc).__name__}); "
                            "point at a KernelBench task file") from None


MAX_INPUTS = 256
"""Most inputs a task may have (get_inputs() items, forward parameters): a KernelBench task has a few.
Past it every later step (the contract, the graph, the kernel's parameters) only grows."""


def check_input_count(source: str, where: str) -> None:
    """TaskFileError, before libcst reads the file, when get_inputs() returns a literal list of more
    than MAX_INPUTS items or Model.forward takes more than MAX_INPUTS parameters (a cheap ast pass:
    such a file is refused at once, for that reason, not after every step has run on it)."""
    import ast

    tree = ast.parse(source)  # already checked (bounded, valid) by check_source
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Return):
                    continue
                value = sub.value
                if isinstance(value, ast.List | ast.Tuple) and len(value.elts) > MAX_INPUTS:
                    raise TaskFileError(f"{where}: get_inputs() returns {len(value.elts)} inputs (line {sub.lineno}); "
                                        f"pypto-tui reads tasks of at most {MAX_INPUTS} (a KernelBench task has a "
                                        "few): point at a task file")
        elif isinstance(node, ast.ClassDef) and node.name == "Model":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    a = fn.args
                    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1  # minus self
                    if count > MAX_INPUTS:
                        raise TaskFileError(f"{where}: Model.forward takes {count} inputs (line {fn.lineno}); "
                                            f"pypto-tui reads tasks of at most {MAX_INPUTS} (a KernelBench task "
                                            "has a few): point at a task file")


def _position(line: int | None, column: int | None) -> str:
    """'line 3, column 7: ' with the parts the parser knows ('' when it knows neither)."""
    parts = [f"{what} {n}" for what, n in (("line", line), ("column", column)) if n is not None]
    return ", ".join(parts) + ": " if parts else ""


def _functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    return {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}


def _classes(module: cst.Module) -> dict[str, cst.ClassDef]:
    return {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}


def _module_env(module: cst.Module, ev: Evaluator) -> dict[str, Any]:
    """Module-level assignments, evaluated in order (later ones see earlier ones)."""
    env = ev.env
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            _assign(small, ev, env, None)
    return env


def _assign(small: cst.BaseSmallStatement, ev: Evaluator, env: dict[str, Any], selfobj: SelfObj | None) -> None:
    if isinstance(small, cst.Assign):
        value = ev.ev(small.value, env)
        for t in small.targets:
            _bind_target(t.target, value, ev, env, selfobj)
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        _bind_target(small.target, ev.ev(small.value, env), ev, env, selfobj)
    elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        op = {cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul",
              cst.DivideAssign: "div", cst.FloorDivideAssign: "floordiv"}.get(type(small.operator))
        cur = env.get(small.target.value, Unknown(f"'{small.target.value}' is not defined"))
        env[small.target.value] = (ev.binop(op, cur, ev.ev(small.value, env), small) if op
                                   else Unknown("augmented assignment"))
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        # list.append(...) and friends mutate a local list; super().__init__() is ignored.
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend"):
            ev.ev(small.value, env)
        elif selfobj is not None:
            _eval_mode(small.value, selfobj)


def _eval_mode(call: cst.Call, selfobj: SelfObj) -> None:
    """`self.eval()`, `self.train(False)` (or `self.bn.eval()`) in __init__: the modules built so far run in eval
    mode, as verify's baseline (`Model(*get_init_inputs())`, never put in eval mode by the harness) runs them.
    A module whose kind reads the mode (`training` among its registry parameters: BatchNorm) records
    `training=False`, so its graph node normalises with the running statistics; the others are unchanged."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("eval", "train"):
        return
    if func.attr.value == "train":
        flag = call.args[0].value if len(call.args) == 1 else None
        if not (isinstance(flag, cst.Name) and flag.value == "False"):
            return
    owner = func.value
    if isinstance(owner, cst.Name) and owner.value == "self":
        names = list(selfobj.attrs)
    elif (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self"
          and owner.attr.value in selfobj.attrs):
        names = [owner.attr.value]
    else:
        return
    from pypto_tui.ops import registry

    for name in names:
        spec = selfobj.attrs[name]
        kind = registry.by_module(spec.type) if isinstance(spec, ModuleSpec) else None
        if kind is not None and "training" in kind.params:
            selfobj.attrs[name] = replace(spec, params={**spec.params, "training": False})


def _bind_target(target: cst.BaseExpression, value: Any, ev: Evaluator, env: dict[str, Any],
                 selfobj: SelfObj | None) -> None:
    if isinstance(target, cst.Name):
        env[target.value] = value
    elif isinstance(target, cst.Tuple | cst.List):
        names = [e.value for e in target.elements]
        if isinstance(value, list | tuple) and len(value) == len(names):
            for t, v in zip(names, value, strict=True):
                _bind_target(t, v, ev, env, selfobj)
        else:
            for t in names:
                _bind_target(t, Unknown(f"cannot unpack '{ev.code(target)}'"), ev, env, selfobj)
    elif (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
          and target.value.value == "self" and selfobj is not None):
        selfobj.attrs[target.attr.value] = value


def _run_body(fn: cst.FunctionDef, ev: Evaluator, env: dict[str, Any], selfobj: SelfObj | None = None) -> Any:
    """Run a function body statically; returns its return value (or Unknown)."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
    return _run_block(body, ev, env, selfobj, depth=0)


def _run_block(stmts: Any, ev: Evaluator, env: dict[str, Any], selfobj: SelfObj | None, depth: int) -> Any:
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return):
                    return None if small.value is None else ev.ev(small.value, env)
                _assign(small, ev, env, selfobj)
        elif isinstance(stmt, cst.If) and depth < 8:
            test = ev.ev(stmt.test, env)
            if isinstance(test, Unknown | TensorSpec):
                return Unknown(f"'if {ev.code(stmt.test)}' cannot be decided statically")
            branch: Any = stmt.body.body if test else None
            if not test and stmt.orelse is not None:
                branch = [stmt.orelse] if isinstance(stmt.orelse, cst.If) else stmt.orelse.body.body
            if branch:
                result = _run_block(branch, ev, env, selfobj, depth + 1)
                if result is not _NO_RETURN:
                    return result
        elif isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and depth < 8:
            it = ev.ev(stmt.iter, env)
            if not isinstance(it, list | tuple) or len(it) > 4096:
                return Unknown(f"'for ... in {ev.code(stmt.iter)}' cannot be followed statically")
            for item in it:
                ev.budget.charge(1, stmt)  # nested loops may not multiply their way past the budget
                env[stmt.target.value] = item
                result = _run_block(stmt.body.body, ev, env, selfobj, depth + 1)
                if result is not _NO_RETURN:
                    return result
        else:
            return Unknown(f"a '{type(stmt).__name__}' statement cannot be followed statically")
    return _NO_RETURN


_NO_RETURN = Unknown("the function does not return a value")


def _params(fn: cst.FunctionDef, ev: Evaluator, skip_self: bool = True) -> list[Param]:
    p = fn.params
    out: list[Param] = []
    positional = [*p.posonly_params, *p.params]
    if skip_self and positional:
        positional = positional[1:]
    for prm in positional:
        out.append(Param(prm.name.value, ev.ev(prm.default) if prm.default is not None else NO_DEFAULT, "positional"))
    if isinstance(p.star_arg, cst.Param):
        out.append(Param(p.star_arg.name.value, NO_DEFAULT, "varargs"))
    for prm in p.kwonly_params:
        out.append(Param(prm.name.value, ev.ev(prm.default) if prm.default is not None else NO_DEFAULT, "kwonly"))
    if p.star_kwarg is not None:
        out.append(Param(p.star_kwarg.name.value, NO_DEFAULT, "varkw"))
    return out


def _bind_init(params: list[Param], value: Any) -> tuple[dict[str, Any], list[str]]:
    """Bind get_init_inputs() to Model.__init__ the way the harness does, `Model(*get_init_inputs())`:
    values by position (extra ones into *args), keyword-only and later parameters from their
    defaults. Returns (bound, problems)."""
    problems: list[str] = []
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    if isinstance(value, Unknown):
        problems.append(f"get_init_inputs(): {value.reason}")
    elif isinstance(value, dict):
        problems.append("get_init_inputs() returns a dict: the harness calls Model(*get_init_inputs()), "
                        "which passes its keys; return a list")
    elif isinstance(value, list | tuple):
        args = list(value)
    elif value is None:
        pass
    else:
        problems.append("get_init_inputs() does not return a list, tuple or dict")
    bound: dict[str, Any] = {}
    positional = [p for p in params if p.kind == "positional"]
    varargs = next((p for p in params if p.kind == "varargs"), None)
    for i, a in enumerate(args):
        if i < len(positional):
            bound[positional[i].name] = a
        elif varargs is not None:
            bound.setdefault(varargs.name, []).append(a)
        else:
            problems.append(f"get_init_inputs() passes {len(args)} values but Model.__init__ takes "
                            f"{len(positional)}")
            break
    named = {p.name: p for p in params}
    varkw = next((p for p in params if p.kind == "varkw"), None)
    for k, v in kwargs.items():
        if k in named and named[k].kind in ("positional", "kwonly"):
            if k in bound:
                problems.append(f"get_init_inputs() gives '{k}' twice")
            bound[k] = v
        elif varkw is not None:
            bound.setdefault(varkw.name, {})[k] = v
        else:
            problems.append(f"get_init_inputs() passes '{k}=' but Model.__init__ has no such parameter")
    for p in params:
        if p.name in bound or p.kind in ("varargs", "varkw"):
            if p.kind == "varargs":
                bound[p.name] = tuple(bound.get(p.name, ()))
            continue
        if p.default is NO_DEFAULT:
            bound[p.name] = Unknown(f"Model.__init__ needs '{p.name}' but get_init_inputs() does not give it")
            problems.append(f"'{p.name}' has no value")
        else:
            bound[p.name] = p.default
    return bound, problems


# ================================================================================ forward -> IR
_CALL_AS_BIN = {"add": "add", "sub": "sub", "subtract": "sub", "mul": "mul", "multiply": "mul",
                "div": "div", "divide": "div", "true_divide": "div", "pow": "pow"}
_SYNONYMS = {"clip": "clamp", "absolute": "abs", "silu": "swish", "negative": "neg",
             "greater": "gt", "less": "lt", "maximum": "maximum", "minimum": "minimum"}


def canonical(dotted: str) -> tuple[str, str]:
    """(name, origin) for a dotted torch path: torch.nn.functional.kl_div -> (kl_div, F)."""
    for prefix, origin in (("torch.nn.functional.", "F"), ("torch.special.", "torch"),
                           ("torch.linalg.", "linalg"), ("torch.Tensor.", "method"), ("torch.", "torch")):
        if dotted.startswith(prefix):
            name = dotted[len(prefix):]
            if origin == "linalg":
                name = "linalg." + name
            return _SYNONYMS.get(name, name), origin
    return dotted, "other"


def _unfilled(positional: list[Param], inputs: list[Any]) -> list[Param]:
    """forward's trailing parameters that get_inputs() leaves to their plain defaults (`mask=None`): the
    harness calls `forward(*get_inputs())`, so they are constants of forward, not inputs of a kernel."""
    rest = positional[len(inputs):]
    plain = (type(None), bool, int, float, str)
    return rest if all(p.default is not NO_DEFAULT and isinstance(p.default, plain) for p in rest) else []


class ForwardBuilder:
    """Turns forward's statements into one expression tree (locals inlined)."""

    def __init__(self, ev: Evaluator, params: list[str], self_name: str, selfobj: SelfObj,
                 shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        self.ev = ev
        self.params = {p: i for i, p in enumerate(params)}
        self.shapes = shapes or {}  # forward's tensor arguments as get_inputs() builds them
        self.self_name = self_name
        self.selfobj = selfobj
        self.locals: dict[str, Node] = {}

    def build(self, fn: cst.FunctionDef) -> Node:
        body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Return):
                        return self.node(small.value) if small.value is not None else ir.unknown("forward returns None")
                    self._statement(small)
            else:
                return ir.unknown(f"forward has a '{type(stmt).__name__}' statement; only straight-line "
                                  "code is read")
        return ir.unknown("forward has no return statement")

    def _statement(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            value = self.node(small.value)
            for t in small.targets:
                self._bind(t.target, value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self._bind(small.target, self.node(small.value))
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            op = {cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul",
                  cst.DivideAssign: "div", cst.PowerAssign: "pow"}.get(type(small.operator))
            cur = self.locals.get(small.target.value) or self._name(small.target.value)
            self.locals[small.target.value] = (self._bin(op, cur, self.node(small.value)) if op
                                               else ir.unknown("augmented assignment"))

    def _bind(self, target: cst.BaseExpression, value: Node) -> None:
        if isinstance(target, cst.Name):
            self.locals[target.value] = value
        elif isinstance(target, cst.Tuple | cst.List):
            for i, el in enumerate(target.elements):
                if value.kind == "tuple" and i < len(value.args):
                    item = value.args[i]
                elif value.is_const and isinstance(value.value, tuple) and i < len(value.value):
                    item = ir.const(value.value[i])  # `b, t, d = x.shape`: the sizes get_inputs gives
                else:
                    item = Node("index", args=(value,), value=i)
                self._bind(el.value, item)

    def _name(self, name: str) -> Node:
        if name in self.locals:
            return self.locals[name]
        if name in self.params:
            return Node("in", name=name, value=self.params[name])
        if name == self.self_name:
            return Node("self")
        v = self.ev.ev(cst.Name(name))
        return self._value(v, name)

    def _value(self, v: Any, origin: str) -> Node:
        if isinstance(v, Ref):
            return Node("ref", name=v.dotted)
        if isinstance(v, Unknown):
            return ir.unknown(v.reason)
        if isinstance(v, ModuleSpec):
            return Node("modref", name=v.type, value=v)
        if isinstance(v, TensorSpec):
            return Node("param", name=origin.removeprefix("self."), value={"shape": v.shape, "dtype": v.dtype})
        if isinstance(v, int | float | bool | str | tuple | type(None)):
            return ir.const(v, name=origin if origin.startswith("self.") else "")
        if isinstance(v, list):
            return ir.const(tuple(v), name=origin if origin.startswith("self.") else "")
        return ir.unknown(f"'{origin}' is not a value the reader understands")

    def node(self, n: cst.BaseExpression) -> Node:
        try:
            return self._node(n)
        except RecursionError:
            return ir.unknown("expression nests too deeply")

    def _node(self, n: cst.BaseExpression) -> Node:
        if isinstance(n, cst.Name):
            return self._name(n.value)
        if isinstance(n, cst.Integer | cst.Float | cst.SimpleString | cst.ConcatenatedString):
            return ir.const(self.ev.ev(n))
        if isinstance(n, cst.Attribute):
            base = self._node(n.value)
            attr = n.attr.value
            if base.kind == "self":
                if attr not in self.selfobj.attrs:
                    return ir.unknown(f"self.{attr} is not set in __init__")
                return self._value(self.selfobj.attrs[attr], f"self.{attr}")
            if base.kind == "ref":
                dotted = f"{base.name}.{attr}"
                v = self.ev.ev(n)  # torch.float16, math.pi ...
                if not isinstance(v, Ref | Unknown):
                    return self._value(v, dotted)
                return Node("ref", name=dotted)
            if base.kind == "const":
                return ir.unknown(f"attribute of a constant in '{self.ev.code(n)}'")
            if base.kind == "in" and attr == "shape" and base.name in self.shapes:
                return ir.const(tuple(self.shapes[base.name]))  # `half = x.shape[-1] // 2`: a size, not data
            return Node("attr", name=attr, args=(base,))
        if isinstance(n, cst.Call):
            return self._call(n)
        if isinstance(n, cst.BinaryOperation):
            from pypto_tui.contract.values import _BINOPS

            op = _BINOPS.get(type(n.operator))
            if op is None:
                return ir.unknown(f"operator in '{self.ev.code(n)}'")
            return self._bin(op, self._node(n.left), self._node(n.right))
        if isinstance(n, cst.UnaryOperation):
            x = self._node(n.expression)
            if isinstance(n.operator, cst.Minus):
                if x.is_const and isinstance(x.value, int | float):
                    return ir.const(-x.value)
                return Node("neg", args=(x,))
            if isinstance(n.operator, cst.Plus):
                return x
            return ir.unknown(f"unary operator in '{self.ev.code(n)}'")
        if isinstance(n, cst.Comparison) and len(n.comparisons) == 1:
            from pypto_tui.contract.values import _CMPOPS

            c = n.comparisons[0]
            op = _CMPOPS.get(type(c.operator))
            if op is None:
                return ir.unknown(f"comparison in '{self.ev.code(n)}'")
            return self._bin(op, self._node(n.left), self._node(c.comparator))
        if isinstance(n, cst.Subscript):
            return self._subscript(n)
        if isinstance(n, cst.Tuple | cst.List):
            items: list[Node] = []
            for el in n.elements:
                if isinstance(el, cst.StarredElement):
                    inner = self._node(el.value)
                    if inner.is_const and isinstance(inner.value, tuple):
                        items.extend(ir.const(v) for v in inner.value)
                        continue
                    return ir.unknown(f"'*' in '{self.ev.code(n)}'")
                items.append(self._node(el.value))
            if all(i.is_const for i in items):
                return ir.const(tuple(i.value for i in items))
            return Node("tuple", args=tuple(items))
        v = self.ev.ev(n)
        if not isinstance(v, Unknown):
            return self._value(v, self.ev.code(n))
        return ir.unknown(f"'{self.ev.code(n)}' is not understood")

    def _bin(self, op: str, a: Node, b: Node) -> Node:
        if a.is_const and b.is_const:
            folded = self.ev.binop(op, a.value, b.value, None)
            if not isinstance(folded, Unknown):
                return ir.const(folded)
        return Node("bin", name=op, args=(a, b))

    def _subscript(self, n: cst.Subscript) -> Node:
        base = self._node(n.value)
        keys: list[Any] = []
        for el in n.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                if isinstance(s.value, cst.Name) and s.value.value == "None":
                    keys.append("None")
                    continue
                if isinstance(s.value, cst.Ellipsis):
                    keys.append("...")
                    continue
                k = self._node(s.value)
                if not k.is_const:
                    return ir.unknown(f"non-constant index in '{self.ev.code(n)}'")
                keys.append(k.value)
            elif isinstance(s, cst.Slice):
                parts: list[Any] = []
                for p in (s.lower, s.upper, s.step):
                    if p is None:
                        parts.append(None)
                        continue
                    k = self._node(p)
                    if not k.is_const:
                        return ir.unknown(f"non-constant slice in '{self.ev.code(n)}'")
                    parts.append(k.value)
                keys.append({"slice": tuple(parts)})
        key = keys[0] if len(keys) == 1 else tuple(keys)
        if base.is_const and isinstance(base.value, tuple | str) and isinstance(key, int):
            return ir.const(base.value[key])
        return Node("index", args=(base,), value=key)

    def _call(self, n: cst.Call) -> Node:
        args: list[Node] = []
        kwargs: list[tuple[str, Node]] = []
        for a in n.args:
            v = self._node(a.value)
            if a.star == "*":
                if v.is_const and isinstance(v.value, tuple):
                    args.extend(ir.const(x) for x in v.value)
                    continue
                return ir.unknown(f"'*' argument in '{self.ev.code(n)}'")
            if a.star == "**":
                return ir.unknown(f"'**' argument in '{self.ev.code(n)}'")
            if a.keyword is not None:
                kwargs.append((a.keyword.value, v))
            else:
                args.append(v)
        func = n.func
        if isinstance(func, cst.Attribute):
            recv = self._node(func.value)
            attr = func.attr.value
            if recv.kind == "self":
                target = self.selfobj.attrs.get(attr)
                if isinstance(target, ModuleSpec):
                    if target.attr is None:
                        target.attr = attr
                    return Node("module", name=target.type, args=tuple(args), kwargs=tuple(kwargs),
                                value=target)
                return ir.unknown(f"self.{attr}(...) is not an nn module the reader knows")
            if recv.kind == "ref":
                return self._ref_call(f"{recv.name}.{attr}", args, kwargs, n)
            if recv.kind == "unknown":
                return recv
            if attr == "size" and recv.kind == "in" and recv.name in self.shapes and not kwargs and (
                    not args or (len(args) == 1 and args[0].is_const and isinstance(args[0].value, int))):
                shape = tuple(self.shapes[recv.name])  # `b, t, c = x.size()`: sizes, as x.shape gives them
                if not args:
                    return ir.const(shape)
                if -len(shape) <= args[0].value < len(shape):
                    return ir.const(shape[args[0].value])
            if attr in ("to", "type"):
                conversion = self._conversion(n)
                if conversion is not None:
                    return self._make_call(conversion, (recv,), [], "method")
            name = _SYNONYMS.get(attr, attr)
            return self._make_call(name, (recv, *args), kwargs, "method")
        f = self._node(func)
        if f.kind == "ref":
            return self._ref_call(f.name, args, kwargs, n)
        if f.kind == "modref":
            return Node("module", name=f.name, args=tuple(args), kwargs=tuple(kwargs), value=f.value)
        if f.kind == "unknown":
            return f
        return ir.unknown(f"'{self.ev.code(n.func)}(...)' is not a call the reader follows")

    def _conversion(self, n: cst.Call) -> str | None:
        """`x.to(torch.int8)`, `x.type(torch.float16)`: the method the registry knows the conversion by
        (`char`, `half`, `float`), or None when the call is not one dtype (a device, another tensor)."""
        dtypes = [v for v in (self.ev.ev(a.value) for a in n.args if a.keyword is None or a.keyword.value == "dtype")
                  if isinstance(v, DType)]
        if len(dtypes) != 1 or len(n.args) != 1:
            return None
        kind = registry.conversion_to(dtypes[0].name)
        return kind.name if kind is not None else None

    def _ref_call(self, dotted: str, args: list[Node], kwargs: list[tuple[str, Node]], n: cst.Call) -> Node:
        if all(a.is_const for a in args) and all(v.is_const for _, v in kwargs):
            v = self.ev.ev(n)
            if not isinstance(v, Unknown | Ref) and not isinstance(v, TensorSpec | ModuleSpec):
                return self._value(v, self.ev.code(n))
        name, origin = canonical(dotted)
        if origin == "other":
            return ir.unknown(f"'{dotted}(...)' is not a torch call")
        return self._make_call(name, tuple(args), kwargs, origin)

    def _make_call(self, name: str, args: tuple[Node, ...], kwargs: list[tuple[str, Node]], origin: str) -> Node:
        if name in _CALL_AS_BIN and len(args) == 2 and not kwargs:
            return self._bin(_CALL_AS_BIN[name], args[0], args[1])
        return Node("call", name=name, args=args, kwargs=tuple(kwargs), value=origin)


# ================================================================================ the whole file
def _function_text(source: str, name: str) -> str:
    """The text of `def name(...)` and its body, sliced from the source (cheaper than libcst's
    code generation, which would re-render the node; only used for display and comments)."""
    lines = source.splitlines()
    pat = re.compile(rf"^(\s*)def {re.escape(name)}\s*\(")
    for i, line in enumerate(lines):
        m = pat.match(line)
        if not m:
            continue
        indent = len(m.group(1))
        out = [line]
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            out.append(nxt)
        while out and not out[-1].strip():
            out.pop()
        base = " " * indent
        return "\n".join(x[indent:] if x.startswith(base) else x for x in out)
    return ""


def read_task(source: str, path: str | None = None) -> TaskFacts:
    source = source.removeprefix("\ufeff")  # a UTF-8 byte order mark (Windows editors write one): Python accepts it
    module = parse(source, path)
    where = path or "the task file"
    ev = Evaluator(module, module_aliases(module), {}, where=where)
    try:
        return _read(module, source, path, where, ev)
    except OutOfBudget as exc:  # a bomb among the constants: refused, with its line
        raise TaskFileError(ev.refusal(exc)) from None


def _read(module: cst.Module, source: str, path: str | None, where: str, ev: Evaluator) -> TaskFacts:
    aliases = dict(ev.aliases)
    env = _module_env(module, ev)
    classes = _classes(module)
    if "Model" not in classes:
        raise TaskFileError(f"{where} has no 'class Model': a KernelBench task defines "
                            "class Model(nn.Module) with __init__ and forward")
    model = classes["Model"]
    methods = {s.name.value: s for s in model.body.body if isinstance(s, cst.FunctionDef)}
    if "forward" not in methods:
        raise TaskFileError(f"{where}: class Model has no forward(); add forward(self, ...) that computes the op")
    funcs = _functions(module)
    if "get_inputs" not in funcs:
        raise TaskFileError(f"{where} has no get_inputs(): add def get_inputs(): return [torch.randn(...), ...]")

    # __init__ and its parameters
    init_fn = methods.get("__init__")
    params = _params(init_fn, ev) if init_fn is not None else []
    init_value: Any = []
    noise: list[str] = []
    if "get_init_inputs" in funcs:
        init_value = _run_body(funcs["get_init_inputs"], ev, dict(env))
        noise = _noise_comments(_function_text(source, "get_init_inputs"))
    init_values, init_problems = _bind_init(params, init_value)
    selfobj = SelfObj({})
    if init_fn is not None:
        local_env = {**env, **init_values, "self": selfobj}
        result = _run_body(init_fn, ev, local_env, selfobj)
        if isinstance(result, Unknown) and result is not _NO_RETURN:
            init_problems.append(f"__init__: {result.reason}")

    # inputs
    raw = _run_body(funcs["get_inputs"], ev, dict(env))
    problem = None
    inputs: list[Any] = []
    if isinstance(raw, Unknown):
        problem = raw.reason
    elif isinstance(raw, list | tuple):
        inputs = list(raw)
    else:
        problem = "get_inputs() does not return a list or tuple"

    # forward
    fwd = methods["forward"]
    fparams = _params(fwd, ev, skip_self=False)
    self_name = fparams[0].name if fparams else "self"
    positional = [p for p in fparams[1:] if p.kind == "positional"]
    unfilled = _unfilled(positional, inputs) if problem is None else []
    names = [p.name for p in positional[:len(positional) - len(unfilled)]]
    shapes = {name: tuple(v.shape) for name, v in zip(names, inputs, strict=False) if isinstance(v, TensorSpec)}
    builder = ForwardBuilder(ev, names, self_name, selfobj, shapes)
    builder.locals.update({p.name: ir.const(p.default) for p in unfilled})
    root = builder.build(fwd)
    fsrc = _function_text(source, "forward")
    return TaskFacts(
        path=path, aliases=aliases, env=env, init_params=params, init_values=init_values,
        init_problems=init_problems, attributes=dict(selfobj.attrs), forward_params=names,
        inputs=inputs, inputs_problem=problem, root=root, forward_source=fsrc, noise_comments=noise,
        signature=signature_of(model),
    )


def read_signature(source: str, path: str | None = None) -> Signature:
    """Only `Model`'s signatures (what `lint --task` compares ModelNew with): the same parse and
    the same reading as `read_task`, without evaluating the rest of the file."""
    module = parse(source, path)
    model = _classes(module).get("Model")
    if model is None:
        raise TaskFileError(f"{path or 'the task file'} has no 'class Model': --task takes a KernelBench task file")
    return signature_of(model)


def _noise_comments(text: str) -> list[str]:
    """Comments like '# Example, change to desired dimension' (P1.fixed-params: dataset noise)."""
    return [c.strip() for c in re.findall(r"#[^\n]*", text) if NOISE.search(c)]


__all__ = ["TaskFacts", "canonical", "find_unknown", "read_signature", "read_task"]
