"""An LSTM or GRU layer as one kernel that loops over the time steps (RNN.time-loop).

The graph gives one `lstm` or `gru` node per layer (contract/aten.py reads `nn.LSTM`'s `lstm.input` and
`nn.GRU`'s `gru.input`): the sequence, weight_ih (gates x H, I), weight_hh (gates x H, H), the two biases
and the layer's h0 (and an LSTM's c0). forward lays the sequence out as 2-D (batch, steps x features)
when batch-first, else (steps x batch, features), so step s's (batch, features) block is one view, and the
biases as (1, gates x H) rows. The kernel keeps its states on chip as local tensors updated with .move()
in one pypto.loop over the steps (the pack's template for the kind, lstm or gru); per step and gate two
matmuls (the input block and the hidden state, each against its slice of the weights, read as stored) and
both biases' slices, then the gate activations (tanh as 2 * sigmoid(2x) - 1: pypto 0.2.0 has no tanh)
and the state updates; each step's hidden state is assembled into the output, or, for an LSTM's c_n, the
cell state over the output at every step (a value carried by a loop is lost when written after it). The
steps depend on each other, so there is no loop over them to split: the planner's loop (over chunks of
the batch) is not taken yet.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.ops.recurrent import GATES
from pypto_tui.plan import Needs, TileRole

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry


def _sizes(dims: DimPlan, batch_first: bool) -> tuple[int, int, int, int] | None:
    """(batch, steps, features, hidden) from the kernel shapes (the sequence's 2-D layout, weight_hh)."""
    if len(dims.kernel_shapes) not in (6, 7):
        return None
    seq, w_ih, w_hh = dims.kernel_shapes[:3]
    hidden, features = w_hh[1], w_ih[1]
    batch = dims.kernel_shapes[5][0]
    steps = seq[1] // features if batch_first else seq[0] // batch
    return batch, steps, features, hidden


def recurrent_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """One vec tile over a step's (batch, hidden) gates and states; the cube for the input product
    (B x I x H) and a second for the state product (B x H x H); no loop of the planner's."""
    base = main_tile_needs(c, dims, g, kb)
    sizes = _sizes(dims, bool(c.op_args.get("batch_first")))
    if sizes is None:
        return base
    batch, _, features, hidden = sizes
    data = kb.op_data(c.op)
    role = TileRole("main", "TILE_SHAPE", (batch, hidden), "fp32", None, live_buffers=data.live_buffers)
    return replace(base, tiles=(role,), cube=(batch, features, hidden),
                   more_cubes=(("state", (batch, hidden, hidden), None),), cube_dtype=g.dtype, loop_axis=0,
                   loop_why="auto", loop_shape=(batch, hidden), cube_batch=4)


STATES = {"lstm": ("h0", "c0"), "gru": ("h0",)}
"""The initial states each kind reads after its sequence, weights and biases (the registry's inputs)."""


@cites("RNN.time-loop", "ATTN.reset-cube-tiles", "B.matmul-cube-tiles")
def build_recurrent(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    kind = str(c.op)
    if (kind not in STATES or len(c.operands) != 5 + len(STATES[kind]) or ctx.dims.reshape != "recurrent_rows"
            or ctx.main is None):
        raise Unsupported(f"a {kind} layer is scaffolded on its tensors laid out as 2-D rows")
    what = kind.upper()
    if ctx.dtype != "fp32":
        raise Unsupported(f"an {what} layer of {ctx.dtype} is not scaffolded yet (fp32 is)")
    if ctx.loop is not None:
        raise Unsupported(f"the {what} layer's (batch, hidden) state does not fit one tile: a loop over chunks of "
                          "the batch is not scaffolded yet")
    first = bool(c.op_args.get("batch_first"))
    cell = c.op_args.get("emit") == "cell"
    reverse = bool(c.op_args.get("reverse"))
    x, w_ih, w_hh, b_ih, b_hh, *states = (o.name for o in c.operands)
    b.pattern = "recurrent"
    b.summary = (f"an {what} layer ({'batch-first' if first else 'time-major'} sequence"
                 + (", the backward direction" if reverse else "") + "): one pypto.loop over the "
                 "time steps with the states on chip, two matmuls a gate"
                 + ("; the cell state written over the output each step (c_n)" if cell else
                    "; each step's hidden state assembled into the output"))
    input_cube = b.cube_constants()
    state_cube = b.cube_constants("state")
    tile = b.tile_constant(ctx.main, "a step's (batch, hidden) gates and states")
    at = "(t - 1 - s)" if reverse else "s"  # the backward direction takes the steps from the last
    step_in = dims_list([0, f"{at} * i"] if first else [f"{at} * b", 0])
    step_out = dims_list([0, f"{at} * h"] if first else [f"{at} * b", 0])
    emit: Stmts = (b.fwd("pypto.assemble(cs, [0, 0], {out})", out=name("out")) if cell else
                   b.fwd("pypto.assemble(hs, {at}, {out})", at=step_out, out=name("out")))
    state_args = {k: name(v) for k, v in zip(STATES[kind], states, strict=True)}
    body = b.tmpl(kind, tile=tile, x=name(x), w_ih=name(w_ih), w_hh=name(w_hh), b_ih=name(b_ih), b_hh=name(b_hh),
                  **state_args, f32=Ex.raw(b.pdtype("fp32"), False),
                  input_m=input_cube[0], input_k=input_cube[1], input_n=input_cube[2],
                  state_m=state_cube[0], state_k=state_cube[1], state_n=state_cube[2],
                  step_in=step_in, emit=emit)
    seq_shape = ("b", "t * i") if first else ("t * b", "i")
    out_shape = ("b", "h") if cell else (("b", "t * h") if first else ("t * b", "h"))
    gates = b.expr(f"{GATES[kind]} * h")
    spec = KernelSpec(
        factory=f"create_{kind}_kernel", kernel=f"{kind}_kernel", dims=["b", "t", "i", "h"], scalars=[],
        inputs=[TensorParam(x, tuple(b.expr(s) for s in seq_shape), "fp32"),
                TensorParam(w_ih, (gates, "i"), "fp32"), TensorParam(w_hh, (gates, "h"), "fp32"),
                TensorParam(b_ih, (1, gates), "fp32"), TensorParam(b_hh, (1, gates), "fp32"),
                *(TensorParam(v, ("b", "h"), "fp32") for v in states)],
        output=TensorParam("out", tuple(b.expr(s) for s in out_shape), "fp32"), prelude=[], body=body,
        doc=f"{b.summary} (RNN.time-loop, ATTN.reset-cube-tiles).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, 3)
    xs = b.prepare(x, [b.expr("{x}.shape[0]", x=name(x)), b.expr("-1")] if first else
                   [b.expr("-1"), b.expr("{x}.shape[2]", x=name(x))], "rows")
    if first:
        b.forward.prepare += b.fwd("b, t, i = {x}.shape", x=name(x))
    else:
        b.forward.prepare += b.fwd("t, b, i = {x}.shape", x=name(x))
    b.forward.prepare += b.fwd("h = {w}.shape[1]", w=name(w_hh))
    names = [xs, b.prepare(w_ih, None, ""), b.prepare(w_hh, None, ""),
             b.prepare(b_ih, [b.expr("1"), b.expr("-1")], "row"), b.prepare(b_hh, [b.expr("1"), b.expr("-1")], "row"),
             *(b.prepare(v, [b.expr("b"), b.expr("h")], "bh") for v in states)]
    b.call_kernel(spec, names)
    if cell:
        b.forward.result = b.expr("out")
    else:
        b.forward.result = b.expr("out.reshape(b, t, h)" if first else "out.reshape(t, b, h)")


PATTERNS = (Pattern("recurrent", ("recurrent",), build_recurrent, ("RNN.time-loop", "ATTN.reset-cube-tiles"),
                    ops=tuple(STATES), needs=recurrent_needs),)
