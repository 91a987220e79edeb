"""What the lint reads in a module: helpers a kernel calls, and compile-time values.

Helpers: about half of the pypto calls in PyPTO's own kernels live in functions the kernel calls;
the lint follows the kernel into them, reads them with what the kernel passes, and reports a
finding at the helper's line naming the kernel. Values: one evaluator (the contract's) reads
constants through the module's scopes, `x.shape` of a declared tensor, and small helpers.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import lint_source
from pypto_tui.lint.analysis import ModuleInfo

KB = get_kb()


def _info(src: str) -> ModuleInfo:
    return ModuleInfo(cst.parse_module(textwrap.dedent(src)))


HELPERS = textwrap.dedent("""\
    import pypto


    def scale(block, factor):
        return 1.0 - block * factor


    def tiles_then_scale(block):
        pypto.set_vec_tile_shapes(8, 512)
        return scale(block, 2.0)


    def never_called(block):
        return 1.0 - block


    @pypto.frontend.jit
    def kernel(x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((64, 512), pypto.DT_FP32)):
        out.move(tiles_then_scale(x))


    class ModelNew:  # a KernelBench module: the documents' style rules report here by default
        def forward(self, x):
            return x
    """)


def test_a_finding_in_a_helper_is_reported_there_and_names_the_kernel() -> None:
    (f,) = lint_source(HELPERS, kb=KB, pypto="0.2.0")
    assert (f.line, f.rule) == (5, "P5.tensor-left")
    assert f.message.endswith("(in helper `tiles_then_scale -> scale`, called from jit kernel `kernel`)")


def test_helpers_are_read_with_what_the_kernel_passes() -> None:
    info = _info(HELPERS)
    (kernel,) = info.kernels.values()
    by_name = {fn.name.value: h for fn, h in info.helpers.items()}
    assert set(by_name) == {"tiles_then_scale", "scale"}  # never_called is not kernel code
    assert by_name["scale"].tensor_params["block"].shape == (64, 512)
    assert by_name["scale"].tensor_params["block"].dtype == "fp32"
    assert "factor" not in by_name["scale"].tensor_params
    assert by_name["scale"].via == ("kernel", "tiles_then_scale")
    assert kernel.via == ()


def test_a_helper_called_with_two_shapes_has_no_shape() -> None:
    info = _info("""\
        import pypto


        def twice(t):
            return t * 2.0


        @pypto.frontend.jit
        def k(a: pypto.Tensor((8, 64), pypto.DT_FP32), b: pypto.Tensor((16, 64), pypto.DT_FP32),
              out: pypto.Tensor((8, 64), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 64)
            out.move(twice(a) + pypto.view(twice(b), [8, 64], [0, 0]))
        """)
    (helper,) = info.helpers.values()
    assert helper.tensor_params["t"].shape is None


def test_a_recursive_helper_is_read_once() -> None:
    info = _info("""\
        import pypto


        def down(t, n):
            return t if n == 0 else down(t * 0.5, n - 1)


        @pypto.frontend.jit
        def k(x: pypto.Tensor((8, 64), pypto.DT_FP32), out: pypto.Tensor((8, 64), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 64)
            out.move(down(x, 3))
        """)
    assert [fn.name.value for fn in info.helpers] == ["down"]


def test_a_helper_rebinding_its_own_parameter_is_not_an_output_rebind() -> None:
    src = textwrap.dedent("""\
        import pypto


        def normalise(out):
            out = out * 0.5
            return out


        @pypto.frontend.jit
        def k(x: pypto.Tensor((8, 64), pypto.DT_FP32), out: pypto.Tensor((8, 64), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 64)
            out.move(normalise(x))
        """)
    assert lint_source(src, kb=KB, pypto="0.2.0") == []


# ------------------------------------------------------------------------------ values
VALUES = """\
    import pypto

    M = 64
    SHAPE = (M, 2 * M)
    TWICE = [d * 2 for d in SHAPE]
    LOOP_A = LOOP_B
    LOOP_B = LOOP_A
    HUGE = 10 ** 10 ** 10
    DT = pypto.DT_FP16


    def ceil_div(a, b):
        return (a + b - 1) // b


    def make(n):
        HALF = n // 2

        @pypto.frontend.jit
        def k(x: pypto.Tensor([pypto.DYNAMIC, 128], DT), y: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
              z: pypto.Tensor[[M, 8], pypto.DT_BF16], out: pypto.Tensor(SHAPE, pypto.DT_FP32)):
            rows, cols = x.shape
            w = cols // 4
            blocks = ceil_div(M, 24)
            twice = w
            twice = w * 2
            out.move(x)

        return k
"""


@pytest.fixture(scope="module")
def values() -> tuple[ModuleInfo, object]:
    info = _info(VALUES)
    (k,) = info.kernels.values()
    return info, k


def _value(values: tuple[ModuleInfo, object], expr: str) -> object:
    info, k = values
    return info.const_value(cst.parse_expression(expr), k.scope)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("expr", "want"), [
    ("SHAPE", (64, 128)),
    ("TWICE", (128, 256)),
    ("cols", 128),                   # from `rows, cols = x.shape` of a declared tensor
    ("w", 32),
    ("blocks", 3),                   # a single-return helper of the module
    ("pypto.ceildiv(M, 24)", 3),
    ("rows", None),                  # a DYNAMIC axis
    ("HALF", None),                  # a factory parameter
    ("twice", None),                 # bound twice
    ("LOOP_A", None),                # a cycle
    ("HUGE", None),                  # refused, not computed
    ("range(10 ** 12)", None),       # not built
])
def test_compile_time_values(values: tuple[ModuleInfo, object], expr: str, want: object) -> None:
    assert _value(values, expr) == want


def test_declared_shapes_and_dtypes(values: tuple[ModuleInfo, object]) -> None:
    k = values[1]
    params = k.tensor_params  # type: ignore[attr-defined]
    assert (params["x"].rank, params["x"].shape, params["x"].dtype) == (2, (None, 128), "fp16")
    assert (params["y"].rank, params["y"].shape) == (None, None)  # `...`: the rank is not stated
    assert (params["z"].shape, params["z"].dtype) == ((64, 8), "bf16")  # Tensor[[...], DT]
    assert params["out"].shape == (64, 128)
