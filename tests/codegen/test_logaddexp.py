"""torch.logaddexp, an elementwise operator added as one registry entry: the contract reads it (named,
commutative, its formula), the reference computes it, and pattern A writes its overflow-safe form over
broadcasting operands."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np

from pypto_tui.codegen import activations
from pypto_tui.codegen.expr import Ex, code
from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.reference import reference
from pypto_tui.lint.engine import lint_source

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "logaddexp_broadcast.py"


def test_the_contract_reads_logaddexp_as_a_named_commutative_op():
    c = extract_contract(TASK)
    assert (c.family, c.op, c.supported) == ("elementwise", "logaddexp", True), c.reason
    assert c.formula == "out = log(exp(a) + exp(b))  (elementwise over (64, 1000))"
    assert c.asymmetric is False and c.output_shape == (64, 1000)


def test_the_reference_is_logaddexp_with_broadcasting():
    c = extract_contract(TASK)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 1000)) * 40, rng.standard_normal(1000) * 40
    np.testing.assert_allclose(reference(c, [a, b]), np.logaddexp(a, b[None, :]), rtol=1e-12)


def test_the_kernel_form_does_not_overflow_where_exp_does():
    """exp(120) is inf in fp32; max(a, b) + log1p(exp(-|a - b|)) stays finite and exact."""
    fake = types.SimpleNamespace(maximum=np.maximum, log1p=np.log1p, exp=np.exp, abs=np.abs)
    a = np.array([120.0, -120.0, 0.0, 3.0, -50.0], dtype=np.float32)
    b = np.array([119.0, 80.0, 0.0, -3.0, -50.0], dtype=np.float32)
    text = code(activations.render("logaddexp", [Ex.name("a"), Ex.name("b")], {}))
    with np.errstate(over="raise"):
        got = eval(text, {"pypto": fake, "a": a, "b": b})  # our own generated text
    np.testing.assert_allclose(got, np.logaddexp(a.astype(np.float64), b), rtol=1e-6)


def test_pattern_a_writes_it_over_the_broadcast_row_and_lints_clean(generated, kb):
    g = generated(str(TASK))
    assert g.supported and g.pattern == "A", g.reason
    assert "b_all_w0 = pypto.expand_clone(b, [k0, k1])" in g.source
    # ops.toml: four tile-sized buffers live at once (measured), so the tile steps down to fit them
    assert "TILE_SHAPE = (32, 256)" in g.source and "this op chain holds 4 tile-sized buffers" in g.source
    assert ("out.move(pypto.maximum(a, b_all_w0) + pypto.log1p(pypto.exp(pypto.abs(a - b_all_w0) * (-1.0))))"
            in g.source)
    assert lint_source(g.source, "k.py", kb=kb, task_signature=extract_contract(TASK).signature) == []
