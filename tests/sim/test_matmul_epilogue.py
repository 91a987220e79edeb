"""A GEMM's elementwise epilogue inside the matmul kernel (pattern B, op_args['epilogue']): with a fusion
rule whose `epilogue` lists the kinds, the partition puts them in the matmul's kernel, the group's
contract is a matmul with the epilogue as data, and pattern B writes it on each output tile. The
bundled pack's FUSE.matmul-separate lists none yet (its `measured` says why), so the tests give the
rule themselves."""

from __future__ import annotations

from dataclasses import replace

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.kb import FusionRule
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

FIXTURE = "gemm_scale_leaky_relu.py"


@pytest.fixture
def kb_epilogue(kb):
    rules = tuple(FusionRule(r.id, r.anchor, r.prologue, ("add", "mul", "leaky_relu"), r.measured)
                  if r.anchor == "matmul" else r for r in kb.fusion)
    return replace(kb, fusion=rules)


def test_the_epilogue_is_written_in_the_matmul_kernel(kb, kb_epilogue):
    p = pipe(kb_epilogue, FIXTURE)
    k = kernel_of(p)
    assert k.supported, k.reason
    assert k.source.count("@pypto.frontend.jit") == 1 and "1 kernel for" in k.source
    assert "gemm_bias_chunk = pypto.expand_clone(gemm_bias, [BASIC_BATCH, n])" in k.source
    assert "mm_chunk = pypto.matmul(x_chunk, gemm_weight, pypto.DT_FP32, b_trans=True)" in k.source
    assert "shared0 = (mm_chunk + gemm_bias_chunk) * 2.0" in k.source
    assert "pypto.set_vec_tile_shapes(*TILE_SHAPE_K0)" in k.source
    # the epilogue's vec tile spans one cube N tile (TileRole.cube_n: wider ones lost pass-verify rows)
    assert "CUBE_N_K0 = [128, 128]" in k.source and "TILE_SHAPE_K0 = (64, 128)" in k.source
    assert lint_source(k.source, "k.py", kb=kb_epilogue, task_signature=p.contract().signature) == []
    assert kernel_of(pipe(kb, FIXTURE)).source.count("@pypto.frontend.jit") == 2  # the bundled rule: two kernels


@pytest.mark.sim
def test_the_epilogue_verifies_and_a_broken_twin_fails(kb_epilogue, broken_twins):
    (r,) = verify_many([pipe(kb_epilogue, FIXTURE)], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason
    assert r.design_kept and not r.missing_passes, r.notes
    (bad,) = broken_twins([(pipe(kb_epilogue, FIXTURE), "(mm_chunk + gemm_bias_chunk) * 2.0",
                            "(mm_chunk - gemm_bias_chunk) * 2.0")])
    assert bad.status == J.MISMATCH and bad.passed is False, (bad.status, bad.error)
