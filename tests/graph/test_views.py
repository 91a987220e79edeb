"""Elementwise expressions over views of the inputs (`A.unsqueeze(1) * B`, `x[:, None]`, view +
expand) and KernelBench's current exclusive scan (`cat((zero slice, cumsum(x.narrow(...))))`):
read by the contract, referenced in numpy, laid out by the dimension step, scaffolded lint-clean,
and (compiler-backed) verified against torch with a broken twin caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.reference import reference
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.dims import plan_dims
from pypto_tui.kb import get_kb
from pypto_tui.lint.engine import lint_source

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"


@pytest.fixture(scope="module")
def kb():
    return get_kb()


def pipe(kb, name: str) -> Pipeline:
    return Pipeline(kb, Design(task=str(EXTRA / name)))


def test_an_unsqueezed_vector_times_a_matrix_is_a_broadcast_expression():
    c = extract_contract(EXTRA / "unsqueeze_scale_loop.py")
    assert (c.family, c.op, c.supported) == ("elementwise", "expression", True), c.reason
    assert c.output_shape == (512, 1024)
    (leaf,) = c.op_args["views"]
    assert leaf["input"] == "A" and leaf["shape"] == (512, 1)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(512), rng.standard_normal((512, 1024))
    assert np.array_equal(reference(c, [a, b]), a[:, None] * b)


def test_views_none_index_and_expand_read_and_reference():
    c = extract_contract(EXTRA / "broadcast_views.py")
    assert c.supported and c.output_shape == (96, 160), c.reason
    rng = np.random.default_rng(1)
    rows, m, cols = rng.standard_normal(96), rng.standard_normal((96, 160)), rng.standard_normal(160)
    want = rows[:, None] * m + cols[None, :] - m * 0.5
    assert np.allclose(reference(c, [rows, m, cols]), want, rtol=0, atol=1e-12)


def test_the_broadcast_layout_keeps_each_operand_whole_or_of_size_one(kb):
    d = plan_dims(extract_contract(EXTRA / "broadcast_views.py"), kb)
    assert d.kernel_shapes == [(96, 160)] and d.axis_map == [[0], [1]]
    assert d.broadcast is not None
    assert d.broadcast["operands"] == {"rows_v": [96, 1], "cols_v": [1, 160], "m": [96, 160]}
    # every operand whole: the plain 1-D flattening
    flat = plan_dims(extract_contract(EXTRA / "expression_two_inputs.py"), kb)
    assert flat.broadcast is None and flat.kernel_rank == 1


def test_the_broadcast_kernel_widens_one_axis_per_expand_clone_and_lints_clean(kb):
    p = pipe(kb, "broadcast_views.py")
    k = kernel_of(p)
    assert k.supported and k.pattern == "A", k.reason
    assert "rows_v_all_w1 = pypto.expand_clone(rows_v, [k0, k1])" in k.source
    assert "cols_v_all_w0 = pypto.expand_clone(cols_v, [k0, k1])" in k.source
    # forward takes the views on the tensors' own sizes, so the module runs at any shape
    assert "cols_v = cols.reshape(1, cols.shape[0])" in k.source
    assert "rows_v = rows.unsqueeze(1)" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_a_view_that_would_copy_in_forward_is_refused_with_the_reason(kb, tmp_path):
    task = tmp_path / "narrowed.py"
    task.write_text((EXTRA / "unsqueeze_scale_loop.py").read_text().replace(
        "return A.unsqueeze(1) * B", "return A.unsqueeze(1) * B.narrow(1, 0, 1000)"))
    c = extract_contract(task)
    assert c.supported and c.output_shape == (512, 1000), c.reason
    k = kernel_of(Pipeline(kb, Design(task=str(task))))
    assert not k.supported and "narrow" in k.reason


def test_kernelbenchs_current_exclusive_scan_keeps_the_input_shape(kb):
    c = extract_contract(EXTRA / "cumsum_exclusive_narrow.py")
    assert (c.family, c.op, c.supported) == ("scan", "exclusive_cumsum", True), c.reason
    assert c.output_shape == (48, 320) and c.op_args["narrow"] is True
    x = np.random.default_rng(2).random((48, 320))
    want = np.concatenate([np.zeros((48, 1)), np.cumsum(x[:, :-1], axis=1)], axis=1)
    assert np.allclose(reference(c, [x]), want, rtol=0, atol=1e-12)
    src = kernel_of(pipe(kb, "cumsum_exclusive_narrow.py")).source
    assert "scanned = pypto.view(x, [d0, d1 - 1], [0, 0])" in src
    assert "out = torch.empty((d0, d1), dtype=torch.float32, device=x.device)" in src


def test_the_exclusive_scan_needs_the_whole_narrow_form():
    """A narrow that keeps all but the last two positions is not the exclusive scan."""
    src = (EXTRA / "cumsum_exclusive_narrow.py").read_text().replace("x.size(self.dim) - 1", "x.size(self.dim) - 2")
    c = extract_contract(src)
    assert c.op != "exclusive_cumsum" or not c.supported


@pytest.mark.sim
def test_views_and_the_narrowed_exclusive_scan_verify_and_a_broken_twin_fails(kb):
    from dataclasses import replace

    from pypto_tui.sim.runner import run_many
    from pypto_tui.sim.verification import prepare_verify, verify_many

    names = ["broadcast_views.py", "cumsum_exclusive_narrow.py"]
    for name, r in zip(names, verify_many([pipe(kb, n) for n in names], jobs=1, cache=False), strict=True):
        assert r.supported and r.passed, (name, r.reason)
    job = prepare_verify(pipe(kb, "broadcast_views.py")).job
    assert job is not None
    old = "pypto.expand_clone(cols_v, [k0, k1])"
    assert old in job.kernel_source
    broken = replace(job, kernel_source=job.kernel_source.replace(old, "pypto.expand_clone(cols_v * 0.0, [k0, k1])"))
    (r,) = run_many([broken], jobs=1, cache=False)
    assert not r.passed
