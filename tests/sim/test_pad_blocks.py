"""The pre kernel pads blocks of planes (CONV.pad-blocks): the input assembled at its offset in the padded
planes and each border one fill slab, a block of planes per iteration with a tail block; zero insertion
(a transposed conv) keeps its plane-by-plane concats. Verified through the real compiler, and a slab at
the wrong place or a tail block at the wrong offset caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from family import EXTRA, pipe

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

CONV = EXTRA.parent / "tasks_conv"


def _prepare_kernel(source: str) -> str:
    start = source.index("_prepare_kernel(n, c")
    return source[start:source.index("return _for_this_machine", start)]


def _pool_task(folder: Path, channels: int) -> str:
    """A 3x3 max pool (stride 1, padding 1) over x (1, channels, 16, 64)."""
    path = folder / "pool.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.pool = nn.MaxPool2d(3, stride=1, padding=1)\n\n"
        "    def forward(self, x):\n        return self.pool(x)\n\n\n"
        f"def get_inputs():\n    return [torch.randn(1, {channels}, 16, 64)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    return str(path)


def test_a_padded_pool_assembles_blocks_of_planes_into_planes_forward_fills(kb):
    """The -inf border is forward's allocation (torch.full, CONV.zeros-allocated): the kernel writes the data."""
    k = kernel_of(pipe(kb, "maxpool2d_3x3_same.py"))
    assert k.supported, k.reason
    prep = _prepare_kernel(k.source)
    assert "pypto.concat" not in prep and "pypto.full(" not in prep
    assert "planes_chunk = pypto.view(x_planes, [BASIC_BATCH, h, w], [off, 0, 0])" in prep
    assert "pypto.assemble(planes_chunk, [off, LO_H, LO_W], out)" in prep
    assert 'prepared = torch.full((n * c, QH, QW), float("-inf"), dtype=torch.float32' in k.source
    assert "BASIC_BATCH = ceil_div(n * c, ceil_div(n * c, PREP_PLANES))" in prep
    assert k.constants["PREP_PLANES"]["value"] == 6  # 2 images x 3 channels: fewer than the 8 a block may take


@pytest.mark.parametrize("name", ["avgpool1d_padded.py", "maxpool3d.py", "conv2d_same_asymmetric.py"])
def test_every_rank_pads_in_blocks(kb, name):
    k = kernel_of(Pipeline(kb, Design(task=str(CONV / name))))
    assert k.supported, k.reason
    prep = _prepare_kernel(k.source)
    assert "pypto.concat" not in prep and "planes_chunk = pypto.view(" in prep


def test_zero_insertion_stays_plane_by_plane(kb):
    k = kernel_of(Pipeline(kb, Design(task=str(CONV / "conv_transpose2d_strided.py"))))
    assert k.supported, k.reason
    assert "pypto.concat" in _prepare_kernel(k.source)


@pytest.mark.sim
def test_a_block_loop_with_a_tail_verifies(kb, tmp_path):
    """11 planes: one block of 6, then a tail of 5."""
    p = Pipeline(kb, Design(task=_pool_task(tmp_path, 11)))
    (r,) = verify_many([p], jobs=1, cache=False)
    assert r.passed and r.max_abs_err == 0, r.reason


@pytest.mark.sim
def test_a_block_or_a_tail_at_the_wrong_place_fails(kb, broken_twins, tmp_path):
    p = Pipeline(kb, Design(task=_pool_task(tmp_path, 11)))
    reports = broken_twins([
        (p, "pypto.assemble(planes_chunk, [off, LO_H, LO_W], out)",
         "pypto.assemble(planes_chunk, [off, LO_H, LO_W - 1], out)"),
        (p, "pypto.assemble(planes_tail, [TAIL_OFFSET, LO_H, LO_W], out)",
         "pypto.assemble(planes_tail, [TAIL_OFFSET - 1, LO_H, LO_W], out)"),
    ])
    for r in reports:
        assert r.status != J.OK and r.passed is False, (r.label, r.status, r.error)
