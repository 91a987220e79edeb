"""What ModelNew must copy from the task file: `Model.__init__`'s exact signature, `forward`'s
parameters, and where each init parameter ends up.

The harness builds `ModelNew(*get_init_inputs())` (P1.init-signature), so the generated
`__init__` reuses the task's own parameter nodes (names, annotations, defaults) verbatim. The
kernel's scalars (alpha, eps, margin, ...) must then come from those parameters, not from the
values get_init_inputs happened to pass, or `ModelNew(alpha=2.0)` would silently compute with
1.0: `provenance` maps a scalar's name (`self.alpha = alpha` gives `alpha`;
`nn.TripletMarginLoss(margin=margin)` gives `margin`; positional module arguments are bound with
the contract's signature table) to the init parameter that feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from pypto_tui.contract.reader import parse as parse_task
from pypto_tui.errors import InputError, TaskFileError
from pypto_tui.fileio import read_text
from pypto_tui.source_bounds import MAX_BYTES


@dataclass
class TaskShape:
    """The parts of the task file the generated module copies."""

    init_params: cst.Parameters
    forward_params: cst.Parameters
    forward_returns: cst.Annotation | None
    param_names: list[str]
    forward_names: list[str]
    provenance: dict[str, str] = field(default_factory=dict)
    doc: str | None = None
    forward_args: dict[tuple[str, str | int], str] = field(default_factory=dict)

    def op_arg_source(self, op: str, key: str, positional: tuple[str, ...] = ()) -> str:
        """The provenance key of an op argument: `F.leaky_relu(x, negative_slope=self.slope)` (or
        `F.leaky_relu(x, self.slope)`) in forward gives `slope`; otherwise the argument's own name
        (`self.alpha = alpha` / `nn.ELU(alpha=alpha)` are found under `alpha`)."""
        attr = self.forward_args.get((op, key))
        if attr is None and key in positional:
            attr = self.forward_args.get((op, positional.index(key) + 1))
        return attr if attr is not None else key


def _find_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == name:
            return stmt
    return None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def _names(params: cst.Parameters) -> list[str]:
    out = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    return out[1:] if out and out[0] == "self" else out


def _docstring(cls: cst.ClassDef) -> str | None:
    doc = cls.get_docstring()
    return doc.strip() if doc else None


def _module_type(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _provenance(init: cst.FunctionDef | None, params: list[str]) -> dict[str, str]:
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
                sig = MODULE_SIGS.get(_module_type(value.func) or "", ())
                names = [p for p, _ in sig]
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


def _forward_args(fwd: cst.FunctionDef) -> dict[tuple[str, str | int], str]:
    """(function tail name, keyword or position) -> self attribute, for calls in forward."""
    out: dict[tuple[str, str | int], str] = {}

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            fname = _module_type(node.func)
            if fname is None:
                return
            for i, arg in enumerate(node.args):
                v = arg.value
                if isinstance(v, cst.Attribute) and isinstance(v.value, cst.Name) and v.value.value == "self":
                    key: str | int = arg.keyword.value if arg.keyword is not None else i
                    out[(fname, key)] = v.attr.value

    fwd.visit(_Calls())
    return out


def read_task_shape(source: str, path: str | None = None) -> TaskShape:
    """Model.__init__ and Model.forward of a task file (TaskFileError when they are missing)."""
    where = path or "the task file"
    module = parse_task(source, path)  # bounded: a hostile file is refused before libcst parses it
    cls = _find_class(module, "Model")
    if cls is None:
        raise TaskFileError(f"{where} has no `class Model`")
    init = _method(cls, "__init__")
    fwd = _method(cls, "forward")
    if fwd is None:
        raise TaskFileError(f"{where}: class Model has no forward()")
    init_params = init.params if init is not None else cst.Parameters(params=[cst.Param(cst.Name("self"))])
    names = _names(init_params)
    return TaskShape(
        init_params=init_params, forward_params=fwd.params, forward_returns=fwd.returns,
        param_names=names, forward_names=_names(fwd.params), provenance=_provenance(init, names),
        doc=_docstring(cls), forward_args=_forward_args(fwd),
    )


def load_task_shape(path: str | Path) -> TaskShape:
    p = Path(path)
    try:
        text = read_text(p, "task file", MAX_BYTES)
    except InputError as exc:
        raise TaskFileError(str(exc)) from None
    return read_task_shape(text, str(p))
