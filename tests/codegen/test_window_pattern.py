"""The conv and pool pattern: every fixture scaffolds lint-clean, ModelNew builds the task's own
module (the same weights under the same seed) and forward only hands its weight and bias to the
kernel; the kernel writes the plan the tile and loop steps decided."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.export import export_dir
from pypto_tui.lint.engine import lint_source

CONV = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv"
FIXTURES = sorted(p.name for p in CONV.glob("*.py"))


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(CONV / name), **design))


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_scaffolds_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "window", k.reason
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []
    assert "pypto.conv(" not in k.source  # CONV.not-runnable
    tree = ast.parse(k.source)
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "pypto.loop"]
    kernels = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.endswith("_kernel")
               and not n.name.startswith("create_")]
    assert len(loops) == len(kernels)  # one pypto.loop per kernel, never nested (P6.no-nested-loops)


def test_modelnew_repeats_the_modules_and_forward_passes_their_weights(kb):
    src = kernel_of(pipe(kb, "conv_transpose2d_strided.py")).source
    init = src[src.index("    def __init__"):src.index("    def forward")]
    assert ("self.up = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, "
            "output_padding=output_padding, groups=groups, dilation=dilation)") in init
    fwd = src[src.index("    def forward"):]
    assert "weight = self.up.weight.detach().reshape(IN_CHANNELS, OCG, TAPS).contiguous()" in fwd
    assert "bias = self.up.bias.detach().reshape(OUT_CHANNELS, 1, 1).contiguous()" in fwd


def test_a_module_reading_names_modelnew_lacks_is_rebuilt_from_the_contract(kb, tmp_path):
    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nK = 3\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                 "        super().__init__()\n        self.conv = nn.Conv1d(4, 6, K, padding=1)\n\n"
                 "    def forward(self, x):\n        return self.conv(x)\n\n\ndef get_inputs():\n"
                 "    return [torch.randn(2, 4, 40)]\n\n\ndef get_init_inputs():\n    return []\n")
    src = kernel_of(Pipeline(kb, Design(task=str(p)))).source
    assert "self.conv = nn.Conv1d(in_channels=4, out_channels=6, kernel_size=3, stride=1, padding=1" in src


def test_the_kernel_writes_the_plans_loop_and_tiles(kb):
    p = pipe(kb, "conv2d_grouped_strided.py", loop_count=4)
    k = kernel_of(p)
    plan = p.kernel_plan()
    assert plan.loop is not None and plan.loop.count == 4
    assert k.constants["LOOP_COUNT"]["value"] == 4
    assert k.constants["LOOP_COUNT"]["numbers"]["items"] == 8 and k.constants["LOOP_COUNT"]["numbers"]["blocks"] == 4
    assert k.constants["TILE"]["value"] == list(plan.tile("columns").tile)
    assert k.constants["STORE_TILE"]["value"] == list(plan.tile("store").tile)
    # the strides are gathered once per phase by the phase kernel (CONV.flat-phases), not per tap
    assert "rows = pypto.index_select(padded_chunk, 1, keep_h[a])" in k.source
    assert "part = pypto.index_select(rows, 2, keep_w[c2])" in k.source and "index_select(win" not in k.source
    assert "r0 = ((it % BLOCKS) * LAST) // SPREAD" in k.source  # the last block shifted back (CONV.row-blocks)


def test_a_stride_one_2d_conv_reads_its_planes_flat(kb):
    """CONV.flat-taps: the kernel takes the prepared planes as (N*C, 1, QH*QW), each tap one contiguous
    view of SPAN positions (no strided window copied, no window tile), one matmul, and each output row
    stored as a computed tensor; forward passes the prepared planes as a view. A strided conv keeps
    im2col's window copies."""
    src = kernel_of(pipe(kb, "conv2d_same_asymmetric.py")).source
    assert "xf: pypto.Tensor((n * c, 1, QH * QW), pypto.DT_FP32)" in src
    assert "taps.append(pypto.view(xf, [CG, 1, SPAN], [img * c + g * CG, 0, (r0 + TAP_H[t]) * QW + TAP_W[t]]))" in src
    assert "SPAN = (ROWS - 1) * QW + OW" in src and "WINDOW_TILE" not in src
    assert "row = pypto.view(y, [OCG, OW], [0, r * QW]) + 0.0" in src  # CONV.assemble-whole
    assert "out: pypto.Tensor((n * OUT_CHANNELS, OH * OW), pypto.DT_FP32)" in src
    fwd = src[src.index("    def forward"):]
    assert "flat = prepared.reshape(n * c, 1, QH * QW)" in fwd and "kernel(flat, weight, out)" in fwd
    strided = kernel_of(pipe(kb, "conv1d_dilated_strided.py")).source
    assert "taps.append(pypto.reshape(win, [CG, 1, BLOCK]))" in strided and "SPAN" not in strided


def test_a_strided_2d_conv_reads_its_phase_planes_flat(kb):
    """CONV.flat-phases: the pad kernel, then the phase kernel (each phase of the padded planes a plane
    of its own), then the flat kernel: tap t starts at TAP_AT[t] in its phase's plane, rows PW apart;
    forward passes the phase planes as a flat view."""
    src = kernel_of(pipe(kb, "conv2d_grouped_strided.py")).source
    assert "def create_conv2d_phase_kernel(n, c, h, w):" in src
    assert "pypto.assemble(part, [off, (a * 2 + c2) * PH, 0], out)" in src
    # dilation 2 over stride 2: every tap reads phase (0, 0), the one phase stored
    assert "for a in (0,):" in src and "for c2 in (0,):" in src
    assert "TAP_AT = [((TAP_H[t] % STRIDE[0]) * STRIDE[1] + TAP_W[t] % STRIDE[1]) * PH * PW" in src
    assert "[CG, 1, SPAN], [img * c + g * CG, 0, r0 * PW + TAP_AT[t]]" in src and "SPAN = (ROWS - 1) * PW + OW" in src
    assert "row = pypto.view(y, [OCG, OW], [0, r * PW])" in src
    fwd = src[src.index("    def forward"):]
    order = [fwd.index(f"kernel = create_conv2d_{k}(") for k in ("prepare_kernel", "phase_kernel", "kernel")]
    assert order == sorted(order)
    assert "flat = phased.reshape(n * c, 1, STRIDE[0] * STRIDE[1] * PH * PW)" in fwd


def test_a_max_pool_pads_with_minus_infinity_and_an_average_divides(kb):
    mx = kernel_of(pipe(kb, "maxpool2d_ceil.py")).source
    # the max as a compare and a select (POOL.tap-views): pypto.maximum costs ten times it in SIM
    # its -inf border is forward's allocation (CONV.zeros-allocated), so no kernel names a fill it never writes
    assert 'float("-inf"), dtype=torch.float32' in mx and "pypto.where(pypto.gt(win, acc), win, acc)" in mx
    assert "FILL" not in mx.replace("FILL_AT", "").replace("FILL_WIDTH", "")
    assert "pypto.maximum" not in mx
    # a 1-D max too, now that the tile step counts the select's buffers (its tile (1, 1, 8192) at
    # KernelBench 41's shape, where the uncounted (1, 1, 16384) stopped with F7A001)
    one = kernel_of(pipe(kb, "maxpool1d_dilated.py"))
    assert "pypto.where(pypto.gt(win, acc), win, acc)" in one.source and "pypto.maximum" not in one.source
    avg = kernel_of(pipe(kb, "avgpool1d_padded.py")).source
    assert "prepared = torch.zeros(" in avg and "FILL = " not in avg and "INV_COUNT = 1.0 / 5.0" in avg
    excl = kernel_of(pipe(kb, "avgpool2d_exclude_pad.py")).source
    assert "recip = pypto.reciprocal(counts)" in excl and "COUNT_A_H = LO_H" in excl


def test_export_over_the_conv_fixtures_scaffolds_every_one(kb, tmp_path):
    report = export_dir(CONV, tmp_path / "out", kb)
    assert report.counts["ok"] == len(FIXTURES), [(r.task, r.reason) for r in report.rows if r.status != "ok"]
    for out in (tmp_path / "out").iterdir():
        task = Pipeline(kb, Design(task=str(CONV / out.name))).contract().signature
        assert lint_source(out.read_text(), str(out), kb=kb, task_signature=task) == []
