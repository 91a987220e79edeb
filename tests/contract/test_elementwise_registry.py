"""The contract reads the elementwise operators from the registry alone: module types and their
constructors, call signatures and defaults, formulas, which calls an expression may use and which of
them the kernel can write, and whether swapping two operands matters."""

from __future__ import annotations

import pytest
from support import contract

from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, MODULE_SIGS, bind_module
from pypto_tui.ops.registry import REGISTRY


def test_every_elementwise_module_binds_by_its_entrys_signature():
    for k in REGISTRY.values():
        if not k.is_elementwise:
            continue
        for m in k.modules:
            assert MODULE_SIGS[m] == k.module_signature, m
    params, problems = bind_module("Softshrink", [0.3], {})
    assert params == {"lambd": 0.3} and problems == []


def test_unary_call_signatures_and_defaults_come_from_the_entries():
    assert FUNC_SIGS["hardtanh"] == ("input", "min_val", "max_val", "inplace")
    assert FUNC_DEFAULTS["softplus"] == {"beta": 1.0, "threshold": 20.0}
    c = contract("F.hardtanh(x, -0.5, 0.25, True)")  # positional, with the inplace flag
    assert (c.family, c.op) == ("elementwise", "hardtanh")
    assert c.op_args["min_val"] == -0.5 and c.op_args["max_val"] == 0.25 and "inplace" not in c.op_args


def test_an_activation_module_the_old_tables_did_not_list_is_read_by_its_entry():
    c = contract("self.act(x)", body="\n        self.act = nn.Softshrink(0.3)")
    assert (c.family, c.op, c.supported) == ("elementwise", "softshrink", True), c.reason
    assert c.op_args["lambd"] == 0.3
    assert c.formula.startswith("out = x - 0.3 if x > 0.3 else x + 0.3 if x < -0.3 else 0")


def test_the_formula_is_the_entrys_text_with_the_calls_values():
    assert contract("F.leaky_relu(x, 0.2)").formula == "out = x if x > 0 else 0.2 * x  (elementwise over (16, 256))"
    assert contract("x * 3.0").formula == "out = x * 3  (elementwise over (16, 256))"
    assert contract("2.5 - x").formula == "out = 2.5 - x  (elementwise over (16, 256))"
    assert contract("torch.minimum(a, b)", args="a, b").formula == "out = minimum(a, b)  (elementwise over (16, 256))"


@pytest.mark.parametrize(("expr", "asymmetric"), [
    ("torch.maximum(a, b)", False), ("a * b", False), ("a - b", True), ("a / b", True), ("a + b", False)])
def test_operand_order_matters_exactly_when_the_kinds_reference_does_not_commute(expr, asymmetric):
    assert contract(expr, args="a, b").asymmetric is asymmetric


def test_an_expression_may_use_every_call_whose_entry_has_a_kernel_form():
    assert contract("torch.sin(x) * 2.0 + torch.floor(x)").supported  # renders the old list left out
    c = contract("torch.erf(x) * 2.0")  # no kernel form: read, then refused with the calls named
    assert c.family == "elementwise" and not c.supported and "erf" in c.reason
