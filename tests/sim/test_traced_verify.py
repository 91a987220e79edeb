"""`verify` on models only the traced front end reads (nested modules: nn.Sequential of Linear layers, and
nn.Sequential of blocks whose BatchNorms are in eval mode with running statistics, weights and biases other
than their initial values): the generated ModelNew builds the task's own module tree, reaches each submodule
by its path, passes every compiler pass against the torch baseline, and a twin that reads another
submodule's parameter (or the running variance where the mean belongs) fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.torch]

TRACED = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced"
TWINS = {  # the bug planted in the module: (text, replacement)
    "sequential_mlp.py": ('self.get_submodule("net.0").bias', 'self.get_submodule("net.2").bias'),
    "nested_bn_eval.py": ("v_n4_running_mean, v_n4_running_var,", "v_n4_running_var, v_n4_running_mean,"),
}


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_nested_model_verifies_through_the_traced_front_end_and_its_twin_fails(kb, name):
    p = Pipeline(kb, Design(task=str(TRACED / name), front_end="traced"))
    prepared = prepare_verify(p)
    assert prepared.job is not None, prepared.report.reason
    assert prepared.report.kernels >= 4
    source = prepared.job.kernel_source
    assert "get_submodule" in source
    old, new = TWINS[name]
    assert old in source
    twin = replace(prepared.job, kernel_source=source.replace(old, new, 1))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed, ok.reason
    # a wrong answer, not a crash: the other layer's bias is off everywhere; the running mean read as the
    # variance is negative for some channels, whose rsqrt is NaN
    assert bad.supported and not bad.passed, bad.reason
    assert "elements outside atol" in bad.reason or "NaN positions differ" in bad.reason, bad.reason


def test_causal_attention_as_gpt_code_writes_it_verifies_and_a_copy_of_the_wrong_block_fails(kb):
    """q, k, v split off one projection (three copy kernels), heads by view and transpose (copy kernels),
    q @ k^T per head, the tril buffer's mask and the scale in one kernel with pypto.where, softmax, the
    heads' output back and the projection: every kernel runs, every pass row. The twin's q is a copy of
    k's block, so the scores are k k^T."""
    p = Pipeline(kb, Design(task=str(TRACED / "causal_heads.py"), front_end="traced"))
    prepared = prepare_verify(p)
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert prepared.report.kernels >= 15 and "pypto.eq(" in source and "0.0)" in source
    twin = replace(prepared.job, kernel_source=source.replace("col = 0 * inner", "col = 128 * inner", 1))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and not ok.missing_passes and ok.kernels_run == ok.kernels_defined, ok.reason
    assert bad.supported and not bad.passed and "elements outside atol" in bad.reason, bad.reason


@pytest.mark.exhaustive
def test_torchs_own_multihead_attention_verifies_and_a_query_read_from_the_keys_fails(kb):
    """nn.MultiheadAttention as people call it (`out, _ = attn(x, x, x)`): torch.export lowers it to the
    in-projection, q, k and v picked out of it (copy kernels), the heads' transposes, the scaled product,
    softmax and the values' product, and the out-projection; the twin's query copy reads the keys' block."""
    p = Pipeline(kb, Design(task=str(TRACED / "mha_self.py"), front_end="traced"))
    prepared = prepare_verify(p)
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert prepared.report.kernels >= 20 and source.count("col = 0 * inner") == 1
    twin = replace(prepared.job, kernel_source=source.replace("col = 0 * inner", "col = 1 * inner", 1))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=900, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and not ok.missing_passes and ok.kernels_run == ok.kernels_defined, ok.reason
    assert not bad.passed and "elements" in bad.reason, bad.reason
