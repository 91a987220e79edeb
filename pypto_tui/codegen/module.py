"""Assemble the module: the flavour's skeleton, the constants, one factory per kernel, ModelNew.

Everything is a syntax tree until the very end; layout (blank lines between top-level blocks,
one parameter per line in long signatures) is set on the nodes, so the same design always prints
the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from pypto_tui.codegen.builder import Builder, comment_lines, dims_list, literal, name
from pypto_tui.codegen.cse import share_repeats
from pypto_tui.codegen.model_new import build_model_new, docstring
from pypto_tui.codegen.rewrite import code_of, transform
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.codegen.templates import fill_module, find_template
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

MAX_LINE = 110
DYNAMIC = "pypto.DYNAMIC"  # a tensor-type entry written as the attribute, not a name


def _blank(n: int) -> list[cst.EmptyLine]:
    return [cst.EmptyLine() for _ in range(n)]


def _with_leading(stmt: cst.BaseStatement, lines: Sequence[cst.EmptyLine]) -> cst.BaseStatement:
    return stmt.with_changes(leading_lines=list(lines))


def _params(names: Sequence[str]) -> cst.Parameters:
    return cst.Parameters(params=[cst.Param(name(n)) for n in names])


def _multiline(params: list[cst.Param]) -> cst.Parameters:
    """One parameter per line, trailing comma, closing paren on its own line."""
    nl_indent = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                            last_line=cst.SimpleWhitespace("    "))
    nl_close = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                           last_line=cst.SimpleWhitespace(""))
    out = []
    for i, p in enumerate(params):
        ws = nl_close if i == len(params) - 1 else nl_indent
        out.append(p.with_changes(comma=cst.Comma(whitespace_after=ws)))
    return cst.Parameters(params=out)


def _kernel_params(b: Builder, spec: KernelSpec) -> tuple[cst.Parameters, bool]:
    tensors = list(spec.inputs) + ([spec.output] if b.ctx.out_param else [])
    params = [cst.Param(name(t.name), annotation=cst.Annotation(b.tensor_type(t.shape, t.dtype)))
              for t in tensors]
    line = code_of(cst.Parameters(params=params))
    long = len(line) + len(spec.kernel) + 16 > MAX_LINE
    return (_multiline(params) if long else cst.Parameters(params=params)), long


@cites("P1.static-shape", "API.module-name", "CL.run-mode-header")
def build_factory(b: Builder, spec: KernelSpec) -> list[cst.BaseStatement]:
    """One factory: shapes and scalars as closure constants, returning the jit kernel (P1.static-shape).
    A dynamic dim is no factory parameter: the kernel reads it from its first tensor that has it."""
    spec = _dynamic(b, spec)
    spec = replace(spec, body=share_repeats(spec.body, [t.name for t in (*spec.inputs, spec.output)]))
    kparams, long = _kernel_params(b, spec)
    repl: dict[str, object] = {
        "factory": name(spec.factory), "kernel": name(spec.kernel), "params": _params(spec.factory_params),
        "kernel_params": kparams, "doc": [docstring(spec.doc, "    ")], "prelude": list(spec.prelude),
        "body": list(spec.body),
    }
    if not b.ctx.out_param:
        out = spec.output
        repl.update(out=name(out.name), out_type=cst.Annotation(b.tensor_type(out.shape, out.dtype)),
                    out_shape=dims_list(out.shape), out_dtype=b.pdtype(out.dtype))
    stmts = b.tmpl("factory", **repl)
    if long:
        stmts = _break_params(stmts, spec.kernel)
    return stmts


def _dynamic(b: Builder, spec: KernelSpec) -> KernelSpec:
    """The spec with its dynamic dim (if any) left to run time: pypto.DYNAMIC in the tensor types, read
    from the first tensor that has it at the top of the kernel, and dropped from the factory's parameters."""
    dim = b.dynamic_dim
    if dim is None or dim not in spec.dims:
        return spec
    prelude_code = "\n".join(code_of(stmt) for stmt in spec.prelude)
    if re.search(rf"\b{re.escape(dim)}\b", prelude_code):
        raise Unsupported(f"the factory computes with the size '{dim}' before the kernel runs, so it cannot be "
                          "left to run time: keep this axis static")
    source = next((t for t in spec.inputs if dim in t.shape), None)
    if source is None:
        raise Unsupported(f"no kernel input carries the dynamic size '{dim}'")
    read = b.fwd("{d} = {t}.shape[{i}]", d=name(dim), t=name(source.name), i=literal(list(source.shape).index(dim)))

    def dyn(t: TensorParam) -> TensorParam:
        return replace(t, shape=tuple(DYNAMIC if d == dim else d for d in t.shape))

    return replace(spec, dims=[d for d in spec.dims if d != dim], inputs=[dyn(t) for t in spec.inputs],
                   output=dyn(spec.output), body=[*read, *spec.body])


def _break_params(stmts: list[cst.BaseStatement], kernel: str) -> list[cst.BaseStatement]:
    """Put the first parameter of the kernel's signature on its own line (one per line). Only compound
    statements are entered (a def is never inside a simple one), and not the kernel's own body."""
    ws = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                     last_line=cst.SimpleWhitespace("    "))

    def whole(node: cst.CSTNode) -> cst.CSTNode | None:
        if isinstance(node, cst.FunctionDef) and node.name.value == kernel:
            return node.with_changes(whitespace_before_params=ws)
        return node if isinstance(node, cst.SimpleStatementLine | cst.BaseExpression) else None

    return [transform(s, {}, whole) for s in stmts]


def _constants(b: Builder) -> list[cst.BaseStatement]:
    out: list[cst.BaseStatement] = []
    for i, c in enumerate(b.constants):
        stmt = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(name(c.name))], literal(c.value))])
        lead = ([] if i == 0 or not c.comment else _blank(1)) + comment_lines(c.comment)
        out.append(_with_leading(stmt, lead))
    return out


def _module_doc(b: Builder) -> cst.SimpleStatementLine:
    ctx = b.ctx
    c = ctx.contract
    task = ctx.task_path.rsplit("/", 1)[-1] if ctx.task_path else "the task"
    lines = [f"{ctx.task.doc or (c.formula or 'Generated kernel')}",
             "",
             f"Generated by pypto-tui from {task} (knowledge pack '{ctx.kb.name}' {ctx.kb.version}, "
             f"flavour '{ctx.flavour.name}').",
             f"{b.summary}.",
             f"Contract: {c.family} / {c.op}" + (f"; formula: {c.formula}" if c.formula else "") + "."]
    if c.direction:
        lines.append(f"Direction: {c.direction}.")
    lines += b.notes
    # A task's name or docstring may hold control characters (ESC, BEL): the module shows them as <U+001B>.
    return docstring("".join(ch if ch.isprintable() or ch == "\n" else f"<U+{ord(ch):04X}>" for ch in "\n".join(lines)))


def assemble(b: Builder) -> cst.Module:
    """The whole module for a built design."""
    factories: list[cst.BaseStatement] = []
    for stmt in b.helpers:
        factories.append(_with_leading(stmt, _blank(2)) if factories else stmt)
    for spec in b.kernels:
        stmts = build_factory(b, spec)
        if factories and stmts:
            stmts[0] = _with_leading(stmts[0], _blank(2))
        factories += stmts
    model = build_model_new(b)
    text = find_template(b.kb, b.flavour, "module").text
    module = fill_module(text, doc=[_module_doc(b)], run_mode=b.tmpl("run_mode"), constants=_constants(b),
                         factories=factories, model_new=model)
    return module
