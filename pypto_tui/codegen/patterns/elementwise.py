"""Pattern A: elementwise work on the flattened inputs; a loop only when auto_tiles is too high.

The documents' rule (P3.flatten-elementwise, A.elementwise-flat): there is no data dependence,
so every input is flattened to 1-D in forward and the kernel runs one op chain over it; whether
a loop is needed depends on auto_tiles alone. The op chain comes from the activation table, from
a scalar/tensor binary op, or from the contract's expression tree for an unnamed expression.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import libcst as cst

from pypto_tui.codegen import activations
from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call, number_node
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.patterns.broadcast import build_broadcast
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import Finding, cites

Value = Callable[[Mapping[str, Ex]], Ex]
Terms = Callable[[Mapping[str, Ex]], Stmts]


def _no_terms(env: Mapping[str, Ex]) -> Stmts:
    return []

def _compare(op: str, a: Ex, b: Ex) -> Ex:
    return activations.render(op, [a, b], {})


_BINARY: dict[str, Callable[[Ex, Ex], Ex]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    **{op: partial(_compare, op) for op in ("lt", "gt", "le", "ge", "eq", "ne")}}


def _expression(b: Builder, data: Any, scalars: dict[str, Scalar], leaves: tuple[str, ...] = ()) -> Value:
    """The contract's expression tree (op_args['expr'], or a tree whose view chains are already
    leaves named in `leaves`) as a pypto expression builder."""
    from pypto_tui.contract import ir

    root = data if isinstance(data, ir.Node) else ir.from_data(data)
    c = b.ctx.contract
    tensor_names = {t.name for t in c.tensor_inputs} | set(leaves)
    scalar_inputs = {t.name: t for t in c.scalar_inputs}

    def conv(n: Any, env: Mapping[str, Ex]) -> Ex:
        if n.kind == "in":
            if n.name in tensor_names:
                return env[n.name]
            if n.name in scalar_inputs:
                if n.name not in scalars:
                    scalars[n.name] = b.scalar(n.name, scalar_inputs[n.name].value, forward_input=n.name)
                return Ex.name(n.name, tensor=False)
            raise Unsupported(f"the expression reads '{n.name}', which is not a forward input")
        if n.kind == "const":
            v = n.value
            origin = n.name or ""
            if origin.startswith("self.") and isinstance(v, int | float) and not isinstance(v, bool):
                key = origin[5:]
                if key in b.ctx.task.provenance:
                    pname = _safe(key)
                    if pname not in scalars:
                        scalars[pname] = b.scalar(pname, v, init_key=key)
                    return Ex.name(pname, tensor=False)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise Unsupported(f"the constant {v!r} in the expression has no pypto form")
            if isinstance(v, float) and v in (float("inf"), float("-inf")):  # masked_fill's -inf
                return Ex(cst.parse_expression(f'float("{v}")'), False)
            return Ex.num(float(v) if isinstance(v, float) else v)
        if n.kind == "bin" and n.name in _BINARY:
            return _BINARY[n.name](conv(n.args[0], env), conv(n.args[1], env))
        if n.kind == "neg":
            return -conv(n.args[0], env)
        if n.kind == "call":
            if n.name == "rotate_half" and len(n.args) == 1:
                return _rotate_half(b, conv(n.args[0], env))
            if n.name == "gelu" and any(k == "approximate" and v.is_const and v.value not in (None, "none")
                                        for k, v in n.kwargs):
                raise Unsupported("gelu(approximate='tanh') inside an expression is not scaffolded")
            arity = activations.arity(n.name)
            if activations.supports(n.name) and len(n.args) >= arity:
                # the parameters first: the kernel's scalars are declared in the order they are met
                params: dict[str, Ex] = {}
                defaults = activations.defaults(n.name)
                kw = dict(n.kwargs)
                for i, key in enumerate(activations.kernel_params(n.name)):
                    at = arity + i
                    node = kw.get(key) or (n.args[at] if len(n.args) > at else None)
                    if node is not None:
                        params[key] = conv(node, env)
                    elif defaults.get(key) is not None:
                        params[key] = Ex.num(float(defaults[key]))
                return activations.render(n.name, [conv(a, env) for a in n.args[:arity]], params)
            raise Unsupported(f"{n.name}(...) in the expression: {activations.why_not(n.name)}")
        raise Unsupported(f"'{ir.render(n)}' in the expression has no pypto form")

    return lambda env: conv(root, env)


def _rotate_half(b: Builder, x: Ex) -> Ex:
    """`rotate_half(x)` through the module's trace-time helper (template rotate_half): views of the
    halves of x's last axis and a concat. x must be a tensor the kernel reads whole along that axis
    (the dimension step keeps it a kernel axis of its own)."""
    if not x.tensor or not isinstance(x.node, cst.Name):
        raise Unsupported("rotate_half of a computed value is not scaffolded: rotate a kernel input")
    if not any(isinstance(h, cst.FunctionDef) and h.name.value == "rotate_half" for h in b.helpers):
        b.helpers += b.tmpl("rotate_half")
    return Ex.raw(cst.Call(cst.Name("rotate_half"), [cst.Arg(x.node)]), True)


def _safe(key: str) -> str:
    return key.replace(".", "_")


def value_builder(b: Builder) -> tuple[list[str], Value, list[Scalar]]:
    """(tensor operands, value builder, factory scalars) for the contract's elementwise op."""
    operands, value, scalars, _ = chain_builder(b)
    return operands, value, scalars


def chain_builder(b: Builder) -> tuple[list[str], Value, list[Scalar], Terms]:
    """As `value_builder`, plus the statements that name intermediate values (exact GELU's erf)."""
    c = b.ctx.contract
    if c.op == "gelu":
        return _gelu(b)
    operands, value, scalars = _value(b)
    return operands, value, scalars, _no_terms


@cites("GELU.exact-erf")
def _gelu(b: Builder) -> tuple[list[str], Value, list[Scalar], Terms]:
    """GELU: exact (approximate='none') with erf by the pack's rational approximation, never the
    tanh form (4.7e-4 off); approximate='tanh' is that form, which is then the definition."""
    c = b.ctx.contract
    x = c.operands[0].name
    approximate = c.op_args.get("approximate") or "none"
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"gelu(approximate={approximate!r}) is not a torch mode")
    # fp16 / bf16: torch computes GELU in fp32 and rounds once; so does the kernel (GELU.exact-erf)
    low = b.ctx.dtype in ("fp16", "bf16")
    wide = Ex.name("xf") if low else None

    def arg(env: Mapping[str, Ex]) -> Ex:
        return wide if wide is not None else env[x]

    def widen(env: Mapping[str, Ex]) -> Stmts:
        return b.fwd("xf = pypto.cast({x}, {dt})", x=env[x], dt=b.pdtype("fp32")) if low else []

    def narrow(v: Ex) -> Ex:
        return call("cast", v, Ex.raw(b.pdtype(), False)) if low else v

    if approximate == "tanh":
        def tanh_form(env: Mapping[str, Ex]) -> Ex:
            v = arg(env)
            inner = (v + v * v * v * 0.044715) * 0.7978845608028654
            return narrow(v * 0.5 * (activations.render("tanh", [inner], {}) + 1.0))
        return [x], tanh_form, [], widen

    note = ("exact GELU: erf by Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7, never the tanh form "
            "(GELU.exact-erf)")
    b.notes.append(note[0].upper() + note[1:] + ".")
    b.findings.append(Finding("GELU.exact-erf", "info", note, b.kb.authority_of("GELU.exact-erf")))

    def exact(env: Mapping[str, Ex]) -> Ex:
        v, q = arg(env), Ex.name("q")
        return narrow(call("where", call("ge", v, 0.0), v - v * q * 0.5, v * q * 0.5))

    return [x], exact, [], lambda env: widen(env) + b.tmpl("gelu_erf_terms", x=arg(env))


def _value(b: Builder) -> tuple[list[str], Value, list[Scalar]]:
    c = b.ctx.contract
    op = c.op or ""
    args = dict(c.op_args)
    operands = [t.name for t in c.operands]
    scalars: dict[str, Scalar] = {}
    if "expr" in args:
        fn = _expression(b, args["expr"], scalars)
        fn({o: Ex.name(o) for o in operands})  # collects the scalars (an init attribute: `x / self.scale`)
        return operands, fn, list(scalars.values())
    if activations.supports(op) and len(operands) >= activations.arity(op):
        keys = activations.kernel_params(op)
        defaults = activations.defaults(op)
        params: dict[str, Ex] = {}
        for key in keys:
            value = args.get(key, defaults.get(key))
            if value is None:
                continue
            scalars[key] = b.scalar(key, value, init_key=b.ctx.task.op_arg_source(op, key, keys))
            params[key] = Ex.name(key, tensor=False)
        reads = operands[:activations.arity(op)]
        return reads, (lambda env: activations.render(op, [env[o] for o in reads], params)), list(scalars.values())
    if op in _BINARY and (args.get("scalar") is not None or args.get("scalar_input")):
        # a forward input (scalar-multiply's `s`) is a factory parameter; a literal stays a literal
        found: list[Scalar] = []
        if args.get("scalar_input"):
            sname = args["scalar_input"]
            inp = c.input(sname)
            found.append(b.scalar(sname, inp.value if inp is not None else None, forward_input=sname))
            sx = Ex.name(sname, tensor=False)
        else:
            value = args["scalar"]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise Unsupported(f"the scalar {value!r} has no pypto form")
            sx = Ex.num(value)
        first = operands[0]
        binop = _BINARY[op]
        if args.get("scalar_side") == "left":
            return operands[:1], (lambda env: binop(sx, env[first])), found
        return operands[:1], (lambda env: binop(env[first], sx)), found
    if op in _BINARY and len(operands) == 2:
        a0, a1 = operands
        binop2 = _BINARY[op]
        return operands, (lambda env: binop2(env[a0], env[a1])), []
    raise Unsupported(f"elementwise op '{op}': {activations.why_not(op)}")


def _broadcast_tree(c: Any) -> Any:
    """The expression a broadcasting kernel writes: the contract's tree, or a named binary op of two
    operands (`y + bias` with a (N,) bias) as a tree."""
    from pypto_tui.contract import ir

    if "expr" in c.op_args:
        return ir.from_data(_thaw(c.op_args["expr"]))
    names = [t.name for t in c.operands]
    if len(names) == 2 and c.op in _BINARY:
        return ir.Node("bin", c.op, (ir.Node("in", names[0]), ir.Node("in", names[1])))
    if len(names) == 2 and activations.supports(c.op) and activations.arity(c.op) == 2:
        return ir.Node("call", c.op, (ir.Node("in", names[0]), ir.Node("in", names[1])), value="torch")
    return None


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    if isinstance(v, dict):
        return {k: _thaw(x) for k, x in v.items()}
    return v


@cites("A.elementwise-flat", "CAST.int-conversion")
def build_elementwise(b: Builder) -> None:
    """Pattern A: flatten, one op chain, `pypto.loop` + view/assemble only past the tile limit."""
    ctx = b.ctx
    c = ctx.contract
    layout = ctx.dims.broadcast
    tree = _broadcast_tree(c) if layout is not None else None
    if layout is not None and tree is not None:
        leaves = tuple(layout["operands"])

        def value_of(tree: Any) -> tuple[Value, list[Scalar]]:
            found: dict[str, Scalar] = {}
            fn = _expression(b, tree, found, leaves)
            fn({o: Ex.name(o) for o in leaves})  # collects the scalars
            return fn, list(found.values())

        build_broadcast(b, value_of, tree)
        return
    operands, value, scalars, terms = chain_builder(b)
    if not operands:
        raise Unsupported("the elementwise expression reads no tensor")
    shapes = {t.name: t.shape for t in c.tensor_inputs}
    first = operands[0]
    if any(shapes.get(o) != shapes.get(first) for o in operands):
        raise Unsupported("the elementwise inputs have different shapes (broadcasting is not scaffolded)")
    assert ctx.geometry is not None and ctx.tile is not None
    loop = ctx.loop_count is not None
    b.pattern = "A"
    b.summary = "Pattern A: elementwise on the flattened input" + (" with a loop" if loop else "")
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, "the flattened input",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    env = {o: Ex.name(o) for o in operands}
    prelude: Stmts = []
    if not loop:
        body = b.tmpl("elementwise", tile=tile, terms=terms(env), out=name("out"), value=value(env))
    else:
        def step(size: str, off: str, suffix: str) -> list[Any]:
            views = []
            chunks = {}
            for o in operands:
                views += b.view(f"{o}_{suffix}", o, [size], [off])
                chunks[o] = Ex.name(f"{o}_{suffix}")
            return b.tmpl("elementwise_step", views=views, terms=terms(chunks), value=value(chunks),
                          offsets=dims_list([off]), out=name("out"))

        prelude, body = b.chunked_loop("flat_size", step, setup=b.tmpl("vec_setup", tile=tile))
    op = c.op if c.op and c.op != "expression" else "elementwise"
    spec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=["flat_size"], scalars=scalars,
        inputs=[TensorParam(o, ("flat_size",), ctx.dtype) for o in operands],
        output=TensorParam("out", ("flat_size",), c.output_dtype or ctx.dtype),
        prelude=prelude, body=body,
        doc=f"Pattern A (A.elementwise-flat): {c.formula or op} on the flattened input"
            + (", in LOOP_COUNT chunks." if loop else ", no loop (auto_tiles within the limit)."),
    )
    b.add_kernel(spec)
    # forward: assert, flatten, call, reshape back
    rank = len(shapes[first] or ())
    for o in operands:
        b.assert_rank(o, rank)
    for o in operands[1:]:
        b.assert_same_shape(first, o)
    flat_names = [b.prepare(o, [number_node(-1, paren=False)], "flat") for o in operands]
    b.unpack_dims(flat_names[0], ["flat_size"])
    b.call_kernel(spec, flat_names)
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(first))


PATTERNS = (Pattern("A", ("elementwise",), build_elementwise, ("A.elementwise-flat", "GELU.exact-erf",
                                                               "A.broadcast-one-axis", "CAST.int-conversion")),)
