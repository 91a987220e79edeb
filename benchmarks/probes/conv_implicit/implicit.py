"""Probe: a plain 2-D conv (stride 1, no padding) as an implicit GEMM, no column buffer.

Each input plane is read as one flat row of H*W elements, so the window of tap (kh, kw) over a
block of ROWS output rows is ONE contiguous 2-D view of the (N*C, H*W) input: CG channel rows,
L = (ROWS-1)*W + OW positions from r0*W + kh*W + kw. No reshape of a strided window, no concat.
The block's output is computed on the full input width (positions r*W + ow, ow < W); the W - OW
columns past OW of each row are junk and forward drops them with a slice.

PROBE_FORM (environment) picks how the taps meet the weights:
- taps   : sum over taps of matmul(W[:, tap], view_tap), (OCG, CG) @ (CG, L)
- concat3: (CG, 1, L) views concatenated on axis 1, reshaped to (CG*TAPS, L): the rows in the
           weight's own (C, KH, KW) order, so forward passes the weight as a view
- concat : concat of the taps' views along K, then one matmul (OCG, TAPS*CG) @ (TAPS*CG, L)

PROBE_STORE picks how the block leaves (the measurements are in README.md):
- flat   : the whole (OC, L) product, junk columns included, into (N*OC, OH*W); forward crops them
- rows2d : each output row's OW positions, a view of the product, into (N*OC, OH*OW)
- rows   : the same through a (OC, 1, L) reshape into (N*OC, OH, OW)
- dense  : PROBE_ROWS=1, one output row per block, assembled whole
- split  : rows 0..R-2 as one (OC, R-1, W) reshape, the last row alone
"""

import functools
import os

import pypto
import torch
import torch.nn as nn

_PYPTO_RUN_MODE = int(os.getenv("AIKG_PYPTO_RUN_MODE", "0" if os.getenv("ASCEND_HOME_PATH") else "1"))
RUNTIME_OPTIONS = {"run_mode": _PYPTO_RUN_MODE}
FORM = os.getenv("PROBE_FORM", "concat3")
STORE = os.getenv("PROBE_STORE", "flat")
ROWS_WANTED = int(os.getenv("PROBE_ROWS", "0"))
CUBE_N_L0 = int(os.getenv("PROBE_CUBE_N", "256"))
CUBE_M_L0 = int(os.getenv("PROBE_CUBE_M", "128"))


def ceil_div(a, b):
    return (a + b - 1) // b


def _for_this_machine(kernel):
    if _PYPTO_RUN_MODE != 1:
        return kernel
    from pypto_tui.sim.on_cpu import sim_mode_kernel
    return sim_mode_kernel(kernel)


@functools.cache
def geometry(n, c, h, w, oc, kh, kw):
    OH, OW = h - kh + 1, w - kw + 1
    # a block's positions (ROWS-1)*w + OW stay under ~8192 (the matmul's N)
    ROWS = ROWS_WANTED or max(1, min(OH, 8192 // w))
    BLOCKS = ceil_div(OH, ROWS)
    LAST = OH - ROWS
    SPREAD = max(BLOCKS - 1, 1)
    L = (ROWS - 1) * w + OW
    return OH, OW, ROWS, BLOCKS, LAST, SPREAD, L


def out_shape(n, oc, OH, OW, w):
    if STORE == "flat":
        return (n * oc, OH * w)
    return (n * oc, OH * OW) if STORE in ("dense", "rows2d") else (n * oc, OH, OW)


@functools.cache
def create_kernel(n, c, h, w, oc, kh, kw):
    OH, OW, ROWS, BLOCKS, LAST, SPREAD, L = geometry(n, c, h, w, oc, kh, kw)
    TAPS = kh * kw
    OFF = [a * w + b for a in range(kh) for b in range(kw)]
    ITEMS = n * BLOCKS
    CG = c
    CUBE_M = [min(CUBE_M_L0, oc), min(CUBE_M_L0, oc)]
    if FORM == "taps":
        CUBE_K = [CG, CG]
    else:
        CUBE_K = [CG * 2 if CG * 2 <= 128 else 128, 128 if CG * TAPS >= 128 else CG * TAPS]
        CUBE_K = [min(CUBE_K[0], CUBE_K[1]), CUBE_K[1]]
    CUBE_N = [CUBE_N_L0, CUBE_N_L0]
    VEC = (16, 1024)
    OUT_SHAPE = out_shape(n, oc, OH, OW, w)
    VEC3 = (min(16, CG), int(os.getenv("PROBE_VEC3_T", "1")), 1024)

    @pypto.frontend.jit(runtime_options=RUNTIME_OPTIONS)
    def conv2d_implicit(
        x: pypto.Tensor((n * c, h * w), pypto.DT_FP32),
        x3: pypto.Tensor((n * c, 1, h * w), pypto.DT_FP32),
        wt: pypto.Tensor((oc, TAPS * CG), pypto.DT_FP32),
        out: pypto.Tensor(OUT_SHAPE, pypto.DT_FP32),
    ):
        pypto.set_cube_tile_shapes(CUBE_M, CUBE_K, CUBE_N)
        pypto.set_vec_tile_shapes(*VEC)
        for it in pypto.loop(ITEMS, name="ITEMS", idx_name="it"):
            img = it // BLOCKS
            r0 = ((it % BLOCKS) * LAST) // SPREAD
            if FORM == "taps":
                acc = pypto.matmul(pypto.view(wt, [oc, CG], [0, 0]),
                                   pypto.view(x, [CG, L], [img * c, r0 * w + OFF[0]]), pypto.DT_FP32)
                for t in range(1, TAPS):
                    acc = acc + pypto.matmul(pypto.view(wt, [oc, CG], [0, t * CG]),
                                             pypto.view(x, [CG, L], [img * c, r0 * w + OFF[t]]), pypto.DT_FP32)
            elif FORM == "concat3":
                pypto.set_vec_tile_shapes(*VEC3)
                views = []
                for t in range(TAPS):
                    views.append(pypto.view(x3, [CG, 1, L], [img * c, 0, r0 * w + OFF[t]]))
                cols = pypto.reshape(pypto.concat(views, 1), [CG * TAPS, L])
                acc = pypto.matmul(wt, cols, pypto.DT_FP32)
            else:
                views = []
                for t in range(TAPS):
                    views.append(pypto.view(x, [CG, L], [img * c, r0 * w + OFF[t]]))
                acc = pypto.matmul(wt, pypto.concat(views, 0), pypto.DT_FP32)
            if STORE == "rows2d":  # each row's OW valid positions into the 2-D (N*OC, OH*OW) output
                for r in range(ROWS):
                    pypto.assemble(pypto.view(acc, [oc, OW], [0, r * w]), [img * oc, (r0 + r) * OW], out)
            elif STORE == "dense":  # one output row per block (ROWS = 1): its OW positions are dense
                pypto.assemble(acc, [img * oc, r0 * OW], out)
            elif STORE == "split":  # rows 0..ROWS-2 as one (OC, ROWS-1, W) reshape, the last row alone
                head = pypto.reshape(pypto.view(acc, [oc, (ROWS - 1) * w], [0, 0]), [oc, ROWS - 1, w])
                pypto.assemble(pypto.view(head, [oc, ROWS - 1, OW], [0, 0, 0]), [img * oc, r0, 0], out)
                tail = pypto.reshape(pypto.view(acc, [oc, OW], [0, (ROWS - 1) * w]), [oc, 1, OW])
                pypto.assemble(tail, [img * oc, r0 + ROWS - 1, 0], out)
            elif STORE == "rows":  # each output row's OW valid positions, straight into (N*OC, OH, OW)
                acc3 = pypto.reshape(acc, [oc, 1, L])
                for r in range(ROWS):
                    pypto.assemble(pypto.view(acc3, [oc, 1, OW], [0, 0, r * w]), [img * oc, r0 + r, 0], out)
            else:
                pypto.assemble(acc, [img * oc, r0 * w], out)

    return _for_this_machine(conv2d_implicit)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=False):
        super().__init__()
        assert stride == 1 and padding == 0 and dilation == 1 and groups == 1 and not bias
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), bias=False)

    def forward(self, x):
        n, c, h, w = x.shape
        wt = self.conv2d.weight.detach()
        oc, _, kh, kw = wt.shape
        x = x.contiguous()
        OH, OW, *_ = geometry(n, c, h, w, oc, kh, kw)
        # tap-major weights: column t*C + ci holds W[:, ci, kh_t, kw_t]
        if FORM == "concat3":  # channel-major, the weight's own layout (a view)
            w2 = wt.reshape(oc, c * kh * kw)
        else:
            w2 = wt.permute(0, 2, 3, 1).reshape(oc, kh * kw * c).contiguous()
        if STORE != "flat":
            out = torch.empty(out_shape(n, oc, OH, OW, w), dtype=torch.float32)
            create_kernel(n, c, h, w, oc, kh, kw)(x.reshape(n * c, h * w), x.reshape(n * c, 1, h * w), w2, out)
            return out.reshape(n, oc, OH, OW)
        out = torch.empty((n * oc, OH * w), dtype=torch.float32)
        x = x.contiguous()
        create_kernel(n, c, h, w, oc, kh, kw)(x.reshape(n * c, h * w), x.reshape(n * c, 1, h * w), w2, out)
        return out.reshape(n, oc, OH, w)[..., :OW]
