"""Pattern A over broadcasting operands: `A.unsqueeze(1) * B`, `x[:, None] + y`, `c.view(1, -1) * m`.

The dimension step merged the output's axes into as few kernel axes as keep every operand whole
or of size 1 on each (`DimPlan.broadcast`). forward takes each operand's views (only the ones
that move no data: unsqueeze, reshape, squeeze, flatten, None, full slices; an expand is left to
the kernel) and reshapes it to its kernel shape, with every size read from the tensors at run
time so the module runs at any shape. The kernel widens each size-1 axis with its own
`expand_clone` (pypto 0.2.0 widens one axis per call, "Only allow to expand one axis!") and runs
the expression on whole tensors; a loop, when auto_tiles needs one, runs along kernel axis 0,
an operand of size 1 there being read whole by every chunk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.ops import views as V

FORWARD_VIEWS = ("unsqueeze", "reshape")  # a select or a narrow would be a copy in forward


def _leaves(b: Builder, tree: Any) -> tuple[Any, list[Any]]:
    from pypto_tui.contract import views as CV

    c = b.ctx.contract
    known = {t.name: tuple(t.shape) for t in c.tensor_inputs if t.shape is not None}
    try:
        return CV.leaves(tree, known)
    except CV.NotAView as exc:
        raise Unsupported(str(exc)) from None


def _view_text(step: V.Step, src_shape: tuple[int, ...], src: str) -> str:
    """A shape-only view written on the tensor's own sizes where the sizes carry over (so the module
    runs at the smaller shapes verify uses)."""
    if step.kind == "unsqueeze":
        return f".unsqueeze({step.dim})"
    big_src = [i for i, s in enumerate(src_shape) if s != 1]
    big_new = [s for s in step.shape if s != 1]
    if [src_shape[i] for i in big_src] == big_new:  # only size-1 axes come or go
        it = iter(big_src)
        parts = ["1" if s == 1 else f"{src}.shape[{next(it)}]" for s in step.shape]
        return f".reshape({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    raise Unsupported(f"the view to {step.shape} merges or splits axes of {src_shape}; the scaffold writes only "
                      "views that add or drop size-1 axes")


@cites("A.elementwise-flat", "A.broadcast-one-axis")
def build_broadcast(b: Builder, value_of: Any, expression: Any) -> None:
    """Write the kernel for `expression` (an ir tree); `value_of(tree)` is pattern A's expression
    writer for the tree with its view chains as leaves."""
    ctx = b.ctx
    c = ctx.contract
    info = ctx.dims.broadcast or {}
    kshapes: dict[str, list[int]] = info.get("operands", {})
    out_full: list[int] = info.get("output", [])
    groups = ctx.dims.axis_map
    tree, found = _leaves(b, expression)
    by_id = {leaf.id: leaf for leaf in found if leaf.steps}
    operands = list(kshapes)
    if not operands or ctx.main is None or ctx.geometry is None:
        raise Unsupported("the broadcast expression reads no tensor")
    rank = len(groups)
    dims = [f"k{i}" for i in range(rank)]
    # forward: each operand's views, then its kernel layout
    inputs = {t.name: tuple(t.shape or ()) for t in c.tensor_inputs}
    shapes: dict[str, tuple[int, ...]] = {}
    for o in operands:
        leaf = by_id.get(o)
        if leaf is None:
            shapes[o] = inputs[o]
            continue
        text, cur = leaf.input, inputs[leaf.input]
        for step in leaf.steps:
            if step.kind not in FORWARD_VIEWS:
                raise Unsupported(f"{leaf.input} is read through {step.kind}, which would copy data in forward; "
                                  "only views that add or drop size-1 axes are scaffolded")
            text += _view_text(step, cur, leaf.input if text == leaf.input else o)
            cur = V.out_shape(step, cur)
        b.forward.prepare += b.fwd(f"{o} = {text}")
        shapes[o] = cur
    full_rank = len(out_full)

    def size_of(axis: int) -> str:
        """An expression for output axis `axis`: the size of an operand that is whole there."""
        if out_full[axis] == 1:
            return "1"
        for o in operands:
            s = shapes[o]
            i = axis - (full_rank - len(s))
            if i >= 0 and s[i] == out_full[axis]:
                return f"{o}.shape[{i}]"
        return str(out_full[axis])  # only an expand gives this size: the task's own constant

    for k, g in enumerate(groups):
        b.forward.prepare += b.fwd(f"{dims[k]} = {' * '.join(size_of(a) for a in g) or '1'}")
    kernel_names: dict[str, str] = {}
    for o in operands:
        ks = kshapes[o]
        args = ", ".join(dims[k] if ks[k] != 1 else "1" for k in range(rank))
        kn = f"{o}_k"
        b.forward.prepare += b.fwd(f"{kn} = {o}.reshape({args}{',' if rank == 1 else ''}).contiguous()")
        kernel_names[o] = kn
    # the kernel
    loop = ctx.loop
    tile = b.tile_constant(ctx.main, "the output's kernel layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    b.pattern = "A"
    b.summary = (f"Pattern A over broadcasting operands: {', '.join(operands)} widened axis by axis to "
                 f"({', '.join(dims)})" + (", with a loop along kernel axis 0" if loop else ""))
    value, scalars = value_of(tree)

    def widen(src: str, ks: Sequence[int], target: Sequence[Any], dst: str) -> tuple[Stmts, Ex]:
        stmts: Stmts = []
        cur = src
        now = [d if ks[i] != 1 else 1 for i, d in enumerate(target)]
        for i in range(rank):
            if ks[i] != 1 or out_full_kernel[i] == 1:
                continue
            now[i] = target[i]
            nxt = f"{dst}_w{i}"
            stmts += b.fwd(f"{nxt} = pypto.expand_clone({cur}, {dims_text(now)})")
            cur = nxt
        return stmts, Ex.name(cur)

    out_full_kernel = [int(x) for x in ctx.dims.output_kernel_shape or ()]

    def dims_text(shape: Sequence[Any]) -> str:
        return "[" + ", ".join(str(s) for s in shape) + "]"

    def chain(env_src: Mapping[str, str], target: Sequence[Any], suffix: str) -> tuple[Stmts, dict[str, Ex]]:
        stmts: Stmts = []
        env: dict[str, Ex] = {}
        for o in operands:
            s, e = widen(env_src[o], kshapes[o], target, f"{o}_{suffix}")
            stmts += s
            env[o] = e
        return stmts, env

    prelude: Stmts = []
    if loop is None:
        terms, env = chain({o: o for o in operands}, dims, "all")
        body = b.tmpl("elementwise", tile=tile, terms=terms, out=name("out"), value=value(env))
    else:
        if loop.axis != 0:
            raise Unsupported("the broadcast kernel loops along kernel axis 0 only")

        def step(size: str, off: str, suffix: str) -> Stmts:
            views: Stmts = []
            src: dict[str, str] = {}
            for o in operands:
                ks = kshapes[o]
                shape = [size if i == 0 and ks[0] != 1 else (dims[i] if ks[i] != 1 else 1) for i in range(rank)]
                offsets: list[Any] = [off if ks[0] != 1 else 0] + [0] * (rank - 1)
                views += b.view(f"{o}_{suffix}", o, shape, offsets)
                src[o] = f"{o}_{suffix}"
            target = [size, *dims[1:]]
            terms, env = chain(src, target, suffix)
            return b.tmpl("elementwise_step", views=views, terms=terms, value=value(env),
                          offsets=dims_list([off] + [0] * (rank - 1)), out=name("out"))

        prelude, body = b.chunked_loop(dims[0], step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_broadcast_kernel", kernel="broadcast_kernel", dims=dims, scalars=list(scalars),
        inputs=[TensorParam(o, tuple(dims[k] if kshapes[o][k] != 1 else 1 for k in range(rank)), ctx.dtype)
                for o in operands],
        output=TensorParam("out", tuple(dims), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (A.elementwise-flat, A.broadcast-one-axis): {c.formula or 'the expression'}.",
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [kernel_names[o] for o in operands], device_of=kernel_names[operands[0]])
    back = ", ".join(size_of(a) for a in range(full_rank))
    b.forward.result = b.expr(f"out.reshape({back}{',' if full_rank == 1 else ''})")


