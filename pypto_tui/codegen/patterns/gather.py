"""torch.gather(x, dim, index): one `pypto.gather(x, dim, index)` over the whole tensors (GATHER.take-along).

pypto 0.2.0's gather takes the values at the index's positions along `dim` as torch's does (measured exact
at every pass for dim 0 and dim 1, int64 and int32 indices), so the kernel is the one call: x and the index
keep their shapes, the output has the index's. The index is an int64 tensor of the kernel, as torch hands
it. A tensor too large for one pass of auto-tiles would need a loop over whole rows of both; that is
refused with the reason rather than written.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

OPS = ("gather",)


@cites("GATHER.take-along")
def build_gather(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS or len(c.operands) != 2 or ctx.geometry is None or ctx.main is None:
        raise Unsupported("gather is scaffolded for one input and one index tensor of known shapes")
    x, index = (t.name for t in c.operands)
    shapes = {t.name: t.shape for t in c.operands}
    rank = len(ctx.geometry.shape)
    if ctx.dims.reshape != "keep" or len(shapes[index] or ()) != rank:
        raise Unsupported("gather's input and index keep their shapes and share a rank")
    dim = c.op_args.get("dim", 0)
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise Unsupported(f"gather's dim {dim!r} is not an axis of a rank-{rank} input")
    dim %= rank
    if ctx.loop is not None:
        raise Unsupported("a gather this large needs a loop over whole rows of the input and the index: not "
                          "scaffolded (make the tile cover the tensors, or split the task)")
    b.pattern = "gather"
    b.summary = f"gather: the values of {x} at {index}'s positions along axis {dim} with pypto.gather"
    tile = b.tile_constant(ctx.main, x)
    xd = [f"d{i}" for i in range(rank)]
    idx = [f"i{i}" for i in range(rank)]
    body = b.tmpl("gather", tile=tile, out=name("out"), value=call("gather", Ex.name(x), Ex.num(dim), Ex.name(index)))
    spec = KernelSpec(
        factory="create_gather_kernel", kernel="gather_kernel", dims=[*xd, *idx], scalars=[],
        inputs=[TensorParam(x, tuple(xd), ctx.dtype), TensorParam(index, tuple(idx), "int64")],
        output=TensorParam("out", tuple(idx), c.output_dtype or ctx.dtype), prelude=[], body=body,
        doc=f"gather along axis {dim} (GATHER.take-along): out has {index}'s shape; one kernel for this dim "
            "(P1.single-dim-kernel).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, rank)
    b.assert_rank(index, rank)
    xn = b.prepare(x, None, "")
    b.unpack_dims(xn, xd)
    ixn = b.prepare(index, None, "")
    b.unpack_dims(ixn, idx)
    b.call_kernel(spec, [xn, ixn])
    b.forward.result = name("out")


PATTERNS = (Pattern("gather", ("layout",), build_gather, ("GATHER.take-along",), ops=OPS),)
