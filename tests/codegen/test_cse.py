"""Repeated tensor subexpressions of a kernel statement are computed once (codegen/cse.py).

Each test runs the statement before and after the rewrite on numpy stand-ins for the pypto ops it
uses, so the rewrite is checked to mean the same values, not only to look shorter."""

from __future__ import annotations

import types

import libcst as cst
import numpy as np

from pypto_tui.codegen.activations import render
from pypto_tui.codegen.cse import share_repeats
from pypto_tui.codegen.expr import Ex, code


def _fake_pypto() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        sigmoid=lambda x: 1 / (1 + np.exp(-x)), maximum=np.maximum, minimum=np.minimum, log1p=np.log1p,
        exp=np.exp, abs=np.abs, reciprocal=lambda x: 1 / x, where=np.where, ge=lambda a, b: a >= b)


class _Out:
    def move(self, value: np.ndarray) -> None:
        self.value = value


def _run(body: list[cst.BaseStatement], **tensors: np.ndarray) -> np.ndarray:
    out = _Out()
    exec(cst.Module(body=body).code, {"pypto": _fake_pypto(), "out": out, **tensors})
    return out.value


def _move(value: Ex) -> list[cst.BaseStatement]:
    return list(cst.parse_module(f"out.move({code(value)})\n").body)


def test_mish_of_mish_computes_its_input_and_the_inner_mish_once() -> None:
    x, b = Ex.name("x"), Ex.name("b")
    body = _move(render("mish", [render("mish", [x + b], {})], {}))
    before = cst.Module(body=body).code
    after = share_repeats(body, ["x", "b", "out"])
    text = cst.Module(body=after).code
    # one sigmoid per mish instead of 1 + 3 (the inner mish written three times)
    assert before.count("pypto.sigmoid(") == 4 and text.count("pypto.sigmoid(") == 2
    assert text.count("x + b") == 1
    rng = np.random.default_rng(0)
    xs, bs = rng.standard_normal((4, 8)), rng.standard_normal((1, 8))
    np.testing.assert_allclose(_run(after, x=xs, b=bs), _run(body, x=xs, b=bs), rtol=0, atol=0)


def test_exact_gelu_shares_its_erf_terms_and_keeps_its_values() -> None:
    x = Ex.name("x")
    body = _move(render("gelu", [x * 2.0], {}))
    after = share_repeats(body, ["x", "out"])
    text = cst.Module(body=after).code
    assert text.count("pypto.reciprocal(") == 1 and text.count("pypto.exp(") == 1
    xs = np.linspace(-4, 4, 33)
    np.testing.assert_allclose(_run(after, x=xs), _run(body, x=xs), rtol=0, atol=0)


def test_offsets_and_scalars_stay_where_they_are_written() -> None:
    src = "pypto.assemble(x * 2.0 + x * 2.0, [bi * T, bi * T], out)\n"
    after = share_repeats(list(cst.parse_module(src).body), ["x", "out"])
    text = cst.Module(body=after).code
    assert text.splitlines() == ["shared0 = x * 2.0", "pypto.assemble(shared0 + shared0, [bi * T, bi * T], out)"]


def test_a_statement_without_repeats_is_unchanged_and_names_never_clash() -> None:
    src = "shared0 = pypto.exp(x)\nout.move(shared0 * 2.0 + x)\n"
    body = list(cst.parse_module(src).body)
    assert cst.Module(body=share_repeats(body, ["x", "out"])).code == src
    src2 = "shared0 = pypto.exp(x)\nout.move(pypto.abs(shared0) + pypto.abs(shared0))\n"
    text = cst.Module(body=share_repeats(list(cst.parse_module(src2).body), ["x", "out"])).code
    assert "shared1 = pypto.abs(shared0)\nout.move(shared1 + shared1)" in text


def test_inside_a_loop_the_shared_value_is_bound_in_the_loop_body_before_its_statement() -> None:
    src = ("for bi in pypto.loop(0, N, 1, name=\"L\", idx_name=\"bi\"):\n"
           "    # write the tile\n"
           "    v = pypto.view(x, [T], [bi * T])\n"
           "    out.move(pypto.exp(v) + pypto.exp(v))\n")
    text = cst.Module(body=share_repeats(list(cst.parse_module(src).body), ["x", "out"])).code
    assert text.splitlines()[1:] == ["    # write the tile", "    v = pypto.view(x, [T], [bi * T])",
                                     "    shared0 = pypto.exp(v)", "    out.move(shared0 + shared0)"]
