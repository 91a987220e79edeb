"""The matmul family beyond the plain product: a tensor times a matrix (3-D, and 4-D written as
an einsum), triu / tril of a product (mask from cumsum(ones)), a product with a diagonal matrix
(a broadcast multiply) and a matrix-vector product (a sum over K, no cube). Each scaffolds
lint-clean with the pattern that fits, verifies against torch, and has a broken twin that fails."""

from __future__ import annotations

import pytest
from family import pipe
from support import CI_AND_REST, part

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

FORMS = {  # fixture -> (pattern id, text the kernel must contain)
    "matmul_3d_2d_odd.py": ("B", "return out.reshape(A.shape[0], A.shape[1], n)"),
    "einsum_4d_transposed.py": ("B", "pypto.matmul(A_chunk, W, pypto.DT_FP32, b_trans=True)"),
    "triu_matmul_odd_diag.py": ("tri_matmul", "pypto.where(pypto.ge(grid_chunk, zero_chunk), product_chunk, 0.0)"),
    "tril_matmul_rect.py": ("tri_matmul", "pypto.where(pypto.le(grid_chunk, zero_chunk), product_chunk, 0.0)"),
    "diag_matmul_rows_odd.py": ("diag", "out.move(B * a)"),
    "matmul_diag_cols.py": ("diag", "out.move(A * s)"),
    "matvec_long_k.py": ("matvec", "pypto.sum(A_chunk * x, 1, keepdim=True)"),
    # q @ k^T over (batch, heads): one batch of both, and the kernel's k is not the size k
    "heads_scores.py": ("B", "b_bi = pypto.view(k_in, [n, k], [bi * n, 0])"),
}



@pytest.mark.parametrize("name", sorted(FORMS))
def test_matmul_forms_scaffold_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    pattern, text = FORMS[name]
    assert k.supported, k.reason
    assert p.pattern().id == pattern
    assert text in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_no_cube_where_none_is_needed(kb):
    for name in ("diag_matmul_rows_odd.py", "matvec_long_k.py"):
        p = pipe(kb, name)
        assert p.kernel_plan().cube is None
        assert "set_cube_tile_shapes" not in kernel_of(p).source and "pypto.matmul" not in kernel_of(p).source


def test_the_triangular_mask_is_never_an_arange_compare_or_triu(kb):
    src = kernel_of(pipe(kb, "triu_matmul_odd_diag.py")).source
    assert "pypto.cumsum(ones, 1) - pypto.cumsum(ones, 0)" in src
    assert "arange" not in src and "pypto.triu" not in src and "pypto.tril" not in src


def test_the_mask_grid_spans_one_chunk_and_each_chunk_reads_it_from_m_minus_its_offset(kb):
    """TRI.mask-offset-grid: G[i, c] = c - i - (m + diagonal) over BASIC_BATCH rows and m + n
    columns; at column m - off it holds the chunk's col - row - diagonal."""
    src = kernel_of(pipe(kb, "triu_matmul_odd_diag.py", loop_count=4)).source
    mask_kernel = src[src.index("def create_triu_mask_kernel"):src.index("class ModelNew")]
    assert "ones = pypto.ones([BASIC_BATCH, m + n], dtype=pypto.DT_FP32)" in mask_kernel
    assert "offset_grid = pypto.cumsum(ones, 1) - pypto.cumsum(ones, 0) - (m + 1)" in mask_kernel
    assert "grid_chunk = pypto.view(offset_grid, [BASIC_BATCH, n], [0, m - off])" in mask_kernel
    assert "grid_tail = pypto.view(offset_grid, [TAIL, n], [0, m - TAIL_OFFSET])" in mask_kernel
    assert "pypto.cumsum" not in src[:src.index("def create_triu_mask_kernel")]
    # without a loop the grid is the output's own (m, n), read at [0, 0]
    whole = kernel_of(pipe(kb, "triu_matmul_odd_diag.py", loop_count=1)).source
    assert "ones = pypto.ones([m, n], dtype=pypto.DT_FP32)" in whole
    assert "offset_grid = pypto.cumsum(ones, 1) - pypto.cumsum(ones, 0) - 1\n" in whole
    assert "grid_all = pypto.view(offset_grid, [m, n], [0, 0])" in whole


def test_the_triangular_mask_is_a_second_kernel_over_the_products_row_chunks(kb):
    """TRI.mask-kernel: the matmul's loop only assembles the product; the mask kernel reads it back
    chunk by chunk (in one loop body, pass-verify loses three pass rows at KernelBench's tiles)."""
    p = pipe(kb, "triu_matmul_odd_diag.py")
    src = kernel_of(p).source
    product_kernel = src[src.index("def create_triu_product_kernel"):src.index("def create_triu_mask_kernel")]
    assert "pypto.matmul(" in product_kernel and "pypto.where(" not in product_kernel
    mask_kernel = src[src.index("def create_triu_mask_kernel"):src.index("class ModelNew")]
    assert "pypto.matmul(" not in mask_kernel and "product_chunk = pypto.view(product, " in mask_kernel
    forward = src[src.index("    def forward"):]
    assert forward.index("create_triu_product_kernel") < forward.index("create_triu_mask_kernel")


def test_the_einsum_is_read_as_a_matmul_with_b_transposed(kb):
    c = pipe(kb, "einsum_4d_transposed.py").contract()
    assert (c.family, c.op, c.op_args["transpose_b"], c.output_shape) == ("matmul", "matmul", True, (3, 5, 40, 80))


def test_a_matvec_loops_along_the_rows_of_a(kb):
    p = pipe(kb, "matvec_long_k.py")
    assert p.loop_choice() is not None and p.loop_choice().axis == 0
    assert p.dims().kernel_shapes == [(3000, 65536), (1, 65536)]
    assert "return out.reshape(-1)" in kernel_of(p).source  # torch.mv returns (m,)


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_matmul_forms_verify_against_torch(kb, which):
    """Each form as scaffolded, and the triangular mask over several chunks and a tail (in CI: that one)."""
    names = part(["triu looped", *FORMS], which)
    pipes = [pipe(kb, "triu_matmul_odd_diag.py", loop_count=4) if n == "triu looped" else pipe(kb, n) for n in names]
    reports = verify_many(pipes, jobs=1, cache=False)
    for name, r in zip(names, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        if name == "triu looped":
            assert r.design_loop_count == 4


@pytest.mark.sim
def test_broken_matmul_forms_fail(kb, broken_twins):
    """The mask on the wrong side of the diagonal; a diagonal 'product' that adds the vector; a
    matvec that doubles its sums; a looped mask whose chunks read the grid one column off; per-head
    scores that all read the first head's keys."""
    results = broken_twins([
        # at the test shapes (45, 45) the kernel runs no M loop: the mask is on the whole product
        (pipe(kb, "triu_matmul_odd_diag.py"), "pypto.ge(grid_all, zero_all)", "pypto.le(grid_all, zero_all)"),
        (pipe(kb, "diag_matmul_rows_odd.py"), "out.move(B * a)", "out.move(B + a)"),
        (pipe(kb, "matvec_long_k.py"), "pypto.sum(A_chunk * x, 1, keepdim=True)",
         "pypto.sum(A_chunk * x, 1, keepdim=True) * 2.0"),
        (pipe(kb, "triu_matmul_odd_diag.py", loop_count=4), "[0, m - off]", "[0, m - off - 1]"),
        (pipe(kb, "heads_scores.py"), "[bi * n, 0]", "[0, 0]"),  # every head scored against the first's keys
    ])
    for r in results:
        assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
