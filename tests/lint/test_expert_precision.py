"""The lint on expert library code: warnings right inside their scope, errors that never contradict
the release the lint inferred, every PyPTO dtype known, a lint crash never an error.

Each narrowed rule has its expert pattern (from PyPTO's models, examples and tests, written here
in our own small kernels) that must stay quiet and its pitfall that must still fire.
"""

from __future__ import annotations

import textwrap

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import lint_paths, lint_source
from pypto_tui.lint.engine import CHECKS, FileFacts

KB = get_kb()


def _src(body: str, params: str = "x: pypto.Tensor((64, 512), pypto.DT_FP32), "
                                  "out: pypto.Tensor((64, 512), pypto.DT_FP32)",
         decorator: str = "@pypto.frontend.jit", tail: str = "") -> str:
    return ("import pypto\nimport torch\n\n\n" + decorator + f"\ndef kernel({params}):\n"
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n" + tail)


def _rules(src: str, **kw: object) -> list[tuple[str, str, int]]:
    return [(f.rule, f.level, f.line) for f in lint_source(src, kb=KB, **kw)]  # type: ignore[arg-type]


MODEL_NEW = """

class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        kernel(x, out)
        return out
"""


# ------------------------------------------------------------------ dtypes and crashes (part 3)
@pytest.mark.parametrize("dtype", ["DT_UINT8", "DT_UINT16", "DT_FP8E4M3", "DT_FP8E5M2", "DT_FP8E8M0",
                                   "DT_HF8", "DT_FP4_E2M1X2", "DT_BOOL", "DT_UINT64"])
def test_every_byte_wide_pypto_dtype_is_known(dtype: str) -> None:
    """A kernel using DT_UINT8 used to get `internal-error ... unknown dtype 'uint8'` as an error."""
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.sum(x, 1, keepdim=True) + x)
    """, params=f"x: pypto.Tensor((64, 512), pypto.{dtype}), out: pypto.Tensor((64, 512), pypto.{dtype})")
    found = lint_source(src, kb=KB, pypto="0.2.0")
    assert not [f for f in found if f.rule == "internal-error"], found


@pytest.mark.parametrize("dtype", ["DT_INT4", "DT_HF4", "DT_FP4_E2M1", "DT_FP4_E1M2"])
def test_a_sub_byte_dtype_is_skipped_with_an_info_finding(dtype: str) -> None:
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.sum(x, 1, keepdim=True) + x)
    """, params=f"x: pypto.Tensor((64, 512), pypto.{dtype}), out: pypto.Tensor((64, 512), pypto.{dtype})")
    found = lint_source(src, kb=KB, pypto="0.2.1")  # the fp4 names are newer than 0.2.0
    assert [(f.rule, f.level) for f in found] == [("HW.ub-capacity", "info")], found
    assert "no whole byte width" in found[0].message


def test_a_uint8_unified_buffer_overflow_is_still_an_error() -> None:
    """uint8 is priced at 1 byte: a 256 KiB tile of it overflows the 192 KiB unified buffer."""
    src = _src("""
        pypto.set_vec_tile_shapes(256, 1024)
        out.move(x + pypto.exp(x))
    """, params="x: pypto.Tensor((256, 1024), pypto.DT_UINT8), out: pypto.Tensor((256, 1024), pypto.DT_UINT8)")
    assert ("HW.ub-capacity", "error", 8) in _rules(src, pypto="0.2.0")


def test_a_lint_crash_is_never_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = CHECKS["lint.unary_minus"]

    def boom(self, node):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(rule, "_needs_parens", boom)
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        out.move(-x)
    """)
    crash = [f for f in lint_source(src, kb=KB, strict=True) if f.rule == "internal-error"]
    assert [f.level for f in crash] == ["info"]
    assert "not checked" in crash[0].message


# ------------------------------------------------------------------ release inference (part 2)
RETURNS = _src("""
    pypto.set_vec_tile_shapes(16, 512)
    y = pypto.exp(x)
    return y
""")


def test_a_return_does_not_move_the_module_to_a_release_that_refuses_it_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """V020.out-param holds for 0.2.0 and 0.2.1 (lint.toml [versions]): the inference used to pick 0.2.1
    'which accepts it' and then report the same return as an error for 0.2.1."""
    path = tmp_path / "k.py"
    path.write_text(RETURNS, encoding="utf-8")
    facts: dict[str, FileFacts] = {}
    found = lint_paths([path], KB, pypto="auto", facts=facts)
    assert [(f.rule, f.level) for f in found] == [("V020.out-param", "error")]
    fact = facts[str(path)]
    assert fact.release == "0.2.0", fact
    assert "accepts" not in fact.why


def test_what_0_2_1_accepts_still_moves_the_module(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2):
            acc = pypto.view(x, [32, 512], [i * 32, 0])
            n = min(i, 1)
            pypto.assemble(pypto.exp(acc) * 1.0, [i * 32, 0], out)
    """)
    path = tmp_path / "k.py"
    path.write_text(src, encoding="utf-8")
    facts: dict[str, FileFacts] = {}
    found = lint_paths([path], KB, pypto="auto", facts=facts)
    assert facts[str(path)].release == "0.2.1", facts
    assert "V020.builtin-minmax" in facts[str(path)].why
    assert not [f for f in found if f.level == "error"], found


def test_parallel_loops_infer_the_release_that_has_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`pypto.loop(..., parallel=True)` is 0.2.1's: auto used to pick 0.2.0 and warn that 0.2.0 ignores it."""
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2, parallel=True):
            pypto.assemble(pypto.exp(pypto.view(x, [32, 512], [i * 32, 0])), [i * 32, 0], out)
    """)
    path = tmp_path / "k.py"
    path.write_text(src, encoding="utf-8")
    facts: dict[str, FileFacts] = {}
    assert lint_paths([path], KB, pypto="auto", facts=facts) == []
    assert facts[str(path)].release == "0.2.1"
    assert "parallel=" in facts[str(path)].why
    # asked for 0.2.0, the lint still says 0.2.0 ignores it
    assert [f.rule for f in lint_source(src, kb=KB, pypto="0.2.0")] == ["API.loop-options"]


def test_a_loop_keyword_no_release_knows_does_not_pick_the_release(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = _src("""
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2, idx=0):
            pypto.assemble(pypto.exp(pypto.view(x, [32, 512], [i * 32, 0])), [i * 32, 0], out)
    """)
    path = tmp_path / "k.py"
    path.write_text(src, encoding="utf-8")
    facts: dict[str, FileFacts] = {}
    lint_paths([path], KB, pypto="auto", facts=facts)
    assert "nothing it uses is newer" in facts[str(path)].why


# ------------------------------------------------------------------ reshape before tiles (part 2)
def test_a_reshape_of_the_whole_input_before_any_tile_is_not_an_error() -> None:
    """Probe reshape_param_before_tiles: 0.2.0 compiles and verifies it (tests/lint/probes)."""
    src = _src("""
        flat = pypto.reshape(x, [64 * 512])
        pypto.set_vec_tile_shapes(8192)
        y = pypto.exp(flat)
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.reshape(y, [64, 512]))
    """)
    assert not [r for r in _rules(src, pypto="0.2.0") if r[0] == "API.tiles-before-ops"]


def test_a_reshape_of_a_view_before_any_tile_is_still_an_error() -> None:
    """Probe reshape_view_before_tiles: 0.2.0 stops with F21004 'tile shape not set'."""
    src = _src("""
        for i in pypto.loop(2):
            block = pypto.view(x, [32, 512], [i * 32, 0])
            flat = pypto.reshape(block, [32 * 512])
            pypto.set_vec_tile_shapes(8192)
            pypto.assemble(pypto.reshape(pypto.exp(flat), [32, 512]), [i * 32, 0], out)
    """)
    assert ("API.tiles-before-ops", "error", 9) in _rules(src, pypto="0.2.0")


# ------------------------------------------------------------------ P2.no-kernel-reshape (part 1)
ROPE = """
    pypto.set_vec_tile_shapes(16, 512)
    y = pypto.exp(x)
    pairs = pypto.reshape(y, [64, 256, 2])
    pypto.set_vec_tile_shapes(16, 256, 2)
    swapped = pypto.transpose(pairs, 1, 2)
    pypto.set_vec_tile_shapes(16, 512)
    out.move(pypto.reshape(swapped, [64, 512]))
"""


def test_reshaping_computed_data_is_quiet_by_default_and_strict_only() -> None:
    """The RoPE interleave of PyPTO's mla_prolog: reshape, transpose, reshape of computed data."""
    src = _src(ROPE)
    assert not [r for r in _rules(src) if r[0] == "P2.no-kernel-reshape"]
    strict = [r for r in _rules(src, strict=True) if r[0] == "P2.no-kernel-reshape"]
    assert [r[1] for r in strict] == ["error", "error"]


def test_reshaping_the_input_in_a_library_kernel_says_before_the_call() -> None:
    src = _src("""
        pypto.set_vec_tile_shapes(8192)
        flat = pypto.reshape(x, [64 * 512])
        out.move(pypto.reshape(pypto.exp(flat), [64, 512]))
    """)
    found = [f for f in lint_source(src, kb=KB) if f.rule == "P2.no-kernel-reshape"]
    assert [(f.level, f.line) for f in found] == [("warn", 8)]
    assert "before the call" in found[0].message and "ModelNew" not in found[0].message


def test_reshaping_the_input_with_a_model_new_says_forward() -> None:
    src = _src("""
        pypto.set_vec_tile_shapes(8192)
        flat = pypto.reshape(x, [64 * 512])
        out.move(pypto.reshape(pypto.exp(flat), [64, 512]))
    """, tail=MODEL_NEW)
    found = [f for f in lint_source(src, kb=KB) if f.rule == "P2.no-kernel-reshape"]
    assert [(f.level, f.line) for f in found] == [("warn", 8)]
    assert "ModelNew.forward" in found[0].message


# ------------------------------------------------------------------ P6.outermost-axis (part 1)
def test_a_transposed_matmul_operand_may_move_axis_1() -> None:
    """PyPTO's scaled_mm tests: the M loop over a [k, m] operand moves axis 1, as the layout requires."""
    src = _src("""
        pypto.set_cube_tile_shapes([64, 64], [64, 256], [128, 128])
        for m in pypto.loop(2):
            a_view = pypto.view(a, [256, 64], [0, m * 64])
            pypto.assemble(pypto.matmul(a_view, b, pypto.DT_FP32, a_trans=True), [m * 64, 0], c)
    """, params="a: pypto.Tensor((256, 128), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16), "
                "c: pypto.Tensor((128, 512), pypto.DT_FP32)")
    assert not [r for r in _rules(src) if r[0] == "P6.outermost-axis"]
    assert [r[0] for r in _rules(src, strict=True) if r[0] == "P6.outermost-axis"] == ["P6.outermost-axis"]


def test_a_sliding_window_is_quiet_and_a_column_walk_still_fires() -> None:
    window = _src("""
        pypto.set_vec_tile_shapes(16, 256)
        for i in pypto.loop(2):
            start = 128 - i * 8
            win = pypto.view(x, [64, 256], [0, 256 - start])
            pypto.assemble(pypto.exp(win), [0, i * 256], out)
    """)
    assert not [r for r in _rules(window) if r[0] == "P6.outermost-axis"]
    columns = _src("""
        pypto.set_vec_tile_shapes(16, 256)
        for j in pypto.loop(2):
            chunk = pypto.view(x, [64, 256], [0, j * 256])
            pypto.assemble(pypto.exp(chunk), [0, j * 256], out)
    """)
    found = [f for f in lint_source(columns, kb=KB) if f.rule == "P6.outermost-axis"]
    assert [(f.level, f.line) for f in found] == [("warn", 9)]
    assert "caller" in found[0].message  # a library kernel: no ModelNew to reshape in
    with_model = [f for f in lint_source(columns + MODEL_NEW, kb=KB) if f.rule == "P6.outermost-axis"]
    assert "reshape in forward" in with_model[0].message


# ------------------------------------------------------------------ P4.tile-budget (part 1)
FLASH = """
    pypto.set_vec_tile_shapes(64, 512)
    for i in pypto.loop(2):
        s = pypto.view(x, [64, 512], [i * 64, 0])
        pypto.assemble(pypto.exp(s - pypto.amax(s, 1, keepdim=True)), [i * 64, 0], out)
"""


def test_a_library_kernels_tuned_tile_is_strict_only() -> None:
    """PyPTO's flash attention sets (64, 512): over the documents' 16384 elements, within the buffer."""
    params = "x: pypto.Tensor((128, 512), pypto.DT_FP16), out: pypto.Tensor((128, 512), pypto.DT_FP16)"
    src = _src(FLASH, params=params)
    assert not [r for r in _rules(src) if r[0].startswith(("P4.", "HW."))]
    assert ("P4.tile-budget", "error", 7) in _rules(src, strict=True)
    # in a KernelBench module the documents' budget is the advice: a warning
    assert ("P4.tile-budget", "warn", 7) in _rules(_src(FLASH, params=params, tail=MODEL_NEW))


def test_a_tile_is_clipped_to_the_reshape_it_covers() -> None:
    """PyPTO's gated delta rule: (128, 16, 128) to assemble `out.reshape([l, 1, d])`: 16384 once clipped."""
    body = """
        pypto.set_vec_tile_shapes(128, 16, 128)
        y = pypto.reshape(pypto.view(x, [128, 128], [0, 0]), [128, 1, 128], inplace=True)
        pypto.assemble(y * 2.0, [0, 0, 0], out)
    """
    params = "x: pypto.Tensor((128, 128), pypto.DT_FP32), out: pypto.Tensor((128, 16, 128), pypto.DT_FP32)"
    assert not [r for r in _rules(_src(body, params=params, tail=MODEL_NEW)) if r[0] == "P4.tile-budget"]
    # a reshape 4 wide on the middle axis: 128 x 4 x 64 = 32768 elements under (128, 16, 64)
    wide = (body.replace("[128, 128], [0, 0]", "[128, 256], [0, 0]")
            .replace("[128, 1, 128], inplace", "[128, 4, 64], inplace").replace("128, 16, 128)", "128, 16, 64)"))
    wide_params = ("x: pypto.Tensor((128, 256), pypto.DT_FP32), "
                   "out: pypto.Tensor((128, 16, 64), pypto.DT_FP32)")
    assert [r[0] for r in _rules(_src(wide, params=wide_params, tail=MODEL_NEW))
            if r[0] == "P4.tile-budget"] == ["P4.tile-budget"]


# ------------------------------------------------------------------ P4.last-dim-align (part 1)
def test_a_last_entry_on_an_axis_the_lint_cannot_size_may_be_a_whole_narrow_axis() -> None:
    """PyPTO's MLA indexer: (32, 1, 1, 4) over a last axis of 4 fp32 the lint cannot size."""
    params = ("x: pypto.Tensor([pypto.DYNAMIC, 1, 1, 4], pypto.DT_FP32), "
              "out: pypto.Tensor([pypto.DYNAMIC, 1, 1, 4], pypto.DT_FP32)")
    narrow = _src("""
        pypto.set_vec_tile_shapes(32, 1, 1, 4)
        out.move(x * 2.0)
    """, params=params.replace(", 1, 1, 4]", ", ...]"))
    assert not [r for r in _rules(narrow) if r[0] == "P4.last-dim-align"]
    assert [r[1] for r in _rules(narrow, strict=True) if r[0] == "P4.last-dim-align"] == ["warn"]
    # a known axis wider than the tile's 4: still the error it was
    known = _src("""
        pypto.set_vec_tile_shapes(16, 4)
        out.move(x * 2.0)
    """, params="x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((64, 512), pypto.DT_FP32)")
    assert ("P4.last-dim-align", "error", 7) in _rules(known)


def test_a_kernel_that_is_the_reshape_is_left_alone() -> None:
    """PyPTO's tests of reshape and unsqueeze: the result goes straight into the output."""
    for body in ("out.move(pypto.reshape(x, [64 * 512]))", "out[:] = pypto.reshape(x, [64 * 512])",
                 "y = pypto.reshape(x, [64 * 512])\nout.move(y)"):
        src = _src("pypto.set_vec_tile_shapes(8192)\n" + body,
                   params="x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((32768,), pypto.DT_FP32)")
        assert not [r for r in _rules(src) if r[0] == "P2.no-kernel-reshape"], body
    # ... but not when the kernel computes on the reshaped input
    src = _src("pypto.set_vec_tile_shapes(8192)\nout.move(pypto.exp(pypto.reshape(x, [64 * 512])))",
               params="x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((32768,), pypto.DT_FP32)")
    assert [r[:2] for r in _rules(src) if r[0] == "P2.no-kernel-reshape"] == [("P2.no-kernel-reshape", "warn")]


def test_warnings_in_a_kernel_its_test_expects_to_be_refused_are_info() -> None:
    """PyPTO's error-path tests: advice on a kernel written to be refused is moot, like its errors."""
    src = textwrap.dedent("""\
        import pypto
        import pytest


        @pypto.frontend.jit
        def bad(x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((32768,), pypto.DT_FP32)):
            y = pypto.exp(pypto.reshape(x, [64 * 512]))
            pypto.set_vec_tile_shapes(8192)
            out.move(y)


        def test_bad():
            with pytest.raises(Exception):
                bad(1, 2)
        """)
    found = {(f.rule, f.level) for f in lint_source(src, kb=KB, pypto="0.2.0")}
    assert found == {("P2.no-kernel-reshape", "info"), ("API.tiles-before-ops", "info")}, found


# ------------------------------------------------------------------ P5.tensor-first-arg, P6.unroll-innermost
QUANT = """
    pypto.set_vec_tile_shapes(16, 512)
    out.move(pypto.sub(127.0, pypto.exp(x)))
"""


def test_the_first_argument_advice_keeps_the_value() -> None:
    """PyPTO's MLA quant writes pypto.sub(127.0, t): swapping the arguments would compute t - 127."""
    found = [f for f in lint_source(_src(QUANT, tail=MODEL_NEW), kb=KB) if f.rule == "P5.tensor-first-arg"]
    assert len(found) == 1 and "pypto.add(pypto.mul(pypto.exp(x), -1.0), 127.0)" in found[0].message
    assert "pypto.sub(pypto.exp(x), 127.0)" not in found[0].message
    # a library kernel (0.2.0 runs it: probe scalar_first_arg) hears it with --strict only
    assert not [r for r in _rules(_src(QUANT)) if r[0] == "P5.tensor-first-arg"]
    assert [r[0] for r in _rules(_src(QUANT), strict=True) if r[0] == "P5.tensor-first-arg"] == ["P5.tensor-first-arg"]


UNROLL = """
    pypto.set_vec_tile_shapes(16, 512)
    for i, n in pypto.loop_unroll(0, 2, 1, unroll_list=[2, 1]):
        for j in pypto.loop(2):
            block = pypto.view(x, [32 * n, 256], [i * 32, j * 256])
            pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
"""


def test_an_unrolled_outer_loop_is_the_documents_advice_for_a_model_new() -> None:
    """PyPTO's tests of loop_unroll unroll around an inner loop; 0.2.0 runs it (probe unroll_outer_loop)."""
    assert not [r for r in _rules(_src(UNROLL)) if r[0] == "P6.unroll-innermost"]
    assert [r[:2] for r in _rules(_src(UNROLL, tail=MODEL_NEW)) if r[0] == "P6.unroll-innermost"] == [
        ("P6.unroll-innermost", "warn")]
    assert [r[0] for r in _rules(_src(UNROLL), strict=True) if r[0] == "P6.unroll-innermost"] == [
        "P6.unroll-innermost"]


# ------------------------------------------------------------------ recall on PyPTO's idioms (part 4)
def test_a_tail_behind_a_named_offset_is_caught() -> None:
    """PyPTO's examples name the offset (`b_offset = idx * tile_b`) before the view."""
    src = _src("""
        pypto.set_vec_tile_shapes(1, 64)
        tile_b = 3
        for idx in pypto.loop(32 // tile_b):
            b_offset = idx * tile_b
            t = pypto.view(x, [tile_b, 256], [b_offset, 0])
            pypto.assemble(t + 1.0, [b_offset, 0], out)
    """, params="x: pypto.Tensor((32, 256), pypto.DT_FP32), out: pypto.Tensor((32, 256), pypto.DT_FP32)")
    assert ("P6.loop-tail", "error", 11) in _rules(src, pypto="0.2.0")
    assert not [r for r in _rules(src.replace("tile_b = 3", "tile_b = 4"), pypto="0.2.0") if r[0] == "P6.loop-tail"]


def test_a_reduction_in_a_helper_under_the_kernels_narrow_tile_is_caught() -> None:
    """PyPTO's softmax example reduces in `softmax_core`, under the kernel's (1, 4, 1, 64) tile."""
    src = textwrap.dedent("""\
        import pypto


        def core(x):
            return pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))


        @pypto.frontend.jit
        def kernel(x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(1, 4, 1, 4)
            for i in pypto.loop(x.shape[0]):
                out[i:i + 1, ...] = core(x[i:i + 1, ...])
        """)
    assert ("HW.concat-reduce-align", "error", 11) in _rules(src, pypto="0.2.0")
    assert not [r for r in _rules(src.replace("(1, 4, 1, 4)", "(1, 4, 1, 64)"), pypto="0.2.0")
                if r[0] in ("HW.concat-reduce-align", "P4.last-dim-align")]


def test_a_transpose_before_any_tile_cites_what_0_2_0_says() -> None:
    """Probe transpose_before_tiles: 0.2.0 stops with 'TileShape dim num should same to input'."""
    src = _src("""
        xt = pypto.transpose(x, 0, 1)
        pypto.set_vec_tile_shapes(64, 64)
        out.move(pypto.transpose(xt, 0, 1))
    """)
    found = [f for f in lint_source(src, kb=KB, pypto="0.2.0") if f.rule == "API.tiles-before-ops"]
    assert [(f.level, f.line) for f in found] == [("error", 7)]
    assert "TileShape dim num" in found[0].message and "transpose_before_tiles" in found[0].message
