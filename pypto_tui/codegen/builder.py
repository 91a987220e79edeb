"""The shared machinery every pattern uses: templates, named constants, loops, kernels, forward.

A pattern (patterns/*.py) decides *what* the kernel computes; the Builder knows *how* a kernel is
written for the pack's flavour: it fills the pack's templates, expands the `WRITE(dst, value)`
macro with the flavour's write fragment, registers the tile / loop / cube choices as named
constants with the rule ids and numbers behind them, emits loops whose tail never reads past the
end (P6.loop-tail), and builds the statements of ModelNew.forward.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import libcst as cst

from pypto_tui.codegen.context import GenContext
from pypto_tui.codegen.expr import Ex, number_node
from pypto_tui.codegen.spec import Constant, ForwardSpec, KernelSpec, Scalar
from pypto_tui.codegen.templates import fill_expression, fill_statements, find_template
from pypto_tui.errors import Unsupported
from pypto_tui.findings import Finding, cites
from pypto_tui.plan import TileChoice
from pypto_tui.shapes import fmt_dims

Stmts = list[cst.BaseStatement]
Step = Callable[[str, str, str], Stmts]

PYPTO_DTYPES = {"fp32": "DT_FP32", "fp16": "DT_FP16", "bf16": "DT_BF16", "int8": "DT_INT8", "int16": "DT_INT16",
                "int32": "DT_INT32", "int64": "DT_INT64", "fp64": "DT_DOUBLE", "bool": "DT_BOOL"}
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8", "int16": "int16",
                "int32": "int32", "int64": "int64", "fp64": "float64", "bool": "bool"}


def name(n: str) -> cst.Name:
    return cst.Name(n)


def attr(dotted: str) -> cst.BaseExpression:
    parts = dotted.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(node, cst.Name(p))
    return node


def literal(value: Any) -> cst.BaseExpression:
    """Python data (ints, floats, tuples, lists, strings, None) as an expression node."""
    if isinstance(value, cst.BaseExpression):
        return value
    if isinstance(value, Ex):
        return value.node
    if value is None:
        return cst.Name("None")
    if isinstance(value, bool | int | float):
        return number_node(value)
    if isinstance(value, str):
        return cst.SimpleString(quote(value))
    if isinstance(value, tuple):
        elems = [cst.Element(literal(v)) for v in value]
        if len(elems) == 1:
            elems = [elems[0].with_changes(comma=cst.Comma())]
        return cst.Tuple(elems)
    if isinstance(value, list):
        return cst.List([cst.Element(literal(v)) for v in value])
    raise TypeError(f"no literal for {value!r}")


def quote(text: str) -> str:
    """A double-quoted string literal (the style of the rest of the module)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dim_expr(d: str | int | Ex | cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(d, str):
        if " " in d:  # a product of factory names ("batch * m": a batched operand's stacked rows)
            return _parsed_dim(d)
        return attr(d) if "." in d else cst.Name(d)
    return literal(d)


@lru_cache(maxsize=4096)
def _parsed_dim(text: str) -> cst.BaseExpression:
    """Shared, not re-parsed: a concatenation's column offsets are sums over its parts' widths, parsed
    once per part per kernel otherwise (libcst nodes are immutable, so sharing one is safe)."""
    return cst.parse_expression(text)


def dims_list(items: Sequence[Any]) -> cst.List:
    """`[BASIC_BATCH, 0]`-style lists of shape / offset entries."""
    return cst.List([cst.Element(dim_expr(i)) for i in items])


def comment_lines(lines: Sequence[str], width: int = 108) -> list[cst.EmptyLine]:
    """Comment lines, wrapped to the width; continuation lines keep the line's indent + 2."""
    import textwrap

    out: list[cst.EmptyLine] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()))
        wrapped = textwrap.wrap(line, width - 2, subsequent_indent=indent + "  ", break_long_words=False,
                                break_on_hyphens=False) or [""]
        out += [cst.EmptyLine(comment=cst.Comment("# " + w if w else "#")) for w in wrapped]
    return out


class _ExpandWrite(cst.CSTTransformer):
    """`WRITE(dst, value)` statements -> the flavour's write fragment."""

    def __init__(self, fragment: str) -> None:
        self.fragment = fragment

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> Any:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Expr):
            return updated
        call = updated.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "WRITE"):
            return updated
        if len(call.args) != 2:
            raise ValueError("WRITE takes (dst, value)")
        out = fill_statements(self.fragment, None, dst=call.args[0].value, value=call.args[1].value)
        if updated.leading_lines and out:
            out[0] = out[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(out)


class _ValidShape(cst.CSTTransformer):
    """`pypto.view(src, shape, offsets)` -> the same with `valid_shape=[...]` (a partial last block)."""

    def __init__(self, valid: cst.List) -> None:
        self.valid = valid

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        f = updated.func
        if isinstance(f, cst.Attribute) and f.attr.value == "view" and len(updated.args) == 3:
            arg = cst.Arg(self.valid, keyword=cst.Name("valid_shape"),
                          equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                whitespace_after=cst.SimpleWhitespace("")))
            return updated.with_changes(args=[*updated.args, arg])
        return updated


class Builder:
    """Collects constants, kernels and the forward for one generated module."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx
        self.kb = ctx.kb
        self.flavour = ctx.flavour.name
        self.constants: list[Constant] = []
        self.kernels: list[KernelSpec] = []
        self.forward = ForwardSpec()
        self.helpers: list[cst.BaseStatement] = []  # module-level functions placed before the factories
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.pattern = ""
        self.summary = ""
        self.dynamic_dim: str | None = None  # the kernel dim left to run time, once a loop names it
        self._write = find_template(self.kb, self.flavour, "write").text

    # ------------------------------------------------------------------ templates
    def tmpl(self, template: str, **replacements: Any) -> list[cst.BaseStatement]:
        """Fill a pack template (nodes, Ex values or statement lists) and expand WRITE macros."""
        repl = {k: (v.node if isinstance(v, Ex) else v) for k, v in replacements.items()}
        text = find_template(self.kb, self.flavour, template).text
        expand = _ExpandWrite(self._write) if "WRITE(" in text else None
        return fill_statements(text, expand, **repl)

    def write(self, dst: str, value: Ex | cst.BaseExpression) -> list[cst.BaseStatement]:
        v = value.node if isinstance(value, Ex) else value
        return fill_statements(self._write, None, dst=name(dst), value=v)

    # ------------------------------------------------------------------ dtypes
    def input_dtype(self, tensor: str) -> str:
        """The dtype of the task's input `tensor` (the kernel's main dtype when the contract has none)."""
        inp = self.ctx.contract.input(tensor)
        return (inp.dtype if inp is not None else None) or self.ctx.dtype

    def pdtype(self, dtype: str | None = None) -> cst.BaseExpression:
        dt = dtype or self.ctx.dtype
        if dt not in PYPTO_DTYPES:
            raise Unsupported(f"dtype {dt} has no pypto equivalent")
        return attr(f"pypto.{PYPTO_DTYPES[dt]}")

    def tdtype(self, dtype: str | None = None) -> cst.BaseExpression:
        return attr(f"torch.{TORCH_DTYPES[dtype or self.ctx.dtype]}")

    # ------------------------------------------------------------------ constants
    def add_constant(self, c: Constant) -> Ex:
        if any(k.name == c.name for k in self.constants):
            raise ValueError(f"constant {c.name} defined twice")
        self.constants.append(c)
        return Ex.name(c.name, tensor=False)

    def tile_constant(self, choice: TileChoice, what: str, loop_note: str | None = None) -> Ex:
        """The tile the plan chose for a role, as a named constant with the numbers behind it
        (rules P4, O1); a step-down the tile step made is written next to it."""
        ev, role = choice.evaluation, choice.role
        shape = ev.shape
        cap_e, cap_t = self.kb.limits.max_elements, self.kb.limits.max_auto_tiles
        need = self.kb.limits.contiguous_bytes
        nums = (f"prod {ev.prod} (limit {cap_e}), auto_tiles {ev.auto_tiles} (limit {cap_t}), "
                f"contiguous {ev.contiguous_bytes} B (target {need} B)")
        if ev.reduce_segments is not None:
            nums += f", {ev.reduce_segments} reduce segment(s) on axis {ev.reduce_dim}"
        rules = ["P4.tile-budget", "P4.auto-tiles", "O1.contiguous-1kb"]
        if ev.reduce_dim is not None:
            rules.append("O1.reduce-sweet-spot")
        if choice.source == "stepped-down":
            rules.append("O1.ub-step-down")
        lines = [f"{role.constant}: vec tile for {what} {fmt_dims(shape)} {ev.dtype} ({', '.join(rules)}):",
                 f"  {nums}."]
        if choice.note:
            lines.append(f"  {choice.note}.")
        self.findings.extend(choice.findings)
        for f in ev.findings:
            if f.level in ("warn", "error"):
                text = f.message
                if f.rule == "P4.auto-tiles" and loop_note:
                    text = f"{text.split(':')[0]}: {loop_note}"
                lines.append(f"  {f.level} {f.rule}: {text}")
                if f.rule not in rules:
                    rules.append(f.rule)
                if not (f.rule == "P4.auto-tiles" and loop_note):
                    self.findings.append(f)
        return self.add_constant(Constant(role.constant, choice.tile, lines, tuple(rules), ev.numbers()))

    @cites("B.matmul-cube-tiles")
    def cube_constants(self, role: str | None = None, dtype: str | None = None) -> tuple[Ex, Ex, Ex]:
        """set_cube_tile_shapes(m, k, n) as the tile step chose them for the plan's matmul, or for the
        further matmul `role` (constants prefixed with the role: SCORES_CUBE_M, ...)."""
        cube = self.ctx.plan.cube if role is None else dict(self.ctx.plan.more_cubes).get(role)
        if cube is None:
            raise Unsupported(f"the plan has no cube tiles for its {role or 'main'} matmul")
        prefix = f"{role.upper()}_" if role else ""
        chosen = cube.evaluation
        for f in chosen.findings:
            if f.level in ("warn", "error"):
                self.findings.append(f)
        M, K, N, dt = cube.M, cube.K, cube.N, dtype or self.ctx.dtype
        what = f" ({role} matmul)" if role else ""
        lines = [f"{prefix}CUBE_M, {prefix}CUBE_K, {prefix}CUBE_N: set_cube_tile_shapes{what} for M={M}, K={K}, "
                 f"N={N} {dt} from {cube.source} (B.matmul-cube-tiles):",
                 f"  L0A {chosen.l0a_bytes} B, L0B {chosen.l0b_bytes} B, L0C {chosen.l0c_bytes} B, "
                 f"L1 {chosen.l1_bytes} B; {chosen.tasks} cube task(s) over the output."]
        numbers = {"M": M, "K": K, "N": N, "l0a_bytes": chosen.l0a_bytes, "l0b_bytes": chosen.l0b_bytes,
                   "l0c_bytes": chosen.l0c_bytes, "l1_bytes": chosen.l1_bytes, "tasks": chosen.tasks}
        m = self.add_constant(Constant(f"{prefix}CUBE_M", list(chosen.m), lines, ("B.matmul-cube-tiles",), numbers))
        k = self.add_constant(Constant(f"{prefix}CUBE_K", list(chosen.k), [], ("B.matmul-cube-tiles",), {}))
        n = self.add_constant(Constant(f"{prefix}CUBE_N", list(chosen.n), [], ("B.matmul-cube-tiles",), {}))
        return m, k, n

    # ------------------------------------------------------------------ loops
    @cites("P6.loop-tail", "CL.ceil-div")
    def loop_constant(self) -> Ex:
        """LOOP_COUNT as the loop step chose it, with BASIC_BATCH, iterations, the tail and the
        tiles per iteration written next to it."""
        loop = self.ctx.loop
        if loop is None:
            raise Unsupported("the pattern asked for a loop the plan does not have")
        cand, total, count = loop.candidate, loop.total, loop.count
        reason = loop.reason + (f"; {loop.note}" if loop.note else "")
        tail_text = ("no tail" if not cand.has_tail else
                     f"{cand.num_iters - 1} full chunks + a tail view of {cand.tail} (never past the end)")
        lines = [f"LOOP_COUNT: one pypto.loop along axis {loop.axis} of {fmt_dims(loop.shape)} "
                 "(P6.avoid-loops, O2.loop-log-scale, P6.loop-tail):",
                 f"  {reason}; BASIC_BATCH = ceil_div({total}, {count}) = {cand.basic_batch}, "
                 f"{cand.num_iters} iteration(s), {tail_text}"
                 + ("." if loop.why == "matmul" else f", {cand.auto_tiles_per_iter} tile(s) per iteration.")]
        for f in loop.findings:
            if f.level in ("warn", "error"):
                lines.append(f"  {f.level} {f.rule}: {f.message}")
                self.findings.append(f)
        numbers = {"axis": loop.axis, "total": total, "basic_batch": cand.basic_batch, "iterations": cand.num_iters,
                   "tail": cand.tail if cand.has_tail else 0, "auto_tiles_per_iter": cand.auto_tiles_per_iter}
        return self.add_constant(Constant("LOOP_COUNT", count, lines,
                                          ("P6.avoid-loops", "O2.loop-log-scale", "P6.loop-tail"), numbers))

    def chunked_loop(self, total: str, step: Step, idx: str = "bi", loop_name: str = "LOOP",
                     setup: Sequence[cst.BaseStatement] = ()) -> tuple[Stmts, Stmts]:
        """The plan's loop written out: (factory prelude, kernel body).

        The prelude names LOOP_COUNT and derives BASIC_BATCH, MAIN_ITERS, TAIL_OFFSET and TAIL from
        the shape the factory is called with; the body is `setup`, then one `pypto.loop` over the
        full chunks and the constant-shape tail chunk. `step(size, offset, suffix)` writes one chunk.
        When the plan leaves the loop's axis to run time (a dynamic axis), BASIC_BATCH is a module
        constant instead and the loop runs ceildiv(size, BASIC_BATCH) times with a partial last block."""
        if self.ctx.plan.dynamic is not None:
            self.dynamic_dim = total
            self.dynamic_block_constant()
            return [], list(setup) + self.loop_over(step, idx, loop_name)
        prelude = self.loop_prelude(total, self.loop_constant())
        return prelude, list(setup) + self.loop_over(step, idx, loop_name)

    def loop_over(self, step: Step, idx: str = "bi", loop_name: str = "LOOP") -> list[cst.BaseStatement]:
        """Another pass over the same chunks (after `chunked_loop` named the loop sizes)."""
        if self.dynamic_dim is not None:
            return self.tmpl("dynamic_loop", total=name(self.dynamic_dim), idx=name(idx), name=literal(loop_name),
                             idx_name=literal(idx), main=step("BASIC_BATCH", "off", "chunk"))
        return self.loop(idx, loop_name, step("BASIC_BATCH", "off", "chunk"), step("TAIL", "TAIL_OFFSET", "tail"))

    @cites("P1.dynamic-axis")
    def dynamic_block_constant(self) -> Ex:
        """BASIC_BATCH for a dynamic axis: the loop's chunk at the design's size, fixed at scaffold time."""
        dyn, loop = self.ctx.plan.dynamic, self.ctx.loop
        assert dyn is not None and loop is not None
        lines = [f"BASIC_BATCH: one pypto.loop along the dynamic axis {loop.axis} (input axis {dyn.input_axis}, from "
                 f"{dyn.source}; P1.dynamic-axis, O2.loop-log-scale):",
                 f"  at the design's size {loop.total} the plan runs {loop.count} iteration(s) of {dyn.block}; at run "
                 f"time the kernel runs ceildiv(size, {dyn.block}) of them, the last one partial (valid_shape)."]
        numbers = {"axis": loop.axis, "total": loop.total, "basic_batch": dyn.block, "loop_count": loop.count,
                   "dynamic_input_axis": dyn.input_axis}
        return self.add_constant(Constant("BASIC_BATCH", dyn.block, lines, ("P1.dynamic-axis", "P6.loop-tail"),
                                          numbers))

    def loop_prelude(self, total: str, count: Ex) -> list[cst.BaseStatement]:
        return self.tmpl("loop_prelude", total=name(total), count=count)

    def loop(self, idx: str, loop_name: str, main: list[cst.BaseStatement],
             tail: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        return self.tmpl("loop", idx=name(idx), name=literal(loop_name), idx_name=literal(idx), main=main, tail=tail)

    def view(self, chunk: str, src: str, shape: Sequence[Any], offsets: Sequence[Any],
             pragma: str | None = None) -> list[cst.BaseStatement]:
        stmts = self.tmpl("view", chunk=name(chunk), src=name(src),
                          shape=cst.List([cst.Element(dim_expr(d)) for d in shape]),
                          offsets=cst.List([cst.Element(dim_expr(d)) for d in offsets]))
        if self.dynamic_dim is not None and "BASIC_BATCH" in shape:
            valid = cst.List([cst.Element(dim_expr("valid" if d == "BASIC_BATCH" else d)) for d in shape])
            stmts = [s.visit(_ValidShape(valid)) for s in stmts]  # type: ignore[misc]
        if pragma:
            s = stmts[0]
            assert isinstance(s, cst.SimpleStatementLine)
            stmts[0] = s.with_changes(trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(pragma)))
        return stmts

    @staticmethod
    def chunk_shape(shape: Sequence[Any], axis: int, size: str) -> list[Any]:
        """`shape` (names, ints or expressions) with the loop axis replaced by the chunk's size."""
        return [size if i == axis else d for i, d in enumerate(shape)]

    @staticmethod
    def chunk_offsets(rank: int, axis: int, off: str) -> list[str | int]:
        return [off if i == axis else 0 for i in range(rank)]

    # ------------------------------------------------------------------ kernels
    def tensor_type(self, shape: Sequence[str | int | cst.BaseExpression],
                    dtype: str | None = None) -> cst.BaseExpression:
        """`pypto.Tensor((m, k), DT)`; a shape with a pypto.DYNAMIC entry is a list, the only form
        pypto 0.2.0 accepts for it (a tuple is refused: "Invalid value type")."""
        dims = [dim_expr(d) for d in shape]
        elems = [cst.Element(d) for d in dims]
        if any(d == "pypto.DYNAMIC" for d in shape):
            return fill_expression("pypto.Tensor({shape}, {dtype})", shape=cst.List(elems), dtype=self.pdtype(dtype))
        if len(elems) == 1:
            elems = [elems[0].with_changes(comma=cst.Comma())]
        return fill_expression("pypto.Tensor({shape}, {dtype})", shape=cst.Tuple(elems), dtype=self.pdtype(dtype))

    def add_kernel(self, spec: KernelSpec) -> None:
        self.kernels.append(spec)

    # ------------------------------------------------------------------ forward
    def fwd(self, text: str, **repl: Any) -> list[cst.BaseStatement]:
        """A forward statement from a small inline template filled with nodes."""
        return fill_statements(text, None, **{k: (v.node if isinstance(v, Ex) else v) for k, v in repl.items()})

    def expr(self, text: str, **repl: Any) -> cst.BaseExpression:
        """An expression from a small inline template filled with nodes."""
        return fill_expression(text, **{k: (v.node if isinstance(v, Ex) else v) for k, v in repl.items()})

    def assert_rank(self, tensor: str, rank: int) -> None:
        self.forward.asserts += self.fwd(
            "assert {t}.dim() == {r}, {msg}", t=name(tensor), r=literal(rank),
            msg=literal(f"{tensor}: expected a rank-{rank} tensor"))

    def assert_same_shape(self, a: str, b: str) -> None:
        self.forward.asserts += self.fwd(
            "assert {a}.shape == {b}.shape, {msg}", a=name(a), b=name(b),
            msg=literal(f"{b} must have the shape of {a}"))

    def assert_expr(self, test: cst.BaseExpression, message: str) -> None:
        self.forward.asserts += self.fwd("assert {test}, {msg}", test=test, msg=literal(message))

    def prepare(self, tensor: str, reshape: Sequence[cst.BaseExpression] | None, suffix: str) -> str:
        """`x_flat = x.reshape(...).contiguous()`, or `x = x.contiguous()` when no reshape."""
        if reshape is None:
            self.forward.prepare += self.fwd("{t} = {t}.contiguous()", t=name(tensor))
            return tensor
        new = f"{tensor}_{suffix}"
        args = [cst.Arg(e) for e in reshape]
        self.forward.prepare += self.fwd("{n} = {t}.reshape({args}).contiguous()", n=name(new), t=name(tensor),
                                         args=args)
        return new

    def reshape_args(self, tensor: str, axis_map: Sequence[Sequence[int]]) -> list[cst.BaseExpression]:
        """The forward reshape for a dims plan, written on the tensor's own shape so it holds at
        any size: one kernel axis per group of original axes; the first merged group is -1, any
        other merged group the product of its axes."""
        out: list[cst.BaseExpression] = []
        used_minus = False
        for group in axis_map:
            if len(group) == 1:
                out.append(self.expr("{t}.shape[{a}]", t=name(tensor), a=literal(group[0])))
            elif not used_minus:
                used_minus = True
                out.append(number_node(-1, paren=False))
            else:
                e = self.expr("{t}.shape[{a}]", t=name(tensor), a=literal(group[0]))
                for a in group[1:]:
                    e = self.expr("{e} * {t}.shape[{a}]", e=e, t=name(tensor), a=literal(a))
                out.append(e)
        return out

    def call_as_laid_out(self, spec: KernelSpec, x: str, dims: Sequence[str]) -> None:
        """A kernel on one input in its own layout: forward asserts the rank, makes the input
        contiguous, reads its dims, calls the kernel and returns the output as it is."""
        self.add_kernel(spec)
        plan = self.ctx.dims
        if plan.reshape == "keep" and plan.forward_reshape and plan.forward_reshape[0] is not None:
            # kept axes merged in forward (a rank-5 softmax over channels): the kernel sees the
            # merged layout, the caller gets the input's own shape back
            self.assert_rank(x, sum(len(g) for g in plan.axis_map))
            xn = self.prepare(x, self.reshape_args(x, plan.axis_map), "merged")
            self.unpack_dims(xn, dims)
            self.call_kernel(spec, [xn])
            self.forward.result = self.expr("out.reshape({x}.shape)", x=name(x))
            return
        self.assert_rank(x, len(dims))
        xn = self.prepare(x, None, "")
        self.unpack_dims(xn, dims)
        self.call_kernel(spec, [xn])
        self.forward.result = name("out")

    def reduced_result(self, x: str, kernel_out: Sequence[int], keepdim: bool) -> cst.BaseExpression:
        """`out`, or `out.reshape(...)` written on the input's shape when the kernel's reduced layout
        differs from the baseline's (P2.keepdim-direct: the reduced axes kept only as the baseline does)."""
        c = self.ctx.contract
        if c.output_shape is None or tuple(c.output_shape) == tuple(kernel_out):
            return name("out")
        if not c.output_shape:
            return self.expr("out.reshape(())")
        axes = set(c.reduction.axes) if c.reduction else set()
        rank = len(c.operands[0].shape or ())
        parts: list[cst.BaseExpression] = []
        for a in range(rank):
            if a in axes:
                if keepdim:
                    parts.append(literal(1))
            else:
                parts.append(self.expr("{x}.shape[{a}]", x=name(x), a=literal(a)))
        return self.expr("out.reshape({args})", args=[cst.Arg(p) for p in parts])

    def unpack_dims(self, tensor: str, dims: Sequence[str]) -> None:
        targets = [cst.Element(name(d)) for d in dims]
        if len(targets) == 1:
            targets = [targets[0].with_changes(comma=cst.Comma())]
        self.forward.prepare += self.fwd("{targets} = {t}.shape", targets=cst.Tuple(targets, lpar=[], rpar=[])
                                         if len(dims) > 1 else cst.Tuple(targets), t=name(tensor))

    def call_kernel(self, spec: KernelSpec, inputs: Sequence[str], out: str = "out",
                    device_of: str | None = None, filled: float | None = None) -> None:
        """`kernel = create_...(dims..., scalars...)`, then the flavour's call fragment (`filled`: its output
        allocated holding that value, which the kernel leaves where it writes nothing: CONV.zeros-allocated)."""
        fargs = [cst.Arg(name(d)) for d in spec.dims if d != self.dynamic_dim]
        fargs += [cst.Arg(s.source) for s in spec.scalars]
        self.forward.calls += self.fwd("kernel = {factory}({args})", factory=name(spec.factory), args=fargs) \
            if fargs else self.fwd("kernel = {factory}()", factory=name(spec.factory))
        args = [cst.Arg(name(i)) for i in inputs]
        if self.ctx.out_param:
            args.append(cst.Arg(name(out)))
        shape = literal(tuple(dim_expr(d) for d in spec.output.shape))
        template = "call" if filled is None else "call_zeroed" if filled == 0.0 else "call_filled"
        text = find_template(self.kb, self.flavour, template).text
        value = self.expr(f'float("{filled}")') if filled is not None and not math.isfinite(filled) else literal(filled)
        self.forward.calls += fill_statements(
            text, None, out=name(out), shape=shape, dtype=self.tdtype(spec.output.dtype),
            device=attr(f"{device_of or inputs[0]}.device"), kernel=name("kernel"), args=args, fill=value)

    def scalar(self, sname: str, value: Any, init_key: str | None = None, forward_input: str | None = None,
               cast: str = "float") -> Scalar:
        """A factory scalar: from an init parameter (self.<param>), a forward input, or a literal."""
        prov = self.ctx.task.provenance
        if forward_input is not None:
            src: cst.BaseExpression = fill_expression("{cast}({v})", cast=name(cast), v=name(forward_input))
        elif init_key is not None and init_key in prov:
            src = fill_expression("{cast}(self.{p})", cast=name(cast), p=name(prov[init_key]))
        else:
            if value is None:
                raise Unsupported(f"the value of {sname} is unknown")
            src = literal(float(value) if cast == "float" else int(value))
        return Scalar(sname, src, value)
