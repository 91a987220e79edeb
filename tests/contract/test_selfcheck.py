"""P0.self-check: the baseline (run in a subprocess) against the contract's numpy reference.

With torch (marked `torch`): every supported fixture agrees, swaps show asymmetry, and a wrong
contract is caught. Without torch (simulated by a fake module that fails to import, and by the
availability check): the result says so and how to install it; nothing raises.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from pypto_tui.contract import CHECKS, selfcheck
from pypto_tui.contract.edits import apply_edits
from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.selfcheck import INSTALL_HINT, self_check

FIX = Path(__file__).resolve().parent.parent / "fixtures"
TASKS = sorted(p.stem for p in (FIX / "tasks").glob("*.py"))
EXTRA_SUPPORTED = ["neg_dim_log_softmax", "tuple_dims_sum", "layer_norm_kwonly", "group_norm_positional",
                   "gelu_fp16", "full_bf16_add", "hinge_randint", "kl_log_softmax_sum", "cosine_loss",
                   "expression_two_inputs", "matmul_3d_2d", "rms_rsqrt_last", "argmax_neg", "cumsum_dim"]
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_reference_agrees_with_baseline(task, contracts, kb):
    c = contracts[task]
    res = self_check(c, FIX / "tasks" / f"{task}.py", kb=kb)
    assert res.status == "agree", res.message
    assert res.max_abs_err is not None and res.baseline_shape == res.reference_shape
    assert all(len(s) == len(c.input(n).shape) for n, s in res.shapes.items())  # same rank, scaled
    if res.swapped:
        assert res.baseline_swap_changes is c.asymmetric
    assert [f.rule for f in res.findings] == ["P0.self-check"] and res.findings[0].level == "info"


@pytest.mark.parametrize("name", EXTRA_SUPPORTED)
@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_reference_agrees_on_hard_corners(name, kb):
    path = FIX / "tasks_extra" / f"{name}.py"
    res = self_check(extract_contract(path, kb), path, kb=kb)
    assert res.status == "agree", res.message


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_a_wrong_contract_is_an_error(contracts, kb):
    path = FIX / "tasks" / "kl_div_batchmean.py"
    wrong = apply_edits(contracts["kl_div_batchmean"], {"op_args.reduction": "mean"}, kb)  # /numel, not /B
    res = self_check(wrong, path, kb=kb)
    assert res.status == "disagree" and res.findings[0].level == "error"
    assert res.findings[0].rule == "P0.self-check"
    swapped = apply_edits(contracts["kl_div_batchmean"], {"op_args.operands": ["targets", "predictions"]}, kb)
    assert self_check(swapped, path, kb=kb).status == "disagree"


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_wrong_keepdim_and_wrong_symmetry_are_caught(contracts, kb):
    res = self_check(apply_edits(contracts["sum_over_channels"], {"reduction.keepdim": False}, kb),
                     FIX / "tasks" / "sum_over_channels.py", kb=kb)
    assert res.status == "disagree" and "output shapes differ" in res.message
    res = self_check(apply_edits(contracts["mse_loss"], {"asymmetric": True}, kb), FIX / "tasks" / "mse_loss.py", kb=kb)
    assert res.status == "disagree" and "does not change" in res.message


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
def test_timeout(tmp_path, kb):
    task = tmp_path / "slow.py"
    task.write_text((FIX / "tasks" / "elu.py").read_text() + "\nimport time\ntime.sleep(30)\n")
    res = self_check(extract_contract(task, kb), task, timeout=1, kb=kb)
    assert res.status == "timeout" and res.findings[0].level == "warn"


def _fake_torch(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "hide_torch"
    fake.mkdir()
    (fake / "torch.py").write_text("raise ImportError(\"No module named 'torch' (hidden by the test)\")\n")
    return {**os.environ, "PYTHONPATH": str(fake)}


def test_without_torch_in_the_subprocess(tmp_path, contracts, kb):
    res = self_check(contracts["elu"], FIX / "tasks" / "elu.py", env=_fake_torch(tmp_path), kb=kb)
    assert res.status == "no-torch" and res.torch_available is False
    assert res.install_hint == INSTALL_HINT and "pip install torch==2.13.0" in res.message
    assert [(f.rule, f.level) for f in res.findings] == [("P0.self-check", "warn")]


def test_without_torch_by_the_availability_check(monkeypatch, contracts, kb):
    monkeypatch.setattr(selfcheck, "torch_available", lambda python=None: False)
    monkeypatch.setattr(selfcheck.subprocess, "run", lambda *a, **k: pytest.fail("no subprocess without torch"))
    res = self_check(contracts["softmax_rows"], FIX / "tasks" / "softmax_rows.py", kb=kb)
    assert res.status == "no-torch" and "pip install torch==2.13.0" in res.message
    assert res.to_json_dict()["status"] == "no-torch"


def test_no_reference_and_no_file(kb, contracts):
    conv = extract_contract(FIX / "tasks_extra" / "conv2d_module.py", kb)
    assert self_check(conv, FIX / "tasks_extra" / "conv2d_module.py", kb=kb).status == "no-reference"
    c = extract_contract((FIX / "tasks" / "elu.py").read_text(), kb)  # from source: no path
    assert self_check(c, None, kb=kb).status == "error"


def test_recipes_rebuild_distributions(contracts):
    arrays, shapes, replayed = selfcheck.make_inputs(contracts["kl_div_batchmean"])
    assert replayed and shapes == {"predictions": (3, 4), "targets": (3, 4)}
    for a in arrays:
        assert (a > 0).all() and abs(a.sum(axis=-1) - 1).max() < 1e-5
    assert not (arrays[0] == arrays[1]).all()  # independent draws: a swap shows


def test_catalogue_names_resolve():
    """Every contract.* / dims.* name in rules.toml resolves to code that cites that rule."""
    from pypto_tui import dims
    from pypto_tui.kb import get_kb

    seen = set()
    for rule in get_kb().rules.values():
        for name in rule.enforced_by:
            table = CHECKS if name.startswith("contract.") else dims.CHECKS if name.startswith("dims.") else None
            if table is None:
                continue
            assert rule.id in table[name].__cites__, (name, rule.id)
            seen.add(name)
    assert seen == set(CHECKS) | set(dims.CHECKS)


RECIPE_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c, d):
        return a + b + c + d

def get_inputs():
    return [torch.randn(4, 64).clamp(min=-0.5, max=0.5), torch.randn(4, 64).cos(),
            1 - torch.rand(4, 64), torch.randint(1, 9, (4, 64)).sqrt()]

def get_init_inputs():
    return []
'''


def test_recipes_replay_through_the_registry_references(kb):
    """get_inputs()' chained calls replay with the kinds' own numpy references: a clamp's bounds by
    keyword, a call the old hand table lacked (cos), a scalar on the left (1 - x), and an integer
    input whose sqrt torch makes a float (the dtype follows the reference's promotion)."""
    c = extract_contract(RECIPE_TASK, kb)
    by_name = {i.name: i for i in c.tensor_inputs}
    assert by_name["d"].dtype == "fp32"  # sqrt of an int64 tensor is float in torch
    assert [list(s) for s in by_name["a"].recipe["post"]] == [["clamp", -0.5, 0.5]]
    arrays, _shapes, replayed = selfcheck.make_inputs(c)
    assert replayed
    a, b, c_, d = arrays
    assert a.min() >= -0.5 and a.max() <= 0.5 and (abs(a) == 0.5).any()
    assert b.min() >= -1 and b.max() <= 1 and b.mean() > 0.4  # cos of standard normals: mean e^-1/2
    assert (c_ > 0).all() and (c_ <= 1).all()  # 1 - U[0, 1): never 0
    assert d.min() >= 1 and d.max() <= 3 and not (d == d.round()).all()  # sqrt of 1..8
