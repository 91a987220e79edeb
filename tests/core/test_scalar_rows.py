"""LOSS.scalar-rows: operands of one shape summed to one value are laid out as (rows, trailing axes), a row
holding at least dims.ROW_ELEMENTS, so the kernel sums the rows at once and then the column of row sums."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline

FROBENIUS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x / torch.norm(x, p='fro')


def get_inputs():
    return [torch.randn{shape}]


def get_init_inputs():
    return []
"""

MSE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn{shape}, torch.randn{shape}]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(("source", "shape", "strategy", "kernel"), [
    (FROBENIUS, (56, 16, 32, 32), "global-reduce-rows", (896, 1024)),   # rows of the last two axes
    (FROBENIUS, (4, 8, 16), "global-reduce-1d", (512,)),                 # smaller than one row: flat
    (MSE, (1024, 1024), "simple-loss-rows", (1024, 1024)),
    (MSE, (8, 30, 64), "simple-loss-rows", (8, 1920)),
    (MSE, (4096, 10), "simple-loss-1d", (40960,)),                        # no 1024-wide row to keep
    (MSE, (65536,), "simple-loss-1d", (65536,)),                          # rank 1: no rows
])
def test_a_sum_to_one_value_takes_rows_of_at_least_1024(kb, tmp_path: Path, source, shape, strategy, kernel):
    task = tmp_path / "task.py"
    task.write_text(source.format(shape=shape))
    dims = Pipeline(kb, Design(task=str(task))).dims()
    assert dims.strategy == strategy
    assert dims.kernel_shapes[0] == kernel


def test_forward_lays_the_operands_out_as_the_plan_does(kb, tmp_path: Path) -> None:
    """A row of (8, 30, 64) is its last two axes, (8, 1920): forward must reshape to that, not to rows of the
    last axis (240, 64), or the kernel runs a layout its tile was not planned for."""
    from pypto_tui.design import kernel_of

    task = tmp_path / "task.py"
    task.write_text(MSE.format(shape=(8, 30, 64)))
    p = Pipeline(kb, Design(task=str(task)))
    assert p.dims().kernel_shapes[0] == (8, 1920)
    src = kernel_of(p).source
    assert "predictions.reshape(predictions.shape[0], -1)" in src  # rows of the last two axes
    assert "TILE_SHAPE = (8, 1920)" in src
