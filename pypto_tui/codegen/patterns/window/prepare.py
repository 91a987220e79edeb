"""The pre kernels of a window op: the prepared input a conv or pool reads, padded (zeros, -inf
for a max pool), zero-inserted (strided transposed convs) or stored by stride phase, in blocks
of planes (CONV.pad-blocks, CONV.insert-matmul, CONV.insert-rows, POOL.phase-split)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, literal, name
from pypto_tui.codegen.patterns.window.emit import (
    Names,
    block_loop,
    dim_names,
    expr,
    expr_list,
    factory_prelude,
    fill_word,
    given_sizes,
    plane_shape,
    product,
)
from pypto_tui.codegen.spec import Constant, KernelSpec, TensorParam
from pypto_tui.findings import cites

if TYPE_CHECKING:
    from pypto_tui.window import WindowPlan


# ------------------------------------------------------------------------------------ the pre kernel
@cites("CONV.transposed", "POOL.max-pad-inf", "CONV.assemble-whole")
def prepare_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, planes: str,
                    unpack: Stmts) -> str:
    """Zero insertion and padding, one plane per iteration; forward allocates the prepared input."""
    nd = plan.nd
    dt = b.pdtype()
    ext = list(nm.sizes)
    steps: Stmts = []
    plane_axis = [2] if nd == 1 else [1 + i for i in range(nd)]
    extra: list[str] = []
    if nd == 3:
        extra.append("PREP_TILE_3D = (1, PREP_TILE[2], PREP_TILE[3])")
    for i, a in enumerate(plan.axes):
        if a.insert <= 1:
            continue
        lead = product(["1", *ext[:i]])
        rest = product(ext[i + 1:])
        stride = f"STRIDE[{i}]"
        steps += b.tmpl("window_reshape", dst=name("plane"), src=name("plane"),
                        shape=expr_list([f"{lead} * {ext[i]}", "1", rest]))
        if nd == 3:  # the concat's tile: 3-D, its last dim 32-byte aligned (HW.concat-reduce-align)
            steps += [cst.parse_statement("pypto.set_vec_tile_shapes(*PREP_TILE_3D)  # pypto-lint: "
                                          "ignore[lint.tile_waste]  CONV.transposed: sized for the insertion\n")]
        steps += b.tmpl("window_insert", zeros=expr_list([f"{lead} * {ext[i]}", f"{stride} - 1", rest]), dt=dt)
        if nd == 3:
            steps += [cst.parse_statement(f"pypto.set_vec_tile_shapes(*{tile.node.value})\n")]
        steps += b.tmpl("window_reshape", dst=name("plane"), src=name("plane"),
                        shape=expr_list(plane_shape(nd, [*ext[:i], f"{ext[i]} * {stride}", *ext[i + 1:]])))
        ext[i] = f"{ext[i]} * {stride}"
    for i in reversed(range(nd)):
        hi_ext = [*ext[:i], nm.hi[i], *ext[i + 1:]]
        lo_ext = [*ext[:i], nm.lo[i], *ext[i + 1:]]
        steps += b.tmpl("window_pad", hi=name(nm.hi[i]), lo=name(nm.lo[i]), hi_shape=expr_list(plane_shape(nd, hi_ext)),
                        lo_shape=expr_list(plane_shape(nd, lo_ext)), axis=literal(plane_axis[i]), dt=dt)
        ext[i] = nm.q[i]
    fill = expr('float("-inf")') if plan.fill == float("-inf") else literal(0.0)
    body = b.tmpl("window_prepare", fill=fill, tile=tile, planes=expr("n * c"), x=name(planes), out=name("out"),
                  plane_shape=expr_list(plane_shape(nd, list(nm.sizes))),
                  offsets=expr_list(["i", *["0"] * (len(plane_shape(nd, ext)) - 1)]), steps=steps)
    dims = dim_names(nd)
    in_shape = tuple(expr(v) for v in nm.planes_shape(list(nm.sizes)))
    out_shape = tuple(expr(v) for v in nm.planes_shape(list(nm.q)))
    spec = KernelSpec(
        factory=f"create_{op}_prepare_kernel", kernel=f"{op}_prepare_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(planes, in_shape, b.ctx.dtype)],
        output=TensorParam("out", out_shape, b.ctx.dtype),
        prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"The prepared input of {op}: each (image, channel) plane "
             + ("zero-inserted and " if any(a.insert > 1 for a in plan.axes) else "")
             + f"padded with {'-inf' if plan.fill == float('-inf') else 'zeros'} "
             "(CONV.transposed, POOL.max-pad-inf), one plane per iteration, assembled whole (CONV.assemble-whole)."),
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [planes], out="prepared")
    return "prepared"


@cites("CONV.insert-matmul", "CONV.transposed", "P6.loop-tail")
def insert_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, rows: str, unpack: Stmts) -> str:
    """A transposed conv's zeros along its last axis by a matmul (CONV.insert-matmul): the input read
    flat as rows of BLOCK elements, each chunk of INSERT_ROWS rows times the spread (BLOCK x BLOCK *
    S); forward reads the result as the planes, their last axis S times longer, for the pre kernel."""
    nd = plan.nd
    cube_m, cube_k, cube_n = b.cube_constants("insert")
    dt = b.pdtype()
    total = product(["n", "c", *nm.sizes])
    block = f"insert_block({nm.sizes[-1]})"  # the kernel's signature and forward's allocation read it alike
    b.add_constant(Constant(
        "INSERT_ROWS", plan.insert_matmul_shape[0] if plan.insert_matmul_shape else 1,
        ["INSERT_ROWS: rows of the insertion matmul per iteration (CONV.insert-matmul)."], ("CONV.insert-matmul",), {}))

    def chunk(size: str, off: str, suffix: str) -> Stmts:
        return b.tmpl("insert_rows", rows=name(f"rows_{suffix}"), size=expr(size), off=expr(off), dt=dt)

    loop_sizes, loop = block_loop(b, "INSERT", "ROWS_IN", "ceil_div(ROWS_IN, INSERT_ROWS)", chunk)
    body = [*b.tmpl("insert_matmul", tile=tile, axis=literal(nd - 1), cube_m=cube_m, cube_k=cube_k, cube_n=cube_n),
            *loop]
    spec = KernelSpec(
        factory=f"create_{op}_insert_kernel", kernel=f"{op}_insert_kernel", dims=dim_names(nd), scalars=[],
        inputs=[TensorParam("x_rows", (expr(f"{total} // {block}"), expr(block)), b.ctx.dtype)],
        output=TensorParam("out", (expr(f"{total} // {block}"), expr(f"{block} * STRIDE[{nd - 1}]")), b.ctx.dtype),
        prelude=[*factory_prelude(unpack, [f"BLOCK = insert_block({nm.sizes[-1]})", f"ROWS_IN = {total} // BLOCK"]),
                 *loop_sizes], body=body,
        doc=(f"The zeros of {op} along its last axis (CONV.insert-matmul): the input read flat in rows of BLOCK "
             "elements, times the spread (BLOCK x BLOCK * S, a one at each element's place), is the input with "
             "S - 1 zeros after each element, in memory order."),
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [rows], out="inserted")
    return "inserted"


@cites("CONV.insert-rows", "CONV.pad-blocks", "P6.loop-tail")
def insert_rows_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, i: int, tile: Any, src: str,
                        unpack: Stmts) -> str:
    """Axis i's zeros (CONV.insert-rows): the input read flat as rows of one position of axis i (its
    inner extent, already zero-inserted), each row followed by S - 1 rows of zeros, whole chunks of
    rows per iteration: a copy and one zero slab, nothing strided."""
    dt = b.pdtype()
    letter = nm.L[i]
    inner = product(given_sizes(plan, nm, after=i)[i + 1:])
    rows = product(["n", "c", *nm.sizes[:i + 1]])
    wide = f"STRIDE[{i}] * {inner}"
    zeroed = prefilled(b)  # the inserted rows are zeros: forward's allocation

    def chunk(size: str, off: str, suffix: str) -> Stmts:
        data = f"rows_{suffix}"
        steps = b.tmpl("copy_block", views=b.view(data, "x_rows", [size, inner], [off, 0]), part=name(data),
                       offsets=expr_list([off, "0"]), out=name("out"))
        if zeroed:
            return steps
        return steps + b.tmpl("window_fill_slab", width=expr(f"(STRIDE[{i}] - 1) * {inner}"),
                              shape=expr_list([size, f"(STRIDE[{i}] - 1) * {inner}"]),
                              at=expr_list([off, inner]), dt=dt,
                              out=name("out"))

    count = f"ceil_div({rows} * {wide}, {plan.insert_chunk_elements})"
    loop_sizes, loop = block_loop(b, f"INSERT_{letter}", rows, count, chunk)
    body = [*fill_setup(b, literal(0.0), tile, zeroed), *loop]
    spec = KernelSpec(
        factory=f"create_{op}_insert_{letter.lower()}_kernel", kernel=f"{op}_insert_{letter.lower()}_kernel",
        dims=dim_names(plan.nd), scalars=[], inputs=[TensorParam("x_rows", (expr(rows), expr(inner)), b.ctx.dtype)],
        output=TensorParam("out", (expr(rows), expr(wide)), b.ctx.dtype),
        prelude=[*factory_prelude(unpack, []), *loop_sizes], body=body,
        doc=(f"The zeros of {op} along axis {letter} (CONV.insert-rows): each row of the input read flat (one "
             f"position of {letter}, its inner extent already zero-inserted) is followed by STRIDE - 1 zero rows; "
             + ("a copy per chunk of rows into rows forward allocates zeroed (CONV.zeros-allocated)." if zeroed else
                "a copy and one zero slab per chunk of rows.")),
    )
    b.add_kernel(spec)
    out = f"inserted_{letter.lower()}"
    b.forward.calls += [cst.parse_statement(f"{src} = {src}.reshape({rows}, {inner})\n")]
    b.call_kernel(spec, [src], out=out, filled=0.0 if zeroed else None)
    return out


def insert_chain(b: Builder, plan: WindowPlan, nm: Names, op: str, tiles: dict[str, Any], x: str, dims: list[str],
                  unpack: Stmts) -> str:
    """A transposed conv's zeros over the whole input before its padding (CONV.insert-matmul for the
    last axis, CONV.insert-rows for each axis before it, innermost first); returns forward's name for
    the zero-inserted planes the pad-blocks kernel reads."""
    nd = plan.nd
    if plan.inserts_by_matmul:
        b.helpers += b.tmpl("insert_block_helper")
        b.add_constant(Constant(
            "INSERT_BLOCK", plan.insert_block,
            [f"INSERT_BLOCK: the most elements of the last axis one row of the insertion matmul holds "
             f"(CONV.insert-matmul): {plan.insert_block} here; insert_block(size) takes the largest of "
             "INSERT_BLOCK, 8, 4, 2, 1 that divides the axis."], ("CONV.insert-matmul",), {}))
        b.forward.prepare += [cst.parse_statement(f"block = insert_block({dims[-1]})\n")]
        rows = b.prepare(x, [expr(f"{product(['n', 'c', *dims[2:]])} // block"), expr("block")], "rows")
        cur = insert_kernel(b, plan, nm, op, b.tile_constant(tiles["insert"], "the spread's vec tile"), rows, unpack)
    else:
        cur = b.prepare(x, [expr(product(["n", "c", *dims[2:]]))], "flat")
    for i in reversed(range(nd - 1)):
        if plan.axes[i].insert > 1:
            tile = b.tile_constant(tiles[f"insert_{nm.L[i].lower()}"],
                                   f"a chunk of rows with their zero rows ({nm.L[i]})")
            cur = insert_rows_kernel(b, plan, nm, op, i, tile, cur, unpack)
    shape = nm.planes_shape(given_sizes(plan, nm))
    b.forward.calls += [cst.parse_statement(f"{cur} = {cur}.reshape({', '.join(shape)})\n")]
    return cur


@cites("CONV.pad-blocks", "POOL.max-pad-inf", "CONV.assemble-whole")
def pad_blocks_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, planes: str,
                       unpack: Stmts) -> str:
    """Padding in blocks of planes (CONV.pad-blocks): each iteration assembles a block of the input at
    its offset in the prepared planes and fills each border with one slab; forward allocates them."""
    nd = plan.nd
    dt = b.pdtype()
    lead, at0 = (["1"], ["0"]) if nd == 1 else ([], [])  # a 1-D signal's planes are (N*C, 1, L)
    sizes = given_sizes(plan, nm)
    filled = prefilled(b)

    def block(size: str, off: str, suffix: str) -> Stmts:
        data = f"planes_{suffix}"
        view = b.view(data, planes, [size, *[1] * len(lead), *sizes], [off, *[0] * (len(at0) + nd)])
        steps = b.tmpl("copy_block", views=view, part=name(data), offsets=expr_list([off, *at0, *nm.lo]),
                       out=name("out"))
        for i in range(0 if filled else nd):
            # axis i's borders: the data's extent on the axes before it, the whole prepared extent after it
            before, after = list(sizes[:i]), list(nm.q[i + 1:])
            at_before = list(nm.lo[:i])
            for width, at in ((nm.lo[i], "0"), (nm.hi[i], f"{nm.lo[i]} + {sizes[i]}")):
                shape = expr_list([size, *lead, *before, width, *after])
                where = expr_list([off, *at0, *at_before, at, *["0"] * len(after)])
                steps += b.tmpl("window_fill_slab", width=name(width), shape=shape, at=where, dt=dt, out=name("out"))
        return steps

    held = f"in planes forward allocates holding {fill_word(plan)}s"
    how = f", the data assembled at its offset {held}" if filled else \
        ", the data assembled at its offset and each border one fill slab"
    doc = (f"blocks of (image, channel) planes, each assembled at its offset {held}, so the borders need no "
           "write (CONV.pad-blocks, CONV.zeros-allocated)." if filled else
           f"blocks of (image, channel) planes, each assembled at its offset and framed by {fill_word(plan)} slabs "
           "(CONV.pad-blocks, POOL.max-pad-inf).")
    return block_prepare_kernel(b, plan, nm, op, tile, planes, unpack, block, list(nm.q), [], [],
                                ("CONV.pad-blocks", "pads", how), doc, prefilled=filled)


@cites("CONV.zeros-allocated")
def prefilled(b: Builder) -> bool:
    """Whether a pre kernel leaves its fill (zeros, a max pool's -inf, a transposed conv's inserted zeros) to
    forward's allocation (torch.zeros, torch.full: allocations verify allows) and writes its data alone: a
    flavour whose kernels take their output as a parameter."""
    return b.ctx.out_param


def fill_setup(b: Builder, fill: Any, tile: Any, prefilled: bool) -> Stmts:
    """A block pre kernel's opening: its vec tile, and FILL only where the kernel writes fill slabs itself;
    a kernel whose fill is forward's allocation names no fill value it never uses."""
    return b.tmpl("vec_setup", tile=tile) if prefilled else b.tmpl("window_fill", fill=fill, tile=tile)


def block_prepare_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, planes: str, unpack: Stmts,
                          block: Callable[[str, str, str], Stmts], prepared: list[str], prelude: Stmts,
                          setup: Stmts, rule: tuple[str, str, str], doc: str, prefilled: bool = False) -> str:
    """A pre kernel over blocks of PREP_PLANES planes with a tail block (CONV.pad-blocks and
    POOL.phase-split share it): `block(size, offset, suffix)` writes one block; `setup` runs before
    the loop; forward allocates the prepared planes, of extents `prepared`. `rule`: the rule, the
    verb and the rest of PREP_PLANES's comment."""
    rule_id, verb, how = rule
    fill = expr('float("-inf")') if plan.fill == float("-inf") else literal(0.0)
    b.add_constant(Constant(
        "PREP_PLANES", plan.prepare_planes,
        [f"PREP_PLANES: the pre kernel {verb} {plan.prepare_planes} plane(s) per iteration{how} ({rule_id})."],
        (rule_id,), {}))
    loop_sizes, loop = block_loop(b, "PREPARE", "n * c", "ceil_div(n * c, PREP_PLANES)", block)
    body = [*fill_setup(b, fill, tile, prefilled), *setup, *loop]
    in_shape = tuple(expr(v) for v in nm.planes_shape(given_sizes(plan, nm)))
    out_shape = tuple(expr(v) for v in nm.planes_shape(prepared))
    spec = KernelSpec(
        factory=f"create_{op}_prepare_kernel", kernel=f"{op}_prepare_kernel", dims=dim_names(plan.nd), scalars=[],
        inputs=[TensorParam(planes, in_shape, b.ctx.dtype)],
        output=TensorParam("out", out_shape, b.ctx.dtype),
        prelude=[*factory_prelude(unpack, []), *loop_sizes, *prelude], body=body,
        doc=f"The prepared input of {op}: {doc}",
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [planes], out="prepared", filled=plan.fill if prefilled else None)
    return "prepared"


@cites("POOL.phase-split", "CONV.pad-blocks", "POOL.max-pad-inf")
def phase_blocks_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, planes: str,
                         unpack: Stmts) -> str:
    """Blocks of planes stored by stride phase (POOL.phase-split): per block, each phase of the data is
    gathered once (index_select along each phase-split axis) and assembled at its place, and every
    position no data reaches is one fill slab; the pool kernel then reads every tap as a plain view.
    Segments come from a helper evaluated while the kernel is traced, so no write overlaps another."""
    nd = plan.nd
    dt = cst.Module(body=[]).code_for_node(b.pdtype())
    letters = [a.lower() for a in nm.L]
    helper = "phase_segments"
    b.helpers += b.tmpl("window_phase_segments", name=name(helper))
    segments = [f"FIRST_{a}, COUNT_{a}, AT_{a}, FILL_AT_{a}, FILL_WIDTH_{a} = {helper}({nm.sizes[i]}, {nm.lo[i]}, "
                f"{nm.step(i) if nm.phase[i] else 1}, {nm.p[i] if nm.phase[i] else nm.q[i]})"
                for i, a in enumerate(nm.L)]
    prepared = nm.prepared()
    filled = prefilled(b)

    def nest(loops: list[tuple[str, str]], inner: list[str]) -> list[str]:
        """`for index in range(len(items))` for each (index, items), nested, around `inner`; pypto's
        tracer refuses a loop over an empty range, so each loop runs under a test of its list (a
        border of width 0 has no segment)."""
        lines, pad = [], ""
        for index, items in loops:
            lines += [f"{pad}if len({items}) > 0:", f"{pad}    for {index} in range(len({items})):"]
            pad += "        "
        return lines + [pad + line for line in inner]

    def block(size: str, off: str, suffix: str) -> Stmts:
        data = f"planes_{suffix}"
        L, lo = nm.L, letters
        lines: list[str] = []
        for i in range(0 if filled else nd):  # axis i's fill: the data's segments before it, its fill, the rest
            loops = [(f"j_{lo[j]}", f"COUNT_{L[j]}") for j in range(i)] + [(f"k_{lo[i]}", f"FILL_AT_{L[i]}")]
            shape = [size, *(f"COUNT_{L[j]}[j_{lo[j]}]" for j in range(i)), f"FILL_WIDTH_{L[i]}[k_{lo[i]}]",
                     *prepared[i + 1:]]
            at = [off, *(f"AT_{L[j]}[j_{lo[j]}]" for j in range(i)), f"FILL_AT_{L[i]}[k_{lo[i]}]",
                  *["0"] * (nd - i - 1)]
            lines += nest(loops, [f"pypto.assemble(pypto.full([{', '.join(shape)}], FILL, {dt}), "
                                   f"[{', '.join(at)}], out)"])
        loops = [(f"j_{lo[i]}", f"COUNT_{L[i]}") for i in range(nd)]
        gather = [f"part = {data}"] + [f"part = pypto.index_select(part, {1 + i}, keep_{lo[i]}[j_{lo[i]}])"
                                       for i in range(nd) if nm.phase[i]]
        at = [off, *(f"AT_{L[i]}[j_{lo[i]}]" for i in range(nd))]
        lines += nest(loops, [*gather, f"pypto.assemble(part, [{', '.join(at)}], out)"])
        view = b.view(data, planes, [size, *nm.sizes], [off, *[0] * nd])
        return [*view, *cst.parse_module("\n".join(lines) + "\n").body]

    keeps: list[str] = []
    for i in range(nd):
        if nm.phase[i]:
            k = f"keep_{letters[i]}"
            a, s_ = nm.L[i], nm.step(i)
            keeps += [f"{k} = []", f"for j in range(len(COUNT_{a})):", "    pypto.set_vec_tile_shapes(*INDEX_TILE)",
                      f"    {k}.append(pypto.arange(FIRST_{a}[j], FIRST_{a}[j] + COUNT_{a}[j] * {s_}, {s_}))"]
    keeps.append("pypto.set_vec_tile_shapes(*PREP_TILE)")
    return block_prepare_kernel(
        b, plan, nm, op, tile, planes, unpack, block, prepared,
        [cst.parse_statement(line + "\n") for line in segments], list(cst.parse_module("\n".join(keeps) + "\n").body),
        ("POOL.phase-split", "stores",
         " by stride phase, each phase gathered once" + (f" into planes forward allocates holding {fill_word(plan)}s"
                                                          if filled else " and each position no data reaches one fill "
                                                          "slab")),
        "blocks of (image, channel) planes stored by stride phase, each phase gathered once and the rest "
        + (f"left as the {fill_word(plan)}s forward allocates (POOL.phase-split, CONV.zeros-allocated)." if filled else
           f"{fill_word(plan)} slabs (POOL.phase-split, POOL.max-pad-inf)."), prefilled=filled)


@cites("CONV.flat-phases")
def phase_planes_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, padded: str,
                        unpack: Stmts) -> str:
    """The padded planes stored by stride phase, each phase a plane of its own (CONV.flat-phases):
    per block of PREP_PLANES planes, the rows of phase a (index_select along H), then of those the
    columns of phase b (along W), assembled as plane a*SW + b of the block's (SH*SW*PH, PW) output.
    A stride-1 axis has one phase: a plain view instead of the gather."""
    (sh, sw) = (nm.step(0), nm.step(1))
    # only the phases a tap reads are stored (a 1 x 1 conv with stride 2 reads one of four); the planes
    # of the others stay unwritten, and nothing reads them
    used = [sorted({k * a.dilation % a.step for k in range(a.kernel)}) for a in plan.axes]
    setup: list[str] = []
    for letter, s, p in zip("hw", (sh, sw), nm.p, strict=True):
        if s > 1:
            setup += [f"keep_{letter} = []", f"for a in range({s}):", "    pypto.set_vec_tile_shapes(*INDEX_TILE)",
                      f"    keep_{letter}.append(pypto.arange(a, a + {s} * {p}, {s}))"]
    setup.append("pypto.set_vec_tile_shapes(*PREP_TILE)")

    def block(size: str, off: str, suffix: str) -> Stmts:
        data = f"padded_{suffix}"
        rows = (f"rows = pypto.index_select({data}, 1, keep_h[a])" if sh > 1 else
                f"rows = pypto.view({data}, [{size}, PH, QW], [0, 0, 0])")
        part = ("part = pypto.index_select(rows, 2, keep_w[c2])" if sw > 1 else
                f"part = pypto.view(rows, [{size}, PH, PW], [0, 0, 0])")
        lines = [f"{data} = pypto.view(xq, [{size}, QH, QW], [{off}, 0, 0])",
                 f"for a in {_ints(used[0])}:", f"    {rows}", f"    for c2 in {_ints(used[1])}:", f"        {part}",
                 f"        pypto.assemble(part, [{off}, (a * {sw} + c2) * PH, 0], out)"]
        return list(cst.parse_module("\n".join(lines) + "\n").body)

    loop_sizes, loop = block_loop(b, "PHASES", "n * c", "ceil_div(n * c, PREP_PLANES)", block)
    body = [*cst.parse_module("\n".join(setup) + "\n").body, *loop]
    spec = KernelSpec(
        factory=f"create_{op}_phase_kernel", kernel=f"{op}_phase_kernel", dims=dim_names(plan.nd), scalars=[],
        inputs=[TensorParam("xq", tuple(expr(v) for v in ("n * c", "QH", "QW")), b.ctx.dtype)],
        output=TensorParam("out", tuple(expr(v) for v in ("n * c", f"{sh * sw} * PH", "PW")), b.ctx.dtype),
        prelude=[*factory_prelude(unpack, []), *loop_sizes], body=body,
        doc=(f"The stride phases of {op}'s padded planes, each a plane of its own (CONV.flat-phases): per block "
             "of planes, each phase a tap reads gathered once along H and W and assembled at its plane."),
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [padded], out="phased")
    return "phased"


def _ints(values: list[int]) -> str:
    """A tuple literal the generated loop runs over: `(0, 2)`, `(1,)`."""
    return "(" + ", ".join(map(str, values)) + ("," if len(values) == 1 else "") + ")"
