"""A single-axis reduction or softmax over a rank-5 tensor (a 3-D conv's output in KernelBench
level 2: eight tasks stopped at 'no legal tile' for it): forward merges each run of kept axes so
the kernel is within the vec tile's 4 dims; rank 4 and below are laid out as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.kb import get_kb

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"
TASKS = EXTRA.parent / "tasks"


@pytest.mark.parametrize("task, kernel_shape, axis_map, result", [
    ("softmax_rank5_channels.py", (8, 16, 720), [[0], [1], [2, 3, 4]], "return out.reshape(x.shape)"),
    ("amin_rank5_depth.py", (32, 12, 160), [[0, 1], [2], [3, 4]],
     "return out.reshape(x.shape[0], x.shape[1], x.shape[3], x.shape[4])"),
])
def test_rank5_runs_of_kept_axes_merge(task, kernel_shape, axis_map, result):
    p = Pipeline(get_kb(), Design(task=str(EXTRA / task)))
    dims = p.dims()
    assert tuple(dims.kernel_shapes[0]) == kernel_shape and dims.axis_map == axis_map
    assert any("forward merges each run of kept axes" in f.message for f in dims.findings)
    k = kernel_of(p)
    assert k.supported, k.reason
    assert 'assert x.dim() == 5' in k.source and result in k.source


def test_rank4_keeps_its_layout():
    p = Pipeline(get_kb(), Design(task=str(TASKS / "softmax_rows.py")))
    assert p.dims().forward_reshape in ([None], [], None) or p.dims().forward_reshape[0] is None
