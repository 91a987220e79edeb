"""A swap of two neighbouring axes as block copies (TRANSPOSE.block-copy).

`x.transpose(d, d + 1)` of (A, P, Q, R) (the axes before, the two swapped, the trailing ones merged) is
(A, Q, P, R): for each p, x[:, p] is a (Q, R) block that lands at out[:, :, p], and for each q, x[:, :, q] a
(P, R) block that lands at out[:, q]. The kernel copies the fewer of the two, each one view of whole
trailing rows assembled at its place (the dimension step lays both tensors out so that every view and
every assemble is a plain 3-D block: dims.SwapBlocks), over chunks of A when auto_tiles needs a loop.
A channel shuffle (ShuffleNet) and the split and merge of attention heads are such swaps. The rows must
be whole 32-byte rows: a transpose of the last axis is no block copy.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

OPS = ("transpose",)


@cites("TRANSPOSE.block-copy")
def build_swap(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS or len(c.operands) != 1:
        raise Unsupported(f"'{c.op}' is not a transpose of one input")
    x = c.operands[0]
    shape = tuple(x.shape or ())
    d0, d1 = int(c.op_args.get("dim0", 0)), int(c.op_args.get("dim1", 1))
    if ctx.dims.reshape != "swap_blocks" or ctx.main is None or not shape:
        raise Unsupported("the transpose has no block layout: only a swap of two neighbouring axes is copied")
    # the dimension step chose the copy (dims.SwapBlocks) and checked its rows against the pack: along P
    # its axis map merges the two swapped axes (A | P Q | R), along Q it keeps P apart (A | P | Q R)
    by_p = len(ctx.dims.axis_map) == 3 and len(ctx.dims.axis_map[1]) == 2
    loop = ctx.loop
    if loop is not None and loop.axis != 0:
        raise Unsupported("the swap loops over chunks of its leading axes only")
    if d1 == len(shape) - 1:
        _build_last_axis(b, d0, d1, shape)
        return
    dims = ["a", "p", "q", "r"]
    count, block = ("p", "q") if by_p else ("q", "p")
    b.pattern = "transpose"
    b.summary = (f"transpose({d0}, {d1}) as {count.upper()} block copies of ({block.upper()}, R) trailing rows"
                 + (", a loop over chunks of the leading axes" if loop else ""))
    tile = b.tile_constant(ctx.main, "the output's (A, Q, P x R) layout" if by_p else
                           "the output's (A, Q x P, R) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    if by_p:  # x (a, p*q, r): block i is rows [i*q, +q), landing at columns [i*r, +r) of out (a, q, p*r)
        in_shape, out_shape = ("a", "p * q", "r"), ("a", "q", "p * r")
        src_at, dst_at = ["i * q", 0], [0, "i * r"]
        block_shape = ["q", "r"]
    else:  # x (a, p, q*r): block i is columns [i*r, +r), landing at rows [i*p, +p) of out (a, q*p, r)
        in_shape, out_shape = ("a", "p", "q * r"), ("a", "q * p", "r")
        src_at, dst_at = [0, "i * r"], ["i * p", 0]
        block_shape = ["p", "r"]

    def copy(size: str, off: str | int, suffix: str) -> Stmts:
        chunk = f"block_{suffix}"
        one = b.tmpl("copy_block", views=b.view(chunk, "x", [size, *block_shape], [off, *src_at]),
                     part=Ex.name(chunk), offsets=dims_list([off, *dst_at]), out=name("out"))
        return b.tmpl("swap_blocks", i=name("i"), count=name(count), copy=one)

    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("vec_setup", tile=tile) + copy("a", 0, "all")
    else:
        prelude, body = b.chunked_loop("a", copy, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_transpose_kernel", kernel="transpose_kernel", dims=dims, scalars=[],
        inputs=[TensorParam("x", in_shape, ctx.dtype)],
        output=TensorParam("out", out_shape, c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (TRANSPOSE.block-copy): the kernel moves data only.",
    )
    b.add_kernel(spec)
    rank = len(shape)
    src = x.name
    b.assert_rank(src, rank)

    def prod(axes: range) -> str:
        return " * ".join(f"{src}.shape[{a}]" for a in axes) or "1"

    sizes = {"a": prod(range(d0)), "p": f"{src}.shape[{d0}]", "q": f"{src}.shape[{d1}]",
             "r": prod(range(d1 + 1, rank))}
    for d in dims:
        b.forward.prepare += b.fwd(f"{d} = {sizes[d]}")
    laid = f"{src}_blocks"
    b.forward.prepare += b.fwd(f"{laid} = {src}.reshape({', '.join(in_shape)}).contiguous()")
    b.call_kernel(spec, [laid])
    _give_back_swapped(b, src, rank, d0, d1)


@cites("TRANSPOSE.last-axis")
def _build_last_axis(b: Builder, d0: int, d1: int, shape: tuple[int, ...]) -> None:
    """A swap that moves the last axis: the trailing rows are single elements, so no block copy; the
    input laid out as (A, P, Q) becomes (A, Q, P) in one pypto.transpose (a chunk of A at a time when
    auto_tiles needs a loop)."""
    ctx = b.ctx
    c = ctx.contract
    loop = ctx.loop
    b.pattern = "transpose"
    b.summary = (f"transpose({d0}, {d1}) of the last axis: (A, P, Q) to (A, Q, P) with pypto.transpose"
                 + (", a loop over chunks of the leading axes" if loop else ""))
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, "the output's (A, Q, P) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def swap(size: str, off: str | int, suffix: str) -> Stmts:
        chunk = f"x_{suffix}"
        return b.tmpl("copy_block", views=b.view(chunk, "x", [size, "p", "q"], [off, 0, 0]),
                      part=call("transpose", Ex.name(chunk), 1, 2), offsets=dims_list([off, 0, 0]),
                      out=name("out"))

    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("vec_setup", tile=tile) + swap("a", 0, "all")
    else:
        prelude, body = b.chunked_loop("a", swap, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_transpose_kernel", kernel="transpose_kernel", dims=["a", "p", "q"], scalars=[],
        inputs=[TensorParam("x", ("a", "p", "q"), ctx.dtype)],
        output=TensorParam("out", ("a", "q", "p"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (TRANSPOSE.last-axis): the kernel moves data only.",
    )
    b.add_kernel(spec)
    rank = len(shape)
    src = c.operands[0].name
    b.assert_rank(src, rank)
    lead = " * ".join(f"{src}.shape[{a}]" for a in range(d0)) or "1"
    b.forward.prepare += b.fwd(f"a = {lead}")
    b.forward.prepare += b.fwd(f"p = {src}.shape[{d0}]")
    b.forward.prepare += b.fwd(f"q = {src}.shape[{d1}]")
    laid = f"{src}_rows"
    b.forward.prepare += b.fwd(f"{laid} = {src}.reshape(a, p, q).contiguous()")
    b.call_kernel(spec, [laid])
    _give_back_swapped(b, src, rank, d0, d1)


def _give_back_swapped(b: Builder, src: str, rank: int, d0: int, d1: int) -> None:
    """forward's result: the kernel's output reshaped to the input's sizes with axes d0 and d1 swapped."""
    back = [f"{src}.shape[{i}]" for i in range(rank)]
    back[d0], back[d1] = back[d1], back[d0]
    b.forward.result = b.expr(f"out.reshape({', '.join(back)}{',' if rank == 1 else ''})")


PATTERNS = (Pattern("transpose", ("layout",), build_swap, ("TRANSPOSE.block-copy", "TRANSPOSE.last-axis"), ops=OPS),)
