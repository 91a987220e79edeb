"""Kernel headers the rules' VALID / INVALID examples share, so an example is only its body.

`ROWS` is a (64, 512) fp32 kernel with rows in blocks of B = 24 and an (8, C) vec tile already
set: bodies start on line 10. `BARE` is the same kernel with no tile set (the examples that are
about setting it): bodies start on line 8.
"""

from __future__ import annotations

import textwrap

from pypto_tui.lint.base import example

ROWS = """\
import pypto

R, C = 64, 512
B = 24


@pypto.frontend.jit
def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, C)
"""

BARE = """\
import pypto

R, C = 64, 512


@pypto.frontend.jit
def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
"""


# The ragged last block of 64 rows by 24, in PyPTO's idiom: a constant view shape, a valid_shape
# bounded with pypto.min (a body for ROWS).
RAGGED_ROWS = """\
for i in pypto.loop(3):
    rows = pypto.min(B, R - i * B)
    chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
    pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
"""


def in_kernel(body: str, head: str = ROWS) -> str:
    """`body` (any indentation) as the kernel's body under `head`."""
    return head + textwrap.indent(example(body), "    ")
