"""Pattern B: matmul. A 2-D matmul loops along M (view -> matmul -> assemble); a same-batch 3-D
matmul is one 2-D product per batch element in a loop over the batch (B.batched-loop: pypto 0.2.0
miscompiles the one 3-D call once its cube tiles split M or N); a transposed right operand is read
as stored (b_trans=True).

BASIC_BATCH always comes from LOOP_COUNT (O2.loop-log-scale, CL.matmul-basic-batch), and the cube
tiles from the design, the pack's starting point, or the best legal candidate for M, K, N.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, literal, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam
from pypto_tui.contract.model import kernel_safe
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry


@cites("B.matmul-m-loop", "B.transposed-b", "B.batched-no-loop", "B.batched-loop", "B.leading-rows")
def build_matmul(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    mm = ctx.dims.matmul or {}
    if c.op not in ("matmul", "bmm"):
        raise Unsupported(f"'{c.op}' is not a plain matmul: {c.reason or 'structured products are not scaffolded'}")
    if c.op_args.get("post") or c.op_args.get("fused"):
        raise Unsupported(c.reason or "the matmul has pre- or post-processing: only a plain product is scaffolded")
    if c.op_args.get("variant") == "matvec":
        raise Unsupported("matrix-vector products are not scaffolded (the documents' pattern B is matrix-matrix)")
    ops = c.operands
    if len(ops) != 2:
        raise Unsupported("a matmul needs two tensor operands")
    a_name, b_name = ops[0].name, ops[1].name
    # the kernel's own names for its operands: an input called k (attention's q @ k^T) would be shadowed
    # by the size k the kernel and forward bind
    a_k, b_k = kernel_safe(a_name), kernel_safe(b_name)
    a_rank = len(ops[0].shape or ())
    rows_of_a = a_rank > 2 and len(ops[1].shape or ()) == 2  # a tensor times a matrix (3-D x 2-D, einsum)
    reshaped = any(t.shape != s for t, s in zip(c.tensor_inputs, ctx.dims.kernel_shapes, strict=False))
    # (batch, heads, M, K) @ (batch, heads, K, N): the leading axes merged into one batch (B.batched-loop)
    heads = a_rank >= 4 and len(ops[1].shape or ()) == a_rank and mm.get("batch") is not None
    if reshaped and not rows_of_a and not heads:
        raise Unsupported("this matmul needs its operands reshaped in a way pattern B does not write "
                          "(only a tensor's leading axes as rows of a 2-D product)")
    a_trans, b_trans = bool(mm.get("a_trans")), bool(mm.get("b_trans"))
    batch = mm.get("batch")
    out_dtype = c.output_dtype or "fp32"
    cube_m, cube_k, cube_n = b.cube_constants()
    cube = {"cube_m": cube_m, "cube_k": cube_k, "cube_n": cube_n}
    pdt = b.pdtype(out_dtype)
    a_shape: tuple[str, ...]
    b_shape: tuple[str, ...]
    if batch is not None:
        dims = ["batch", "m", "k", "n"]
        a_shape = ("batch", "k", "m") if a_trans else ("batch", "m", "k")
        b_shape = ("batch", "n", "k") if b_trans else ("batch", "k", "n")
        out_shape: tuple[str, ...] = ("batch", "m", "n")
    else:
        dims = ["m", "k", "n"]
        a_shape = ("k", "m") if a_trans else ("m", "k")
        b_shape = ("n", "k") if b_trans else ("k", "n")
        out_shape = ("m", "n")
    loop = batch is None and not a_trans and ctx.loop_count is not None
    per_batch = batch is not None  # B.batched-loop (measured: one 3-D call is wrong once the cube tiles split M or N)
    k_a: tuple[str, ...] = a_shape  # the kernel's tensors
    k_b: tuple[str, ...] = b_shape
    k_out: tuple[str, ...] = out_shape
    if per_batch:  # B.batched-loop: the operands' batches stacked along the rows, one 2-D product each;
        # out_rows (= batch * m) is read from the stacked A in forward, which does no arithmetic
        k_a, k_b, k_out = ("out_rows", a_shape[-1]), _stacked(b_shape), ("out_rows", "n")
        if a_trans:
            k_a = _stacked(a_shape)
        dims = [*dims, "out_rows"]
    b.pattern = "B"
    prelude: Stmts = []
    epilogue = _Epilogue(b, out_shape) if c.op_args.get("epilogue") else None
    if epilogue is not None:
        if batch is not None or a_trans or ctx.plan.dynamic is not None:
            raise Unsupported("a matmul epilogue is written for a 2-D product with A as stored and static shapes")
        b.summary = ("Pattern B: 2-D matmul with its elementwise epilogue on each output tile"
                     + (", loop along M (view -> matmul -> epilogue -> assemble)" if loop else ""))
        setup = b.tmpl("matmul_setup", **cube) + b.tmpl("vec_setup", tile=epilogue.tile)

        def ep_step(size: str, off: str | int, suffix: str) -> Stmts:
            assert epilogue is not None
            chunk = f"{a_k}_{suffix}"
            views, env = epilogue.reads(size, off, suffix)
            return b.tmpl("matmul_epilogue_step", views=b.view(chunk, a_k, [size, "k"], [off, 0]) + views,
                          a_chunk=name(chunk), b=name(b_k), out_dtype=pdt, b_trans=literal(b_trans),
                          product=name(f"mm_{suffix}"), value=epilogue.value(env), offsets=dims_list([off, 0]),
                          out=name("out"))

        if loop:
            prelude, body = b.chunked_loop("m", ep_step, "bi", "M_LOOP", setup=setup)
        else:
            body = setup + ep_step("m", 0, "all")
    elif loop:
        b.summary = "Pattern B: 2-D matmul, loop along M (view -> matmul -> assemble)"
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{a_k}_{suffix}"
            return b.tmpl("matmul_step", views=b.view(chunk, a_k, [size, "k"], [off, 0]), a_chunk=name(chunk),
                          b=name(b_k), out_dtype=pdt, b_trans=literal(b_trans), offsets=dims_list([off, 0]),
                          out=name("out"))

        prelude, body = b.chunked_loop("m", step, "bi", "M_LOOP", setup=b.tmpl("matmul_setup", **cube))
    elif per_batch:
        b.summary = "Pattern B: batched matmul, one 2-D product per batch element in a loop over the batch"
        body = b.tmpl("matmul_batch_loop", **cube, a=name(a_k), b=name(b_k), out=name("out"),
                      a_view=dims_list(a_shape[1:]), a_off=_row_offset(b, a_shape[1]),
                      b_view=dims_list(b_shape[1:]), b_off=_row_offset(b, b_shape[1]),
                      out_off=_row_offset(b, "m"), out_dtype=pdt, a_trans=literal(a_trans), b_trans=literal(b_trans))
    else:
        b.summary = "Pattern B: 2-D matmul in one call"
        body = b.tmpl("matmul", **cube, out=name("out"), a=name(a_k), b=name(b_k), out_dtype=pdt,
                      a_trans=literal(a_trans), b_trans=literal(b_trans))
    if b_trans:
        b.summary += ", B read transposed (b_trans=True)"
    spec = KernelSpec(
        factory="create_matmul_kernel", kernel="matmul_kernel", dims=dims,
        scalars=epilogue.scalars if epilogue is not None else [],
        inputs=[TensorParam(a_k, k_a, ops[0].dtype or ctx.dtype),
                TensorParam(b_k, k_b, ops[1].dtype or ctx.dtype),
                *(epilogue.params(ctx.dtype) if epilogue is not None else [])],
        output=TensorParam("out", k_out, out_dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (B.matmul-m-loop, {'B.batched-loop' if per_batch else 'B.batched-no-loop'}, B.transposed-b"
            + (f", FUSE.matmul-separate): out = {c.formula.split('then out = ')[-1]}"
               if epilogue is not None and c.formula else ")")
            + "; shapes are closure constants (P1.static-shape).",
    )
    b.add_kernel(spec)
    # forward
    rank = 3 if batch is not None else 2
    b.assert_rank(a_name, a_rank if rows_of_a or heads else rank)
    b.assert_rank(b_name, a_rank if heads else rank)

    def batched(x: str) -> list[cst.BaseExpression]:
        return [b.expr("-1"), b.expr("{x}.shape[-2]", x=name(x)), b.expr("{x}.shape[-1]", x=name(x))]

    def laid(x: str, shape: list[cst.BaseExpression] | None, suffix: str) -> str:
        if shape is None and kernel_safe(x) != x:  # the local a size would overwrite, under another name
            b.forward.prepare += b.fwd("{n} = {t}.contiguous()", n=name(kernel_safe(x)), t=name(x))
            return kernel_safe(x)
        return b.prepare(x, shape, suffix)

    an = laid(a_name, [b.expr("-1"), b.expr("{a}.shape[-1]", a=name(a_name))] if rows_of_a else
              batched(a_name) if heads else None, "rows" if rows_of_a else "batched")
    bn = laid(b_name, batched(b_name) if heads else None, "batched" if heads else "")
    b.unpack_dims(an, list(a_shape))
    kb_ = "k_b"
    bdims = [kb_ if d == "k" else ("batch_b" if d == "batch" else d) for d in b_shape]
    b.unpack_dims(bn, bdims)
    b.assert_expr(b.expr("{x} == k", x=name(kb_)), f"inner dimensions of {a_name} and {b_name} differ")
    if batch is not None:
        b.assert_expr(b.expr("batch_b == batch"), f"{a_name} and {b_name} have different batch sizes")
    # the asserts above read unpacked dims: keep them after the unpacking
    b.forward.prepare += b.forward.asserts[2:]
    b.forward.asserts = b.forward.asserts[:2]
    if per_batch:  # the batches stacked along the rows: free views of contiguous tensors
        an = b.prepare(an, [b.expr("-1"), b.expr(a_shape[-1])], "rows")
        bn = b.prepare(bn, [b.expr("-1"), b.expr(b_shape[-1])], "rows")
        b.forward.prepare += b.fwd("out_rows = {a}.shape[0] // {k} * m" if a_trans else "out_rows = {a}.shape[0]",
                                   a=name(an), k=name("k"))
    b.call_kernel(spec, [an, bn, *(epilogue.prepare() if epilogue is not None else [])])
    if rows_of_a:  # B.leading-rows: the rows back to A's leading axes
        lead = [b.expr("{a}.shape[{i}]", a=name(a_name), i=literal(i)) for i in range(a_rank - 1)]
        b.forward.result = b.expr("out.reshape({args})", args=[cst.Arg(e) for e in [*lead, name("n")]])
        b.summary += f", the leading {a_rank - 1} axes of {a_name} as its rows (B.leading-rows)"
    elif heads:
        lead = [b.expr("{a}.shape[{i}]", a=name(a_name), i=literal(i)) for i in range(a_rank - 2)]
        b.forward.result = b.expr("out.reshape({args})", args=[cst.Arg(e) for e in [*lead, name("m"), name("n")]])
        b.summary += f", the leading {a_rank - 2} axes of both operands as one batch"
    elif per_batch:
        b.forward.result = b.expr("out.reshape(batch, m, n)")
    else:
        b.forward.result = name("out")


class _Epilogue:
    """The contract's elementwise epilogue (op_args['epilogue'], FUSE.matmul-separate): its tree over
    the product and the other operands, each a row vector ((N,) or (1, N), widened to the chunk's rows
    with expand_clone) or a whole (M, N) tensor (a view of the chunk's rows), and the vec tile the
    plan chose for the output."""

    def __init__(self, b: Builder, out_shape: tuple[str, ...]) -> None:
        from pypto_tui.codegen.patterns.elementwise import _expression, _thaw
        from pypto_tui.contract.recognise import PRODUCT

        c = b.ctx.contract
        self.b = b
        self.product = PRODUCT
        self.operands = list(c.op_args.get("epilogue_operands") or ())
        full = tuple(c.output_shape or ())
        self.row: dict[str, bool] = {}
        for o in self.operands:
            inp = c.input(o)
            shape = tuple(inp.shape or ()) if inp is not None else ()
            if len(full) != 2 or shape not in ((full[1],), (1, full[1]), full):
                raise Unsupported(f"the epilogue reads {o} of shape {shape}: only a row vector or a tensor of the "
                                  f"product's shape {full} is read by a matmul epilogue")
            self.row[o] = shape != full
        found: dict[str, Scalar] = {}
        self._value = _expression(b, _thaw(c.op_args["epilogue"]), found, (PRODUCT, *self.operands))
        self._value({o: Ex.name(o) for o in (PRODUCT, *self.operands)})  # collects the scalars
        self.scalars = list(found.values())
        if b.ctx.main is None:
            raise Unsupported("the plan has no vec tile for the matmul's epilogue")
        self.tile = b.tile_constant(b.ctx.main, "the epilogue on the product " + "x".join(out_shape))

    def value(self, env: dict[str, Ex]) -> Ex:
        return self._value(env)

    def reads(self, size: str, off: str | int, suffix: str) -> tuple[Stmts, dict[str, Ex]]:
        stmts: Stmts = []
        env: dict[str, Ex] = {self.product: Ex.name(f"mm_{suffix}")}
        for o in self.operands:
            chunk = f"{o}_{suffix}"
            if self.row[o]:
                stmts += self.b.fwd(f"{chunk} = pypto.expand_clone({o}, [{size}, n])")
            else:
                stmts += self.b.view(chunk, o, [size, "n"], [off, 0])
            env[o] = Ex.name(chunk)
        return stmts, env

    def params(self, dtype: str) -> list[TensorParam]:
        c = self.b.ctx.contract
        out: list[TensorParam] = []
        for o in self.operands:
            inp = c.input(o)
            shape: tuple[str | int, ...] = (1, "n") if self.row[o] else ("m", "n")
            out.append(TensorParam(o, shape, (inp.dtype if inp is not None else None) or dtype))
        return out

    def prepare(self) -> list[str]:
        """forward: a row vector as (1, N), a whole tensor as stored, both contiguous."""
        b = self.b
        names = []
        for o in self.operands:
            if self.row[o]:
                names.append(b.prepare(o, [b.expr("1"), b.expr("-1")], "row"))
            else:
                b.assert_rank(o, 2)
                names.append(b.prepare(o, None, ""))
        return names


def matmul_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The common needs; an epilogue's tile role is cut to the cube's N tile (TileRole.cube_n)."""
    needs = main_tile_needs(c, dims, g, kb)
    if not c.op_args.get("epilogue") or not needs.tiles:
        return needs
    return replace(needs, tiles=(replace(needs.tiles[0], cube_n=True), *needs.tiles[1:]))


def _stacked(shape: tuple[str, ...]) -> tuple[str, ...]:
    """(batch, r, c) -> (batch * r, c): the batch elements one after another along the rows."""
    return (f"{shape[0]} * {shape[1]}", shape[2])


def _row_offset(b: Builder, rows: str) -> cst.List:
    return cst.List([cst.Element(b.expr(f"bi * {rows}")), cst.Element(literal(0))])


PATTERNS = (Pattern("B", ("matmul",), build_matmul, ("B.matmul-m-loop", "B.transposed-b", "B.batched-no-loop",
                                                     "B.batched-loop", "B.leading-rows"), needs=matmul_needs),)
