"""The cube tiles a matmul gets from the pack's search (presets.toml [cube.search], B.cube-fill-cores):
K deep in L1, and the M x N tiles whose count comes nearest to one per cube core from below. The
tiles asserted here are the ones the SIM sweep measured fastest (the rule's explanation)."""

from __future__ import annotations

import shutil

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.errors import PackError
from pypto_tui.kb import bundled_pack_dir, load_pack
from pypto_tui.tiles import choose_cube, spread_cube


@pytest.mark.parametrize(("mkn", "m", "n", "tasks", "k_l1"), [
    ((512, 2048, 256), 64, 128, 16, 512),     # KernelBench 2 at its bench shape: 16 tasks, 17.6 us
    ((1024, 1024, 1024), 128, 256, 32, 256),  # KernelBench 1: no legal tile gives fewer than 32 tasks
    ((256, 4096, 256), 64, 64, 16, 1024),     # KernelBench 6: the square tile of the two with 16 tasks
])
def test_the_search_fills_the_cube_cores_from_below(kb, mkn, m, n, tasks, k_l1):
    c = choose_cube(kb, *mkn, "fp32", batch=1)
    assert c is not None and "B.cube-fill-cores" in c.source
    ev = c.evaluation
    assert (ev.m, ev.n, ev.tasks) == ((m, m), (n, n), tasks)
    # K as deep in L1 as L1 takes beside the M and N rows: (m + n) * k_l1 * 4 B <= 512 KiB
    assert ev.k == (32, k_l1) and ev.l1_bytes <= kb.chip.l1_bytes < (m + n) * 2 * k_l1 * 4


def test_a_small_matmul_takes_few_large_tasks(kb):
    """64 x 256 x 192 does 3.1M multiply-adds in all: no split keeps 2^24 a task, so the fewest tasks
    (measured: 2 tasks of 64 x 128 3.9 us; 24 tasks of 16 x 32 5.9 us)."""
    ev = spread_cube(kb, 64, 256, 192, "fp32")
    assert (ev.m, ev.n, ev.tasks) == ((64, 64), (128, 128), 2)


def test_k_is_never_held_deeper_than_itself(kb):
    assert spread_cube(kb, 4096, 128, 384, "fp32").k == (32, 128)
    assert spread_cube(kb, 512, 64, 256, "fp32").k == (32, 64)
    assert spread_cube(kb, 2048, 16, 4096, "fp32").k == (16, 16)
    assert spread_cube(kb, 128, 768, 128, "fp32").k == (32, 512)  # 768: two steps, not one of 1024


def test_a_batch_counts_toward_the_tasks(kb):
    alone = spread_cube(kb, 512, 2048, 256, "fp32")
    batched = spread_cube(kb, 512, 2048, 256, "fp32", batch=32)
    assert alone.tasks == 16 and (alone.m, alone.n) == ((64, 64), (128, 128))
    # 32 products of their own already fill the cores: the largest tiles, the fewest tasks
    assert (batched.m, batched.n) == ((128, 128), (256, 256)) and batched.tasks == 4


def test_a_matmul_whose_products_are_not_counted_keeps_the_starting_point(kb):
    """A conv's per-item matmuls or attention's per-head products run in loops of their own: their
    pattern gives no batch, and the search (measured on plain matmuls) is not applied."""
    c = choose_cube(kb, 512, 2048, 256, "fp32")
    assert (c.evaluation.m, c.evaluation.k, c.evaluation.n) == ((128, 128), (32, 128), (256, 256))
    assert spread_cube(kb, 512, 2048, 256, "fp32", batch=None) is None


def test_the_design_keeps_its_own_cube_tiles(kb):
    c = choose_cube(kb, 512, 2048, 256, "fp32", {"m": [128, 128], "k": [32, 128], "n": [256, 256]})
    assert c.source == "the design's cube tiles" and c.evaluation.k == (32, 128)


def test_a_pack_without_the_search_starts_from_its_preset(kb, tmp_path):
    pack = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), pack)
    presets = pack / "presets.toml"
    text = presets.read_text()
    start = text.index("[cube.search]")
    end = text.index('rule = "B.cube-fill-cores"\n', start) + len('rule = "B.cube-fill-cores"\n')
    presets.write_text(text[:start] + text[end:])
    plain = load_pack(pack)
    assert plain.cube is not None and plain.cube.search is None
    c = choose_cube(plain, 512, 2048, 256, "fp32", batch=1)
    assert (c.evaluation.m, c.evaluation.k, c.evaluation.n) == ((128, 128), (32, 128), (256, 256))
    # and the module says which it used
    task = tmp_path / "mm.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, A, B):\n        return torch.matmul(A, B)\n\n\n"
                    "def get_inputs():\n    return [torch.rand(512, 2048), torch.rand(2048, 256)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    assert "CUBE_K = [32, 128]" in kernel_of(Pipeline(plain, Design(task=str(task)))).source
    assert "CUBE_K = [32, 512]" in kernel_of(Pipeline(kb, Design(task=str(task)))).source


@pytest.mark.parametrize("k_l1", ["100", "8", "0"])
def test_a_bad_search_depth_is_refused_in_one_line(tmp_path, k_l1):
    pack = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), pack)
    presets = pack / "presets.toml"
    presets.write_text(presets.read_text().replace("k_l1 = 1024", f"k_l1 = {k_l1}"))
    with pytest.raises(PackError, match=r"cube\.search\.k_l1") as err:
        load_pack(pack)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("forward", "a", "b"), [
    ("torch.matmul(A, B)", (512, 2048), (2048, 256)),
    ("torch.matmul(A.T, B)", (2048, 512), (2048, 256)),      # KernelBench 16 at its bench shape
    ("torch.matmul(A.T, B.T)", (2048, 512), (256, 2048)),    # KernelBench 18
])
def test_a_transposed_operand_is_searched_at_its_own_k(kb, tmp_path, forward, a, b):
    """A read transposed (a_trans) has M as its last axis: the search must see K = 2048, not 512. With
    K = 512 it took 4 tasks of 128 x 256 (35.1 us SIM for KernelBench 16); at K = 2048, 16 tasks of
    64 x 128 as the plain product gets (19.2 us, measured with `sim --kernel`)."""
    task = tmp_path / "mm.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    f"    def forward(self, A, B):\n        return {forward}\n\n\n"
                    f"def get_inputs():\n    return [torch.rand{a}, torch.rand{b}]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    p = Pipeline(kb, Design(task=str(task)))
    assert p.geometry().matmul == (512, 2048, 256)
    cube = p.cube_choice()
    assert cube is not None and (cube.evaluation.m, cube.evaluation.k, cube.evaluation.n) == \
        ((64, 64), (32, 512), (128, 128))
