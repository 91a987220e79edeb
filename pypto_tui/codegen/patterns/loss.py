"""Pattern D: losses to one value.

Simple losses (MSE, L1, KL divergence, hinge) flatten every input to 1-D, compute the elementwise
term, sum it and scale it as the contract says: `mean` by 1/count, `batchmean` by 1/batch (the
batch of the *original* first input, passed to the factory), `sum` not at all (D.loss-scalar).
Asymmetric losses follow the contract's direction: `kl_div(log(p), t)` is KL(t || p),
t * (log t - log p), never the other way round (P0.asymmetry).

Per-sample losses (triplet margin) keep (batch, features) and run in two phases, each with its
own tile (D.two-phase): phase 1 reduces every row, phase 2 the per-sample values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, literal, name
from pypto_tui.codegen.expr import Ex, call, column_sum, reduce
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs, TileRole
from pypto_tui.shapes import fmt_dims

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry

Terms = Callable[[Mapping[str, Ex]], tuple[list[cst.BaseStatement], Ex]]
SIMPLE = ("mse_loss", "l1_loss", "kl_div", "hinge_loss", "smooth_l1_loss", "huber_loss")


@cites("D.loss-scalar", "D.two-phase", "LOSS.scalar-rows")
def build_loss(b: Builder) -> None:
    c = b.ctx.contract
    if c.op in SIMPLE:
        _simple(b)
    elif c.op == "triplet_margin_loss":
        _triplet(b)
    else:
        raise Unsupported(f"the loss '{c.op}' has no scaffold yet (MSE, L1, smooth L1, Huber, KL, hinge and "
                          "triplet margin do)")


def _scale(b: Builder, count: str = "flat_size") -> tuple[list[cst.BaseStatement], Ex | None, str | None]:
    """(prelude statements, the scale expression, an extra factory dim) for the reduction."""
    r = b.ctx.contract.reduction
    scaling = r.scaling if r else (b.ctx.contract.op_args.get("reduction") or "mean")
    if scaling == "mean":
        return b.fwd(f"INV_COUNT = 1.0 / {count}"), Ex.name("INV_COUNT", tensor=False), None
    if scaling == "batchmean":
        return b.fwd("INV_BATCH = 1.0 / batch"), Ex.name("INV_BATCH", tensor=False), "batch"
    if scaling == "sum":
        return [], None, None
    raise Unsupported(f"reduction '{scaling}' returns a tensor, not one value: not a pattern D loss")


def _terms(b: Builder, ops: list[str]) -> tuple[Terms, list[Scalar]]:
    c = b.ctx.contract
    args = c.op_args
    if c.op == "mse_loss":
        p, t = ops

        def mse(env: Mapping[str, Ex]) -> tuple[list[cst.BaseStatement], Ex]:
            stmts = b.fwd("diff = {d}", d=(env[p] - env[t]).node)
            d = Ex.name("diff")
            return stmts, d * d
        return mse, []
    if c.op == "l1_loss":
        p, t = ops
        return (lambda env: ([], call("abs", env[p] - env[t]))), []
    if c.op == "kl_div":
        inp, t = ops
        transform = args.get("input_transform")
        if args.get("log_target"):
            def kl_log_target(env: Mapping[str, Ex]) -> tuple[list[cst.BaseStatement], Ex]:
                log_q = call("log", env[inp]) if transform == "log" else env[inp]
                return [], call("exp", env[t]) * (env[t] - log_q)
            return kl_log_target, []
        if transform not in ("log", None):
            raise Unsupported(f"kl_div of {transform}(input) is not scaffolded")

        def kl(env: Mapping[str, Ex]) -> tuple[list[cst.BaseStatement], Ex]:
            log_q = call("log", env[inp]) if transform == "log" else env[inp]
            return [], env[t] * (call("log", env[t]) - log_q)
        return kl, []
    if c.op in ("smooth_l1_loss", "huber_loss"):
        return _huber_terms(b, ops)
    if c.op == "hinge_loss":
        a, y = ops
        margin = b.scalar("margin", args.get("margin", 1.0), init_key=b.ctx.task.op_arg_source("hinge_loss", "margin"))
        m = Ex.name("margin", tensor=False)
        return (lambda env: ([], call("maximum", m - env[a] * env[y], 0.0))), [margin]
    raise Unsupported(f"no term for {c.op}")


@cites("LOSS.huber-where")
def _huber_terms(b: Builder, ops: list[str]) -> tuple[Terms, list[Scalar]]:
    """Smooth L1 (beta) and Huber (delta) with one where on |d| < threshold (LOSS.huber-where):
    smooth L1 = 0.5 d^2 / beta or |d| - 0.5 beta; Huber = 0.5 d^2 or delta (|d| - 0.5 delta).
    Smooth L1 with beta = 0 is L1, as torch defines it."""
    c = b.ctx.contract
    p, t = ops
    key = "beta" if c.op == "smooth_l1_loss" else "delta"
    value = c.op_args.get(key, 1.0)
    if value is None:
        value = 1.0
    scalar = b.scalar(key, value, init_key=b.ctx.task.op_arg_source(c.op or "", key))
    k = Ex.name(key, tensor=False)

    def terms(env: Mapping[str, Ex]) -> tuple[list[cst.BaseStatement], Ex]:
        stmts = b.fwd("diff = {d}", d=(env[p] - env[t]).node) + b.fwd("adiff = pypto.abs(diff)")
        d, ad = Ex.name("diff"), Ex.name("adiff")
        if c.op == "smooth_l1_loss":
            if value == 0:
                return stmts, ad
            return stmts, call("where", call("lt", ad, k), d * d * (0.5 / k), ad - k * 0.5)
        return stmts, call("where", call("lt", ad, k), d * d * 0.5, (ad - k * 0.5) * k)

    return terms, [scalar]


@dataclass(frozen=True)
class _Flat:
    """The kernel's view of a simple loss's operands: all flattened to (flat_size,), or, for an
    operand that is the other's trailing dims (dims' broadcast_rows), (rows, cols) and (1, cols)
    with the small one widened inside the kernel (one axis: pypto's limit)."""

    dims: tuple[str, ...]
    shapes: Mapping[str, tuple[str | int, ...]]
    count: str
    big: str

    @property
    def rows(self) -> bool:
        return len(self.dims) == 2

    def total(self, term: Ex, rows: str = "rows") -> Ex:
        """The sum of the term: over cols, then the column of row sums (expr.column_sum; a 1-D
        intermediate takes its tile from the rows' tile axis and fails to compile: F21004 / FC1001,
        measured), or over the flat axis. `rows`: how many rows the term holds (a loop's chunk)."""
        if not self.rows:
            return reduce("sum", term, 0, True)
        return column_sum(reduce("sum", term, 1, True), rows)

    @property
    def out(self) -> tuple[int, ...]:
        return (1, 1) if self.rows else (1,)


def _flat(b: Builder, ops: list[str]) -> _Flat:
    c = b.ctx.contract
    if b.ctx.dims.reshape == "scalar_rows":  # LOSS.scalar-rows: every operand (rows, cols)
        return _Flat(("rows", "cols"), dict.fromkeys(ops, ("rows", "cols")), "(rows * cols)", ops[0])
    if b.ctx.dims.reshape == "broadcast_rows":
        kernel = {t.name: tuple(k) for t, k in zip(c.tensor_inputs, b.ctx.dims.kernel_shapes, strict=False)}
        big = max(ops, key=lambda o: kernel[o][0])
        return _Flat(("rows", "cols"), {o: (("rows", "cols") if o == big else (1, "cols")) for o in ops},
                     "(rows * cols)", big)
    shapes = {t.name: t.shape for t in c.tensor_inputs}
    if shapes[ops[0]] != shapes[ops[1]]:
        raise Unsupported("the loss inputs have different shapes and neither is the other's trailing dims")
    return _Flat(("flat_size",), dict.fromkeys(ops, ("flat_size",)), "flat_size", ops[0])


def _simple(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    ops = [t.name for t in c.operands]
    if len(ops) != 2:
        raise Unsupported(f"{c.op} needs two tensor operands")
    if ctx.geometry is None or ctx.tile is None:
        raise Unsupported("no tile for this loss")
    flat = _flat(b, ops)
    terms, scalars = _terms(b, ops)
    prelude, scale, extra_dim = _scale(b, flat.count)
    loop = ctx.loop_count is not None
    b.pattern = "D"
    what = ("the (rows, cols) inputs" if b.ctx.dims.reshape == "scalar_rows" else
            "(rows, cols) and the row it broadcasts" if flat.rows else "the flattened inputs")
    b.summary = f"Pattern D: {c.op} over {what} to one value"
    if loop:
        b.summary += ", accumulated over a loop"
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, what, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def part(env: Mapping[str, Ex], rows: str = "rows") -> tuple[list[cst.BaseStatement], Ex]:
        stmts, term = terms(env)
        total = flat.total(term, rows)
        return stmts, (total * scale if scale is not None else total)

    if not loop:
        stmts, total = part({o: Ex.name(o) for o in ops})
        body = b.tmpl("loss", tile=tile, terms=stmts, out=name("out"), total=total)
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            views: Stmts = []
            env = {}
            for o in ops:
                shape = flat.shapes[o]
                if shape[0] == 1:  # the broadcast row is read whole by every chunk
                    env[o] = Ex.name(o)
                    continue
                views += b.view(f"{o}_{suffix}", o, b.chunk_shape(shape, 0, size), b.chunk_offsets(len(shape), 0, off))
                env[o] = Ex.name(f"{o}_{suffix}")
            stmts, p = part(env, size)
            return b.tmpl("loss_step", views=views, terms=stmts, out=name("out"), part=p)

        loop_prelude, body = b.chunked_loop(flat.dims[0], step, setup=b.tmpl(
            "loss_setup", tile=tile, out=name("out"), shape=dims_list(flat.out), dtype=b.pdtype(c.output_dtype)))
        prelude += loop_prelude
    dims = list(flat.dims) + ([extra_dim] if extra_dim else [])
    direction = f" ({c.direction})" if c.direction else ""
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=scalars,
        inputs=[TensorParam(o, flat.shapes[o], b.input_dtype(o)) for o in ops],
        output=TensorParam("out", flat.out, c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"Pattern D (D.loss-scalar): {c.formula or c.op}{direction}; "
            f"reduction {c.reduction.scaling if c.reduction else 'mean'}.",
    )
    b.add_kernel(spec)
    _flat_forward(b, ops, flat)
    if extra_dim:
        b.forward.prepare += b.fwd("batch = {x}.shape[0]", x=name(ops[0]))
    b.call_kernel(spec, [f"{o}_flat" if not flat.rows else f"{o}_rows" for o in ops])
    b.forward.result = _scalar_result(b)


def _flat_forward(b: Builder, ops: list[str], flat: _Flat) -> None:
    """forward: ranks checked, every operand flattened (or laid out as rows and the broadcast row)."""
    shapes = {t.name: t.shape for t in b.ctx.contract.tensor_inputs}
    for o in ops:
        b.assert_rank(o, len(shapes[o] or ()))
    if not flat.rows:
        b.assert_same_shape(ops[0], ops[1])
        names = [b.prepare(o, [b.expr("-1")], "flat") for o in ops]
        b.unpack_dims(names[0], ["flat_size"])
        return
    if b.ctx.dims.reshape == "scalar_rows":  # a row is the trailing axes the dimension step merged
        b.assert_same_shape(ops[0], ops[1])
        names = [b.prepare(o, b.reshape_args(o, b.ctx.dims.axis_map), "rows") for o in ops]
        b.unpack_dims(names[0], ["rows", "cols"])
        return
    small = next(o for o in ops if o != flat.big)
    k = len(shapes[small] or ())
    b.assert_expr(b.expr(f"{{big}}.shape[-{k}:] == {{small}}.shape", big=name(flat.big), small=name(small)),
                  f"{small} must be the trailing dims of {flat.big}")
    b.prepare(flat.big, [b.expr("-1"), b.expr("{s}.numel()", s=name(small))], "rows")
    b.prepare(small, [b.expr("1"), b.expr("-1")], "rows")
    b.unpack_dims(f"{flat.big}_rows", ["rows", "cols"])


def _scalar_result(b: Builder) -> cst.BaseExpression:
    out = b.ctx.contract.output_shape
    if out is not None and len(out) == 0:
        return b.expr("out.reshape(())")
    if out is not None:
        return b.expr("out.reshape({s})", s=literal(tuple(out)))
    return name("out")


def _triplet(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    args = c.op_args
    if float(args.get("p", 2.0)) != 2.0:
        raise Unsupported("triplet margin loss is scaffolded for p=2 (the Euclidean distance) only")
    if args.get("swap"):
        raise Unsupported("triplet margin loss with swap=True is not scaffolded")
    ops = [t.name for t in c.operands]
    if len(ops) != 3 or ctx.geometry is None or ctx.tile is None or len(ctx.geometry.shape) != 2:
        raise Unsupported("triplet margin loss needs three (batch, features) operands")
    shape = ctx.geometry.shape
    anchor, positive, negative = ops
    src = b.ctx.task.op_arg_source
    margin = b.scalar("margin", args.get("margin", 1.0), init_key=src("triplet_margin_loss", "margin"))
    eps = b.scalar("eps", args.get("eps", 1e-6), init_key=src("triplet_margin_loss", "eps"))
    scaling = c.reduction.scaling if c.reduction else args.get("reduction", "mean")
    if scaling not in ("mean", "sum"):
        raise Unsupported(f"triplet margin loss with reduction '{scaling}' returns a tensor: not scaffolded")
    b.pattern = "D"
    b.summary = "Pattern D: triplet margin loss in two phases (per-sample distances, then the batch)"
    if ctx.loop_count is not None:
        b.notes.append(f"Phase 1 has auto_tiles above the limit at {fmt_dims(shape)}; it runs without a loop "
                       "(a per-sample loop is not scaffolded).")
    t1 = b.tile_constant(ctx.plan.tile("main"), "phase 1 (per-sample distances) on")
    t2 = b.tile_constant(ctx.plan.tile("phase2"), "phase 2 (the batch) on")
    eps_e, m_e = Ex.name("eps", tensor=False), Ex.name("margin", tensor=False)
    a, p, n = Ex.name(anchor), Ex.name(positive), Ex.name(negative)
    phase1 = (b.fwd("d_pos = {v}", v=(a - p + eps_e).node) + b.fwd("d_neg = {v}", v=(a - n + eps_e).node)
              + b.fwd("sq_pos = {v}", v=reduce("sum", Ex.name("d_pos") * Ex.name("d_pos"), 1, False).node)
              + b.fwd("sq_neg = {v}", v=reduce("sum", Ex.name("d_neg") * Ex.name("d_neg"), 1, False).node))
    per_sample = call("maximum", call("sqrt", Ex.name("sq_pos")) - call("sqrt", Ex.name("sq_neg")) + m_e, 0.0)
    phase2 = b.fwd("per_sample = {v}", v=per_sample.node)
    total = reduce("sum", Ex.name("per_sample"), 0, True)
    prelude = []
    if scaling == "mean":
        prelude = b.fwd("INV_BATCH = 1.0 / rows")
        total = total * Ex.name("INV_BATCH", tensor=False)
    body = b.tmpl("per_sample_loss", phase1_tile=t1, phase1=phase1, phase2_tile=t2, phase2=phase2,
                  out=name("out"), total=total)
    spec = KernelSpec(
        factory="create_triplet_margin_loss_kernel", kernel="triplet_margin_loss_kernel",
        dims=["rows", "features"], scalars=[margin, eps],
        inputs=[TensorParam(o, ("rows", "features"), ctx.dtype) for o in ops],
        output=TensorParam("out", (1,), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc="Pattern D (D.two-phase): max(||a - p + eps|| - ||a - n + eps|| + margin, 0) per sample, "
            f"then the batch {scaling}.",
    )
    b.add_kernel(spec)
    rank = len(c.operands[0].shape or shape)
    for o in ops:
        b.assert_rank(o, rank)
    for o in ops[1:]:
        b.assert_same_shape(anchor, o)
    reshape = ctx.dims.forward_reshape[0] if ctx.dims.forward_reshape else None
    names = [b.prepare(o, b.reshape_args(o, ctx.dims.axis_map) if reshape is not None else None, "rows")
             for o in ops]
    b.unpack_dims(names[0], ["rows", "features"])
    b.call_kernel(spec, names)
    b.forward.result = _scalar_result(b)


def loss_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """Simple losses reduce the flattened inputs along axis 0; a per-sample loss (D.two-phase)
    tiles phase 1 on (rows, features) reducing the features, and phase 2 on the per-sample values."""
    base = main_tile_needs(c, dims, g, kb)
    main = base.tiles[0]
    if c.op == "triplet_margin_loss" and len(g.shape) == 2:
        phase1 = replace(main, constant="PHASE1_TILE_SHAPE", reduce_dim=1)
        phase2 = TileRole("phase2", "PHASE2_TILE_SHAPE", (g.shape[0],), g.dtype, 0)
        return replace(base, tiles=(phase1, phase2))
    if len(g.shape) == 1:
        return replace(base, tiles=(replace(main, reduce_dim=0),))
    if dims.reshape in ("broadcast_rows", "scalar_rows"):  # the tile is for a (rows, cols) operand, reduced on cols
        big = max(dims.kernel_shapes, key=lambda s: s[0])
        return replace(base, tiles=(replace(main, shape=tuple(big), reduce_dim=1),), loop_axis=0)
    return base


PATTERNS = (Pattern("D", ("loss",), build_loss,
                    ("D.loss-scalar", "D.two-phase", "LOSS.huber-where", "LOSS.scalar-rows"), needs=loss_needs),)
