"""The scan family (the worked example of CONTRIBUTING.md, with its variants): scaffolded,
lint-clean, verified against torch through the real compiler, and broken twins caught."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

SCANS = {  # fixture -> (op, the call the kernel must make)
    "cumsum_dim.py": ("cumsum", "pypto.cumsum(x, 1)"),
    "cumsum_dim0.py": ("cumsum", "pypto.cumsum(x, 0)"),
    "cumsum_reverse_last.py": ("reverse_cumsum", "pypto.sum(x, 2, keepdim=True) - pypto.cumsum(x, 2) + x"),
    "cumsum_exclusive_dim0.py": ("exclusive_cumsum", "pypto.cumsum(scanned, 0)"),
    "cumsum_masked_big.py": ("masked_cumsum", "pypto.cast(keep_chunk, pypto.DT_FP32)"),
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
    assert "x_chunk = pypto.view(x, [d0, BASIC_BATCH], [0, off])" in src
    assert "pypto.assemble(pypto.cumsum(x_chunk, 0), [0, off], out)" in src


def test_the_exclusive_scan_keeps_kernelbenchs_shapes(kb):
    """cat((zero slice, x), d)[:-1] trims axis 0, whatever d is: on d = 1 the output is
    (rows - 1, cols + 1), and forward allocates exactly that."""
    p = pipe(kb, "cumsum_exclusive_dim0.py", contract_edits={"op_args.dim": 1})
    assert p.contract().output_shape == (95, 201)
    src = kernel_of(p).source
    assert "out = torch.empty((d0 - 1, d1 + 1), dtype=torch.float32, device=x.device)" in src
    assert "pypto.assemble(pypto.cumsum(scanned, 1), [0, 1], out)" in src


@pytest.mark.sim
def test_scans_verify_against_torch(kb):
    reports = verify_many([pipe(kb, n) for n in SCANS], jobs=1, cache=False)
    for name, r in zip(SCANS, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err is not None and r.max_abs_err < 1e-4, (name, r.max_abs_err)
    assert reports[list(SCANS).index("cumsum_masked_big.py")].loop_count is not None  # the loop was verified


@pytest.mark.sim
def test_broken_scans_fail(kb, broken_twins):
    """A scan on the wrong axis, and a cumprod that forgets the sign of the negative elements."""
    results = broken_twins([
        (pipe(kb, "cumsum_dim.py"), "pypto.cumsum(x, 1)", "pypto.cumsum(x, 0)"),
        (pipe(kb, "cumprod_zeros_dim0.py"), "magnitude * sign", "magnitude"),
    ])
    for r in results:
        assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
