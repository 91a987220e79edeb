"""ModelNew: the task's `Model` with the kernel in place of torch (P1.init-signature, P2).

`__init__` takes exactly `Model.__init__`'s parameter list (the task's own nodes, copied) and
keeps every parameter on `self`, so the kernel's scalars are read from what the harness passed.
`forward` takes `Model.forward`'s parameters and return annotation, and its body is only what
P2 allows: asserts on rank and shape, reshapes to the kernel's layout, `.contiguous()`, the
output allocation (0.2.0 flavour), the kernel call, and the reshape back to the baseline's output
shape (keepdim exactly as the baseline, P2.keepdim-direct). Kernels come from the cached factory
for the shapes forward sees, so the same module runs at reduced test shapes.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from pypto_tui.codegen.builder import Builder, name
from pypto_tui.codegen.templates import statements
from pypto_tui.contract.signature import annotation, parameters
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    """Wrap each paragraph line to the module's width (docstrings stay readable)."""
    out: list[str] = []
    for line in text.splitlines():
        if len(indent) + len(line) <= WIDTH or not line.strip():
            out.append(line)
        else:
            out.extend(textwrap.wrap(line, WIDTH - len(indent), break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)


def docstring(text: str, indent: str = "") -> cst.SimpleStatementLine:
    """A triple-quoted docstring statement (text made safe for a literal)."""
    safe = _wrap(text.replace("\\", "/").replace('"""', "'''").strip(), indent + "   ")
    if "\n" in safe:
        body = "\n".join((indent + line) if line.strip() else "" for line in safe.splitlines()[1:])
        first = safe.splitlines()[0]
        value = f'"""{first}\n{body}\n{indent}"""'
    else:
        value = f'"""{safe}"""'
    return cst.SimpleStatementLine([cst.Expr(cst.SimpleString(value))])


@cites("P1.init-signature", "P2.forward-duties", "P2.keepdim-direct")
def build_model_new(b: Builder) -> list[cst.BaseStatement]:
    """The ModelNew class for the builder's forward (asserts, prepare, calls, result)."""
    task = b.ctx.task
    f = b.forward
    if f.result is None:
        raise Unsupported("the pattern produced no forward result")
    init_body = statements([*(b.fwd("self.{p} = {p}", p=name(p)) for p in task.param_names), f.init])
    forward_body = statements([f.asserts, f.prepare, f.calls, b.fwd("return {r}", r=f.result)])
    doc = docstring(f"{b.summary or 'The PyPTO kernel'}.\n\nSame __init__ signature as Model; forward only asserts, "
                    "reshapes, calls the kernel and reshapes back (P2.forward-duties).", "    ")
    stmts = b.tmpl("model_new", doc=[doc], init_params=parameters(task.init_source), init_body=init_body,
                   forward_params=parameters(task.forward_source), forward_body=forward_body)
    returns = annotation(task.forward_returns) if task.forward_returns else None
    return [_set_returns(s, returns) for s in stmts]


def _set_returns(stmt: cst.BaseStatement, returns: cst.Annotation | None) -> cst.BaseStatement:
    if not isinstance(stmt, cst.ClassDef) or returns is None:
        return stmt

    annotation = returns

    class _Returns(cst.CSTTransformer):
        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            if updated.name.value == "forward":
                return updated.with_changes(returns=annotation.deep_clone())
            return updated

    return stmt.visit(_Returns())  # type: ignore[return-value]
