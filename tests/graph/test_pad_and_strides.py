"""Strided slices and constant pads, the two layout moves a Swin block makes around its windows: a
strided slice (`x[:, 1::2]`) is a free reshape, a phase picked and a run of positions narrowed (copies,
SLICE.rows-copy); a constant pad is one copy kernel per padded axis between fill blocks (PAD.rows-copy),
a negative width a narrow. Both front ends read them the same way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from pypto_tui.contract.graph import OpGraph, OpNode, Value
from pypto_tui.design import Design, Pipeline, task_kernels
from pypto_tui.kb import get_kb
from pypto_tui.ops import registry
from pypto_tui.ops import views as V
from pypto_tui.ops.base import OpError
from pypto_tui.ops.layout import pad_pairs
from pypto_tui.plan import decompose

CHAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"
RNG = np.random.default_rng(7)


def _take(x: np.ndarray, steps: list[V.Step]) -> np.ndarray:
    for s in steps:
        x = V.apply(s, x)
    return x


def _run(n: OpNode, x: np.ndarray) -> np.ndarray:
    """One node's numpy reference (a view's takes its steps; the others their attributes)."""
    kind = registry.kind(n.op)
    return kind.reference(x, n.attrs) if n.op == "view" else kind.reference(x, **n.attrs)


@pytest.mark.parametrize(("n", "sl"), [
    (8, slice(0, None, 2)), (8, slice(1, None, 2)), (12, slice(2, 11, 3)), (12, slice(4, None, 4)),
    (10, slice(None, None, 5)), (8, slice(3, 7, 1)), (6, slice(-4, None, 2)), (8, slice(None, None, 1)),
])
def test_a_strided_slice_takes_the_positions_numpy_takes(n: int, sl: slice) -> None:
    x = RNG.standard_normal((3, n, 4))
    steps = V.strided(x.shape, 1, sl.start, sl.stop, sl.step or 1)
    assert np.array_equal(_take(x, steps), x[:, sl])
    assert [s.kind for s in steps if s.kind != "reshape"].count("select") == (1 if (sl.step or 1) > 1 else 0)
    # the static reader's index form (`x[0, a:b:c]`) takes the same positions
    read = V.read_index(x.shape, (0, {"slice": (sl.start, sl.stop, sl.step)}))
    assert np.array_equal(_take(x, read), x[0, sl])


def test_a_strided_slice_the_views_cannot_take_says_what_to_do() -> None:
    with pytest.raises(OpError, match="not a multiple of the step"):
        V.strided((4, 7), 1, 0, None, 2)
    with pytest.raises(OpError, match="positive step"):
        V.strided((4, 8), 1, None, None, -1)


def test_the_phases_of_a_strided_slice_become_one_copy_each_and_compute_the_slice() -> None:
    shape = (2, 8, 8, 4)
    steps = tuple(V.read_index(shape, (slice_all := {"slice": (None, None, None)}, {"slice": (1, None, 2)},
                                       {"slice": (0, None, 2)}, slice_all)))
    out = shape
    for s in steps:
        out = V.out_shape(s, out)
    x = Value("x", "input", shape, "fp32", None)
    g = decompose(OpGraph((x,), (OpNode("n0", "view", "view", ("x",), {"steps": steps}, out, "fp32", "x[...]"),),
                          "n0"))
    copies = [n for n in g.nodes if n.op == "narrow"]
    assert len(copies) == 2 and all(n.attrs["length"] == 1 for n in copies)
    arr = RNG.standard_normal(shape)
    vals = {"x": arr}
    for n in g.nodes:
        vals[n.id] = _run(n, vals[n.inputs[0]])
    assert np.array_equal(vals["n0"], arr[:, 1::2, 0::2, :])


@pytest.mark.parametrize(("pad", "shape"), [
    ((1, 2), (3, 5)), ((0, 0, 3, 4, 4, 3), (2, 6, 6, 3)), ((-1, 2, 2, -3), (4, 6, 7)), ((2, 0),  (4,)),
])
def test_a_pad_decomposes_into_one_kernel_per_axis_that_computes_it(pad, shape) -> None:
    kind = registry.kind("pad")
    x = RNG.standard_normal(shape)
    want = x
    for d, (lo, hi) in enumerate(pad_pairs(pad, len(shape))):
        want = want[tuple(slice(max(0, -lo), want.shape[d] - max(0, -hi)) if i == d else slice(None)
                          for i in range(len(shape)))]
        want = np.pad(want, [(max(0, lo), max(0, hi)) if i == d else (0, 0) for i in range(len(shape))],
                      constant_values=1.5)
    got = kind.reference(x, pad=pad, value=1.5)
    assert np.array_equal(got, want) and kind.shape([shape], {"pad": pad}) == want.shape
    node = OpNode("n0", "pad", "layout", ("x",), {"pad": pad, "mode": "constant", "value": 1.5}, want.shape, "fp32",
                  "F.pad")
    g = decompose(OpGraph((Value("x", "input", shape, "fp32", None),), (node,), "n0"))
    vals = {"x": x}
    for n in g.nodes:
        assert n.op in ("pad", "narrow")
        if n.op == "pad":  # each kernel pads one axis by non-negative widths
            assert len([p for p in pad_pairs(n.attrs["pad"], len(shape)) if p != (0, 0)]) == 1
            assert min(min(p) for p in pad_pairs(n.attrs["pad"], len(shape))) >= 0
        vals[n.id] = _run(n, vals[n.inputs[0]])
        assert vals[n.id].shape == n.shape
    assert np.array_equal(vals["n0"], want)
    touched = sum(1 for p in pad_pairs(pad, len(shape)) if p != (0, 0))
    assert len(g.nodes) >= touched


def test_bad_pads_say_what_is_wrong() -> None:
    kind = registry.kind("pad")
    with pytest.raises(OpError, match="two per padded axis"):
        kind.shape([(3, 4)], {"pad": (1, 2, 3)})
    with pytest.raises(OpError, match="empty axis"):
        kind.shape([(3, 4)], {"pad": (-2, -2)})
    with pytest.raises(OpError, match="only 'constant'"):
        kind.shape([(3, 4)], {"pad": (1, 1), "mode": "reflect"})


def _task(tmp_path: Path, body: str, shape: str) -> Path:
    p = tmp_path / "task.py"
    p.write_text(textwrap.dedent(f"""\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x):
                return {body}


        def get_inputs():
            return [torch.randn{shape}]


        def get_init_inputs():
            return []
        """))
    return p


def test_a_pad_of_one_axis_is_one_kernel_and_of_two_is_two(tmp_path: Path) -> None:
    kb = get_kb()
    one = task_kernels(Pipeline(kb, Design(task=str(_task(tmp_path, "F.pad(x, (0, 0, 2, 1))", "(4, 6, 32)")))))
    assert one.supported and len(one.kernels) == 1, one.reason
    p = one.kernels[0].pipeline
    assert p.contract().op == "pad" and p.dims().reshape == "pad_rows"
    assert p.contract().output_shape == (4, 9, 32)
    two = task_kernels(Pipeline(kb, Design(task=str(_task(tmp_path, "F.pad(x, [1, 1, 2, 1], value=-1.0)",
                                                          "(4, 6, 32)")))))
    assert two.supported and [k.pipeline.contract().op for k in two.kernels] == ["pad", "pad"], two.reason
    reflect = Pipeline(kb, Design(task=str(_task(tmp_path, "F.pad(x, (1, 1), mode='reflect')", "(4, 32)"))))
    assert not reflect.contract().supported and "constant" in reflect.contract().reason


@pytest.mark.parametrize("name", ["pad_borders.py", "patch_merge.py"])
def test_the_fixtures_plan_their_copies(name: str) -> None:
    found = task_kernels(Pipeline(get_kb(), Design(task=str(CHAIN / name))))
    assert found.supported, found.reason
    ops = [k.pipeline.contract().op for k in found.kernels]
    assert ops == (["pad", "pad", "mul"] if name == "pad_borders.py" else ["narrow"] * 8 + ["cat", "matmul"])
