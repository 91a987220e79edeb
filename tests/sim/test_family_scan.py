"""The scan family (the worked example of CONTRIBUTING.md, with its variants): scaffolded,
lint-clean, verified against torch through the real compiler, and broken twins caught."""

from __future__ import annotations

import pytest
from family import pipe
from support import CI_AND_REST, part

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import Criterion, verify_many

SCANS = {  # fixture -> (op, the call the kernel must make); the first five scan axes span several tiles
    "cumsum_dim.py": ("cumsum", "pypto.cumsum(x_scan * 1.0, 1)"),
    "cumsum_dim0.py": ("cumsum", "pypto.cumsum(x_scan * 1.0, 0)"),
    "cumsum_reverse_last.py": ("reverse_cumsum",
                               "pypto.sum(x_scan, 2, keepdim=True) - pypto.cumsum(x_scan, 2) + x_scan"),
    "cumsum_exclusive_dim0.py": ("exclusive_cumsum", "pypto.assemble(scan_part - x_scan, "),
    "cumsum_masked_big.py": ("masked_cumsum", "pypto.cast(keep_scan, pypto.DT_FP32)"),
    "cumprod_zeros_dim0.py": ("cumprod", "pypto.exp(pypto.cumsum(pypto.log(pypto.abs(x)), 0))"),
}



@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_scaffold_lint_clean_with_the_scan_axis(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    op, call = SCANS[name]
    assert k.supported and k.pattern == "scan", k.reason
    assert p.contract().op == op
    assert call in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_cumsum_tile_fits_its_16_row_transpose_buffers(kb):
    """ops.toml: cumsum holds 3 buffers of >= 16 rows; the tile step steps (4, 4000) down to fit."""
    from pypto_tui.tiles import held_bytes

    main = pipe(kb, "cumsum_dim.py").tile_choices()[0]
    assert main.source == "stepped-down"
    assert held_bytes(kb, main.tile, "fp32", 3, 16) <= kb.chip.ub_bytes
    assert held_bytes(kb, main.requested, "fp32", 3, 16) > kb.chip.ub_bytes


def test_a_large_scan_loops_along_an_axis_it_does_not_scan(kb):
    masked = pipe(kb, "cumsum_masked_big.py")
    assert masked.loop_choice() is not None and masked.loop_choice().axis == 0  # scans axis 1
    p = pipe(kb, "cumsum_dim0.py", contract_edits={"inputs.x.shape": [2048, 40960]})
    loop = p.loop_choice()
    assert loop is not None and loop.axis == 1  # a scan down axis 0 loops across the columns
    src = kernel_of(p).source
    assert "x_scan = pypto.view(x, [scan_w, BASIC_BATCH], [scan_c * TILE_SHAPE[0], off])" in src
    assert "pypto.assemble(scan_part, [scan_c * TILE_SHAPE[0], off], out)" in src


def test_a_scan_across_tiles_carries_the_last_position_into_the_next_chunk(kb):
    """SCAN.chunked-carry: pypto 0.2.0's pass-verify leaves Pass_36 without a row for a cumsum across
    tiles, so each tile-wide chunk is scanned alone and the previous chunk's last position added; a
    reverse scan runs backwards from the end and carries a chunk's first position."""
    src = kernel_of(pipe(kb, "cumsum_dim.py")).source
    assert "for scan_c in range(ceil_div(d1, TILE_SHAPE[1])):" in src
    assert "scan_part = pypto.add(scan_part, pypto.expand_clone(scan_carry, " in src
    assert "scan_carry = pypto.view(scan_part, " in src and "[0, scan_w - 1])" in src
    rev = kernel_of(pipe(kb, "cumsum_reverse_last.py")).source
    assert "for scan_c in reversed(range(ceil_div(d2, TILE_SHAPE[2]))):" in rev
    assert "[0, 0, 0])" in rev
    one_tile = kernel_of(pipe(kb, "cumprod_zeros_dim0.py")).source  # its tile covers the scanned axis
    assert "scan_carry" not in one_tile


def test_a_scan_carried_across_many_chunks_gets_a_tile_the_compiler_builds(kb):
    """SCAN.carry-tile: past 4 carried chunks pypto 0.2.0 builds only tiles of at most 8192
    elements. KernelBench 89's (32768, 32768) got (16, 1024), 32 chunks: it never compiled."""
    from pypto_tui.tiles import check_carried_chunks

    p = pipe(kb, "cumsum_dim.py", contract_edits={"inputs.x.shape": [32768, 32768]})
    main = p.tile_choices()[0]
    assert main.tile[1] == 1024 and main.evaluation.prod <= 8192, main.tile  # rows halved, not the width
    assert f"cut from (16, 1024) to {main.tile}" in main.note and "SCAN.carry-tile" in main.note
    assert f"TILE_SHAPE = ({main.tile[0]}, 1024)" in kernel_of(p).source
    user = pipe(kb, "cumsum_dim.py", contract_edits={"inputs.x.shape": [32, 5120]}, tile=[16, 1024])
    finding = next(f for f in user.tile_choices()[0].findings if f.rule == "SCAN.carry-tile")
    assert finding.level == "error" and "5 chunks" in finding.message and "(8, 1024)" in finding.message
    assert check_carried_chunks(kb, (16, 1024), (32, 4096), 1, 4, 8192) is None  # 4 chunks build
    short = pipe(kb, "cumsum_dim.py", contract_edits={"inputs.x.shape": [64, 2048]})
    assert not any(f.rule == "SCAN.carry-tile" for f in short.tile_choices()[0].findings)
    down = pipe(kb, "cumsum_dim0.py", contract_edits={"inputs.x.shape": [512, 1024]}, tile=[16, 1024])
    assert not any(f.rule == "SCAN.carry-tile" for f in down.tile_choices()[0].findings)  # axis 0 builds


def test_the_exclusive_scan_keeps_kernelbenchs_shapes(kb):
    """cat((zero slice, x), d)[:-1] trims axis 0, whatever d is: on d = 1 the output is
    (rows - 1, cols + 1), and forward allocates exactly that."""
    p = pipe(kb, "cumsum_exclusive_dim0.py", contract_edits={"op_args.dim": 1})
    assert p.contract().output_shape == (95, 201)
    src = kernel_of(p).source
    assert "out = torch.empty((d0 - 1, d1 + 1), dtype=torch.float32, device=x.device)" in src
    assert "pypto.assemble(pypto.cumsum(scanned, 1), [0, 1], out)" in src


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_scans_verify_against_torch(kb, which):
    names = part(sorted(SCANS, key=lambda n: n != "cumsum_masked_big.py"), which)  # CI: the looped scan
    reports = verify_many([pipe(kb, n) for n in names], jobs=1, cache=False)
    for name, r in zip(names, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.design_kept and r.criterion == "kernelbench", (name, r.notes)
        if name == "cumsum_masked_big.py":
            assert r.loop_count is not None  # the loop was verified


@pytest.mark.sim
def test_broken_scans_fail(kb, broken_twins):
    """A scan on the wrong axis, and a cumprod that forgets the sign of the negative elements."""
    results = broken_twins([
        (pipe(kb, "cumsum_dim.py"), "pypto.cumsum(x_scan * 1.0, 1)", "pypto.cumsum(x_scan * 1.0, 0)"),
        (pipe(kb, "cumprod_zeros_dim0.py"), "magnitude * sign", "magnitude"),
    ])
    for r in results:
        assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)


@pytest.mark.sim
def test_a_carried_scan_past_four_chunks_compiles_only_with_the_smaller_tile(kb):
    """The measurement behind SCAN.carry-tile: a cumsum over 5120 columns in 1024-wide chunks (5)
    stops with F7A001 at tile (16, 1024) and verifies at every pass at (8, 1024). Verify's first size
    scans 3 chunks; its second, 5."""
    shape = {"inputs.x.shape": [32, 5120]}
    big, small = verify_many([pipe(kb, "cumsum_dim.py", contract_edits=shape, tile=[16, 1024], loop_count=2),
                              pipe(kb, "cumsum_dim.py", contract_edits=shape, tile=[8, 1024], loop_count=2)],
                             jobs=1, cache=False, criterion=Criterion(sizes=2))
    assert [t["tile_counts"][0]["tiles"] for t in small.size_trials] == [3, 5]
    assert small.supported and small.passed and small.design_kept, (small.reason, small.notes)
    assert big.passed is False and "F7A001" in big.reason, (big.status, big.reason)
