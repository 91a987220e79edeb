"""A kernel its own test expects the compiler to refuse (called only under `pytest.raises`) keeps
its findings, at info level with the expecting line named; any other use of it keeps them errors.

PyPTO's error-path tests (`python/tests/ut/interface/test_error.py` and its siblings at
hicann/pypto 883e7dfb) were 10 of the 11 errors the lint reported on PyPTO's own code."""

from __future__ import annotations

import textwrap

from pypto_tui.lint.engine import lint_source
from pypto_tui.lint.expected import expected_refusals

KERNEL = '''
import pytest
import torch
import unittest
import pypto


@pypto.frontend.jit()
def rebinds_out(a: pypto.Tensor([32, 32], pypto.DT_FP32), b: pypto.Tensor([32, 32], pypto.DT_FP32),
                c: pypto.Tensor([32, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 32)
    c = a + b
'''


def _errors(source: str) -> list:
    return [f for f in lint_source(textwrap.dedent(source), pypto="0.2.0") if f.rule == "V020.out-rebind"]


def test_the_refusal_a_test_expects_is_info_naming_its_with() -> None:
    source = KERNEL + '''

def test_rebinding_is_refused():
    a = torch.rand(32, 32)
    with pytest.raises(Exception, match="reassigned"):
        rebinds_out(a, a, torch.zeros(32, 32))
'''
    (found,) = _errors(source)
    assert found.level == "info"
    line = source.splitlines().index('    with pytest.raises(Exception, match="reassigned"):') + 1
    assert f"the `with` at line {line}" in found.message and "rebinds_out" in found.message


def test_unittest_assert_raises_expects_it_too() -> None:
    source = KERNEL + '''

class Refusals(unittest.TestCase):
    def test_it(self):
        with self.assertRaises(Exception):
            rebinds_out(1, 2, 3)
'''
    assert [f.level for f in _errors(source)] == ["info"]


def test_a_call_outside_the_block_keeps_the_error() -> None:
    source = KERNEL + '''

def test_both():
    with pytest.raises(Exception):
        rebinds_out(1, 2, 3)
    rebinds_out(1, 2, 3)
'''
    assert [f.level for f in _errors(source)] == ["error"]


def test_a_kernel_handed_on_or_never_called_keeps_the_error() -> None:
    handed = KERNEL + '''

def test_handed():
    with pytest.raises(Exception):
        run(rebinds_out)
'''
    assert [f.level for f in _errors(handed)] == ["error"]
    assert [f.level for f in _errors(KERNEL)] == ["error"]


def test_a_raises_block_elsewhere_covers_nothing() -> None:
    source = KERNEL + '''

def test_other():
    with pytest.raises(ValueError):
        int("x")
    rebinds_out(1, 2, 3)
'''
    assert [f.level for f in _errors(source)] == ["error"]
    assert expected_refusals(textwrap.dedent(source)) == []
