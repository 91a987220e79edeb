"""The roofline (issue 22): the least time the pack's chip allows a task, checked against sums done
by hand for an elementwise op, a row reduction and a matmul, and the pack data behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.kb import PackError, load_pack
from pypto_tui.roofline import roofline, try_roofline

# The default profile (knowledge/default/roofline.toml): HBM 1.6e6 B/µs; 1800 cycles/µs; 48 vector
# cores at 64 fp32 elements per cycle; 24 cube cores at 4096 fp32 MACs per cycle.
VECTOR_FP32 = 64 * 48 * 1800        # elements per µs: 5 529 600
CUBE_FP32 = 4096 * 24 * 1800         # MACs per µs: 176 947 200
HBM = 1.6e6                          # bytes per µs

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return {body}


{consts}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def task(tmp_path: Path, name: str, args: str, body: str, consts: str, inputs: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text(TASK.format(args=args, body=body, consts=consts, inputs=inputs))
    return p


def contract_of(kb, path: Path):  # type: ignore[no-untyped-def]
    return Pipeline(kb, Design(task=str(path))).contract()


def test_elementwise_relu_is_memory_bound(kb, tmp_path):
    p = task(tmp_path, "relu", "x", "torch.relu(x)", "M, N = 16, 16384", "torch.randn(M, N)")
    r = roofline(contract_of(kb, p), kb)
    # x read once, the output written once: 2 x 16 x 16384 x 4 B
    assert r.work.bytes == 2 * 16 * 16384 * 4 == 2_097_152
    assert r.work.vector_ops == 16 * 16384           # relu: one op per element
    assert r.work.cube_macs == 0
    assert r.memory_us == pytest.approx(2_097_152 / HBM, rel=1e-12) == pytest.approx(1.31072)
    assert r.vector_us == pytest.approx(262_144 / VECTOR_FP32, rel=1e-12)
    assert r.bound == "memory" and r.roofline_us == r.memory_us
    assert r.ratio(2.62144) == pytest.approx(2.0)


def test_row_sum_counts_the_reduced_output(kb, tmp_path):
    p = task(tmp_path, "rowsum", "x", "torch.sum(x, dim=1)", "M, N = 128, 4096", "torch.randn(M, N)")
    r = roofline(contract_of(kb, p), kb)
    assert r.work.bytes == 128 * 4096 * 4 + 128 * 4 == 2_097_664     # the input, then one sum per row
    assert r.work.vector_ops == 128 * 4096                          # one add per input element
    assert r.roofline_us == pytest.approx(2_097_664 / HBM, rel=1e-12) and r.bound == "memory"


def test_square_matmul_is_cube_bound(kb, tmp_path):
    p = task(tmp_path, "mm", "A, B", "torch.matmul(A, B)", "N = 2048", "torch.randn(N, N), torch.randn(N, N)")
    r = roofline(contract_of(kb, p), kb)
    assert r.work.bytes == 3 * 2048 * 2048 * 4                      # A, B and C once
    assert r.work.cube_macs == 2048 ** 3
    assert r.cube_us == pytest.approx(2048 ** 3 / CUBE_FP32, rel=1e-12) == pytest.approx(48.5452, rel=1e-5)
    assert r.memory_us == pytest.approx(3 * 2048 * 2048 * 4 / HBM)
    assert r.memory_us < r.cube_us
    assert r.bound == "cube" and r.roofline_us == r.cube_us
    assert r.to_dict(97.0904)["ratio"] == pytest.approx(2.0, rel=1e-5)


def test_a_transposed_operand_contracts_its_other_axis(kb, tmp_path):
    p = task(tmp_path, "mmt", "A, B", "torch.matmul(A.T, B)", "M, K, N = 256, 1024, 512",
             "torch.randn(K, M), torch.randn(K, N)")
    r = roofline(contract_of(kb, p), kb)
    assert r.work.cube_macs == 256 * 1024 * 512


def test_the_chip_profile_is_pack_data(kb, tmp_path):
    """Halve the HBM bandwidth in a pack of one's own: the memory bound doubles."""
    own = tmp_path / "pack"
    own.mkdir()
    (own / "pack.toml").write_text('[pack]\nname = "slow-hbm"\nversion = "1"\nschema = 1\nextends = "default"\n')
    text = (Path(kb.path) / "roofline.toml").read_text()
    assert "value = 1.6e6" in text
    (own / "roofline.toml").write_text(text.replace("value = 1.6e6", "value = 0.8e6", 1))
    slow = load_pack(own)
    p = task(tmp_path, "relu", "x", "torch.relu(x)", "M, N = 16, 16384", "torch.randn(M, N)")
    assert roofline(contract_of(slow, p), slow).memory_us == pytest.approx(2 * 1.31072)
    (own / "roofline.toml").write_text(text.replace("value = 1.6e6", "value = -3", 1))
    with pytest.raises(PackError, match="hbm_bytes_per_us"):
        load_pack(own)


def test_every_number_has_a_source(kb):
    prof = kb.roofline
    assert prof is not None
    for key in ("hbm_bytes_per_us", "clock_cycles_per_us", "vector_cores", "cube_cores", "vector_elements_per_cycle",
                "cube_macs_per_cycle", "vector_ops_per_element"):
        assert prof.sources[key].strip(), key
    assert "A2A3.ini" in prof.sources["cube_macs_per_cycle"]  # pypto's own cost-model parameters, read


def test_no_roofline_says_why(kb, tmp_path):
    p = tmp_path / "odd.py"
    p.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                 "        return torch.linalg.svd(x)\n\ndef get_inputs():\n    return [torch.randn(4, 4)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    r, why = try_roofline(contract_of(kb, p), kb)
    assert r is None and why


def test_sim_refuses_a_kernel_file_it_cannot_use(tmp_path):
    p = task(tmp_path, "relu", "x", "torch.relu(x)", "M, N = 16, 1024", "torch.randn(M, N)")
    bad = tmp_path / "k.py"
    bad.write_text("class Kernel:\n    pass\n")
    runner = CliRunner()
    r = runner.invoke(app, ["sim", str(p), "--kernel", str(bad), "--json"])
    assert r.exit_code == 2 and "ModelNew" in json.loads(r.stdout)["error"]
    r = runner.invoke(app, ["sim", str(p), "--kernel", str(bad), "--tile", "1,1024"])
    assert r.exit_code == 2 and "--kernel" in r.output


def test_the_apps_sweep_summary_sets_the_fastest_against_the_roofline(kb, tmp_path):
    """The Tiles and Loops steps add this line under a sweep (screens/sim_support.py)."""
    from types import SimpleNamespace

    from pypto_tui.screens.sim_support import roofline_summary

    p = Pipeline(kb, Design(task=str(task(tmp_path, "relu", "x", "torch.relu(x)", "M, N = 16, 16384",
                                          "torch.randn(M, N)"))))
    report = SimpleNamespace(best_by_cost=SimpleNamespace(e2e_us=3.93216))
    (line,) = roofline_summary(p, report)
    assert "1.31 µs, memory-bound" in line and "3.0x the roofline" in line
