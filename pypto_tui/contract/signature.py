"""`Model`'s call signatures, read once from the task's syntax tree (libcst).

The harness builds `ModelNew(*get_init_inputs())` (P1.init-signature), so a generated module
copies `Model.__init__`'s parameters verbatim and the linter compares a kernel module's
`ModelNew.__init__` with them. Both read the same `Signature`, made here from the tree the
contract reader already parsed: no other part of pypto-tui opens the task file again.

`provenance` maps a scalar's name to the init parameter that feeds it (`self.alpha = alpha`
gives `alpha`; `nn.TripletMarginLoss(margin=margin)` gives `margin` and `attr.margin`), so a
kernel takes `alpha` from `self.alpha` and `ModelNew(alpha=2.0)` computes with 2.0, not with the
value get_init_inputs happened to pass.
"""

from __future__ import annotations

import libcst as cst

from pypto_tui.contract.model import InitParam, Signature

_EMPTY = cst.Module([])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def init_params_of(params: cst.Parameters) -> tuple[InitParam, ...]:
    """The parameters after `self`, defaults as normalised source (whitespace collapsed)."""

    def default(p: cst.Param) -> str | None:
        return None if p.default is None else " ".join(code_of(p.default).split())

    out: list[InitParam] = [InitParam("posonly", p.name.value, default(p)) for p in params.posonly_params]
    out += [InitParam("arg", p.name.value, default(p)) for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        out.append(InitParam("*args", params.star_arg.name.value, None))
    out += [InitParam("kwonly", p.name.value, default(p)) for p in params.kwonly_params]
    if params.star_kwarg is not None:
        out.append(InitParam("**kwargs", params.star_kwarg.name.value, None))
    if out and out[0].kind in ("posonly", "arg"):
        out = out[1:]  # self
    return tuple(out)


def method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The last definition of `name` in the class body (a later def wins, as in Python)."""
    found = None
    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            found = stmt
    return found


def _names(params: cst.Parameters) -> tuple[str, ...]:
    out = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    return tuple(out[1:] if out and out[0] == "self" else out)


def _callee(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _provenance(init: cst.FunctionDef | None, params: tuple[str, ...]) -> dict[str, str]:
    from pypto_tui.contract.signatures import MODULE_SIGS

    out: dict[str, str] = {p: p for p in params}
    if init is None:
        return out
    for stmt in init.body.body if isinstance(init.body, cst.IndentedBlock) else ():
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                continue
            target = small.targets[0].target
            if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                    and target.value.value == "self"):
                continue
            attr, value = target.attr.value, small.value
            if isinstance(value, cst.Name) and value.value in params:
                out[attr] = value.value
            elif isinstance(value, cst.Call):
                names = [p for p, _ in MODULE_SIGS.get(_callee(value.func) or "", ())]
                for i, arg in enumerate(value.args):
                    if not (isinstance(arg.value, cst.Name) and arg.value.value in params):
                        continue
                    if arg.keyword is not None:
                        key = arg.keyword.value
                    elif i < len(names):
                        key = names[i]
                    else:
                        continue
                    out[key] = arg.value.value
                    out[f"{attr}.{key}"] = arg.value.value
    return out


def _modules(init: cst.FunctionDef | None) -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """`self.<attr> = nn.<Module>(...)` assignments of __init__, in order: (attr, module type, the
    argument list's source, the bare names the arguments read)."""
    from pypto_tui.contract.signatures import MODULE_SIGS

    out: list[tuple[str, str, str, tuple[str, ...]]] = []
    if init is None:
        return ()
    for stmt in init.body.body if isinstance(init.body, cst.IndentedBlock) else ():
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call)):
                continue
            target = small.targets[0].target
            if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                    and target.value.value == "self"):
                continue
            kind = _callee(small.value.func)
            if kind not in MODULE_SIGS:
                continue
            args = cst.Call(cst.Name("f"), args=small.value.args)
            reader = _FreeNames()
            for arg in small.value.args:
                arg.value.visit(reader)
            source = " ".join(code_of(args)[2:-1].split())
            out.append((target.attr.value, kind, source, tuple(sorted(reader.names))))
    return tuple(out)


class _FreeNames(cst.CSTVisitor):
    """The bare names an expression reads (`a.b` reads `a`; keyword names are not read)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _forward_args(fwd: cst.FunctionDef) -> tuple[tuple[str, str | int, str], ...]:
    """(callee tail name, keyword or position, self attribute) for every `self.x` argument in forward."""
    out: list[tuple[str, str | int, str]] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            fname = _callee(node.func)
            if fname is None:
                return
            for i, arg in enumerate(node.args):
                v = arg.value
                if isinstance(v, cst.Attribute) and isinstance(v.value, cst.Name) and v.value.value == "self":
                    out.append((fname, arg.keyword.value if arg.keyword is not None else i, v.attr.value))

    fwd.visit(_Calls())
    return tuple(out)


def signature_of(model: cst.ClassDef) -> Signature:
    """Model's `__init__` and `forward` signatures (forward must exist: the reader checked)."""
    init = method(model, "__init__")
    fwd = method(model, "forward")
    init_params = init.params if init is not None else cst.Parameters(params=[cst.Param(cst.Name("self"))])
    fwd_params = fwd.params if fwd is not None else cst.Parameters(params=[cst.Param(cst.Name("self"))])
    names = _names(init_params)
    doc = model.get_docstring()
    return Signature(
        init=init_params_of(init_params),
        init_source=code_of(init_params),
        forward_source=code_of(fwd_params),
        forward_returns=code_of(fwd.returns.annotation) if fwd is not None and fwd.returns is not None else None,
        param_names=names,
        forward_names=_names(fwd_params),
        provenance=_provenance(init, names),
        forward_args=_forward_args(fwd) if fwd is not None else (),
        doc=doc.strip() if doc else None,
        modules=_modules(init),
    )


def parameters(source: str) -> cst.Parameters:
    """A parameter list's source text back as libcst nodes, for a generated `def` that copies it."""
    fn = cst.parse_statement(f"def _f({source}):\n    pass\n")
    assert isinstance(fn, cst.FunctionDef)
    return fn.params


def annotation(source: str) -> cst.Annotation:
    return cst.Annotation(cst.parse_expression(source))
