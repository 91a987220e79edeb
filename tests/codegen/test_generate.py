"""The generated modules for every fixture task: golden files, stability, compile, ModelNew's
signature, forward's duties, and our own lint.

After an intended change, refresh the golden files with
`PYPTO_TUI_UPDATE_GOLDEN=1 pytest tests/codegen` and review the diff.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
TASKS = TESTS / "fixtures" / "tasks"
GOLDEN = TESTS / "golden"
TASK_NAMES = sorted(p.stem for p in TASKS.glob("*.py"))
FLAVOURS = ("pypto-0.2.0", "docs")

UPDATE = os.environ.get("PYPTO_TUI_UPDATE_GOLDEN") == "1"

# What ModelNew.forward may call (P2.forward-duties): shape bookkeeping, views, allocation, the kernel.
FORWARD_TORCH_OK = {"torch.empty", "torch.zeros", "torch.empty_like", "torch.zeros_like"}
FORWARD_METHODS_OK = {"reshape", "contiguous", "dim", "view"}
FORWARD_BUILTINS_OK = {"float", "int", "tuple", "len"}


def _golden_path(task: str, flavour: str):  # type: ignore[no-untyped-def]
    return GOLDEN / f"{task}.py" if flavour == "pypto-0.2.0" else GOLDEN / flavour / f"{task}.py"


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_golden(generated, task, flavour):
    g = generated(task, flavour)
    assert g.supported, g.reason
    path = _golden_path(task, flavour)
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {path}: run with PYPTO_TUI_UPDATE_GOLDEN=1 to create it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(g.source, encoding="utf-8")
    assert g.source == path.read_text(encoding="utf-8"), f"{path} differs: PYPTO_TUI_UPDATE_GOLDEN=1 if intended"


def test_every_pattern_has_a_golden(generated):
    patterns = {generated(t).pattern for t in TASK_NAMES}
    assert {"A", "B", "C", "D", "E", "softmax", "reduction"} <= patterns


@pytest.mark.parametrize("task", TASK_NAMES)
def test_stable_bytes(fresh, generated, task):
    """A fresh pipeline for the same design gives byte-identical source."""
    again = fresh(task)
    assert again.source == generated(task).source
    assert again.constants == generated(task).constants


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_parses_and_compiles(generated, task, flavour):
    src = generated(task, flavour).source
    code = compile(src, f"{task}.py", "exec")
    tree = ast.parse(src)
    assert code.co_filename == f"{task}.py"
    assert _class(tree, "ModelNew").name == "ModelNew"  # raises StopIteration when there is none
    assert any(isinstance(n, ast.FunctionDef) and n.name.startswith("create_") for n in tree.body)


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _signature(fn: ast.FunctionDef) -> str:
    return ast.unparse(fn.args)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_model_new_init_signature_is_models(generated, task):
    model = _class(ast.parse((TASKS / f"{task}.py").read_text()), "Model")
    new = _class(ast.parse(generated(task).source), "ModelNew")
    assert _signature(_method(new, "__init__")) == _signature(_method(model, "__init__"))
    assert _signature(_method(new, "forward")) == _signature(_method(model, "forward"))


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_forward_does_no_torch_arithmetic(generated, task, flavour):
    """forward asserts, reshapes, allocates and calls the kernel: no torch maths (P2.forward-duties)."""
    tree = ast.parse(generated(task, flavour).source)
    fwd = _method(_class(tree, "ModelNew"), "forward")
    factories = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("create_")}
    for node in ast.walk(fwd):
        if isinstance(node, ast.Call):
            name = _dotted(node.func) or ""
            if name in FORWARD_TORCH_OK or name in FORWARD_BUILTINS_OK or name in factories or name == "kernel":
                continue
            assert isinstance(node.func, ast.Attribute) and node.func.attr in FORWARD_METHODS_OK, \
                f"forward calls {ast.unparse(node.func)}"
        if isinstance(node, ast.BinOp):
            # only arithmetic on shapes and scalars read from self, never on a tensor
            text = ast.unparse(node)
            assert ".shape" in text or "self." in text, f"forward computes {text}"
        assert not isinstance(node, ast.UnaryOp) or isinstance(node.operand, ast.Constant)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_constants_name_the_choices(generated, task):
    g = generated(task)
    consts = g.constants
    if g.pattern == "B":
        assert {"CUBE_M", "CUBE_K", "CUBE_N"} <= set(consts)
    else:
        tiles = [k for k in consts if k.endswith("TILE_SHAPE")]
        assert tiles, consts
        for k in tiles:
            nums = consts[k]["numbers"]
            assert {"prod", "auto_tiles", "contiguous_bytes"} <= set(nums)
            assert "P4.tile-budget" in consts[k]["rules"]
            assert f"{k} = " in g.source
    if "LOOP_COUNT" in consts:
        assert {"basic_batch", "iterations", "tail"} <= set(consts["LOOP_COUNT"]["numbers"])
        assert "P6.loop-tail" in consts["LOOP_COUNT"]["rules"]
        assert "ceil_div(" in g.source and "if TAIL > 0:" in g.source


def test_pattern_per_task(generated):
    expected = {
        "elu": "A", "scalar_mul_large": "A", "matmul_tall": "B", "matmul_transposed_b": "B",
        "batched_matmul": "B", "group_norm": "C", "rms_norm": "C", "batch_norm": "C", "mse_loss": "D",
        "kl_div_batchmean": "D", "triplet_margin": "D", "frobenius_scale": "E", "softmax_rows": "softmax",
        "max_over_dim": "reduction", "sum_over_channels": "reduction", "mean_spatial": "reduction",
    }
    assert {t: generated(t).pattern for t in expected} == expected


# ---------------------------------------------------------------------------- the documents' specifics
def test_elu_alpha_comes_from_init(generated):
    src = generated("elu").source
    assert "create_elu_kernel(flat_size, float(self.alpha))" in src
    assert "out.move(pypto.maximum(x, 0.0) + (pypto.exp(pypto.minimum(x, 0.0)) - 1.0) * alpha)" in src


def test_scalar_mul_loops_and_closes_over_the_scalar(generated):
    src = generated("scalar_mul_large").source
    assert "def create_mul_kernel(flat_size, s):" in src
    assert "kernel = create_mul_kernel(flat_size, float(s))" in src
    assert "pypto.assemble(A_chunk * s, [off], out)" in src
    # the estimate's loop count (elementwise loops rank by it, ranking = "auto"): 128 x 524288
    numbers = generated("scalar_mul_large").constants["LOOP_COUNT"]["numbers"]
    assert numbers["basic_batch"] == 524288 and "ceil_div(67108864, 128)" in generated("scalar_mul_large").source


def test_matmul_transposed_b_uses_b_trans(generated):
    src = generated("matmul_transposed_b").source
    assert "b_trans=True" in src
    fwd = _method(_class(ast.parse(src), "ModelNew"), "forward")
    assert not any(isinstance(n, ast.Attribute) and n.attr in ("T", "mT") for n in ast.walk(fwd))


def test_batched_matmul_is_one_2d_product_per_batch_element(generated):
    """B.batched-loop: pypto 0.2.0 computes one 3-D matmul wrong once the cube tiles split M or N
    (measured), so the batches come in stacked along the rows and each is a 2-D product."""
    src = generated("batched_matmul").source
    assert "pypto.matmul(A, B" not in src
    assert 'for bi in pypto.loop(0, batch, 1, name="BATCH_LOOP", idx_name="bi"):' in src
    assert "a_bi = pypto.view(A, [m, k], [bi * m, 0])" in src and "b_bi = pypto.view(B, [k, n], [bi * k, 0])" in src
    assert "A: pypto.Tensor((out_rows, k), pypto.DT_FP32)" in src
    assert "A_rows = A.reshape(-1, k).contiguous()" in src and "out_rows = A_rows.shape[0]" in src
    assert "return out.reshape(batch, m, n)" in src


def test_kl_div_direction_is_target_to_prediction(generated):
    src = generated("kl_div_batchmean").source
    assert "targets * (pypto.log(targets) - pypto.log(predictions))" in src
    assert "INV_BATCH = 1.0 / batch" in src and "batch = predictions.shape[0]" in src


def test_mean_is_sum_times_reciprocal(generated):
    src = generated("mean_spatial").source
    assert "pypto.mean" not in src
    assert "pypto.sum(x_chunk, 2) * INV_COUNT" in src or "pypto.sum(x, 2) * INV_COUNT" in src
    assert "x.reshape(x.shape[0], x.shape[1], -1)" in src


def test_keepdim_as_the_baseline(generated):
    assert "pypto.sum(x_chunk, 1, keepdim=True)" in generated("sum_over_channels").source
    assert "pypto.amax(x, 1)" in generated("max_over_dim").source


def test_triplet_has_two_tile_phases(generated):
    g = generated("triplet_margin")
    assert g.constants["PHASE1_TILE_SHAPE"]["value"] == [4, 4096]
    assert g.constants["PHASE2_TILE_SHAPE"]["value"] == [128]
    assert g.source.count("pypto.set_vec_tile_shapes(") == 2


def test_global_accumulator_never_moved_after_the_loop(generated):
    src = generated("frobenius_scale").source
    assert "sq_sum = pypto.zeros([1, 1], dtype=pypto.DT_FP32)" in src
    assert ("sq_sum.move(sq_sum + pypto.sum(pypto.reshape(pypto.sum(x_chunk * x_chunk, 1, keepdim=True), "
            "[1, BASIC_BATCH]), 1, keepdim=True))") in src
    assert "out.move(" not in src


def test_batch_norm_loops_over_channels_with_a_stepped_down_tile(kb_rules):
    """The documents' pick (1, 1, 16384) is stepped down to fit BatchNorm's buffers."""
    from pypto_tui.design import Design, Pipeline, kernel_of

    g = kernel_of(Pipeline(kb_rules, Design(task=str(TASKS / "batch_norm.py"))))
    assert g.constants["TILE_SHAPE"]["value"] == [1, 1, 8192]
    assert "O1.ub-step-down" in g.constants["TILE_SHAPE"]["rules"]
    assert "[batch, BASIC_BATCH, spatial], [0, off, 0]" in g.source
    assert "pypto-lint: ignore[lint.loop_axis]" in g.source


def test_docs_flavour_writes_in_pypto_idiom(generated):
    """PyPTO's own idiom: out[:] = value and RunMode names, the output still a parameter (0.2.0
    refuses a returned output, so the kernel never returns one)."""
    src = generated("elu", "docs").source
    assert "out[:] = " in src and ".move(" not in src
    assert '{"run_mode": pypto.RunMode.SIM if _PYPTO_RUN_MODE == 1 else pypto.RunMode.NPU}' in src
    assert "->" not in src.split("def elu_kernel", 1)[1].split(":\n", 1)[0]
    assert "return out\n" not in src and "kernel(x_flat, out)" in src


# ---------------------------------------------------------------------------- lint
def _lint():  # type: ignore[no-untyped-def]
    try:
        from pypto_tui.lint.engine import lint_source
    except ImportError:
        pytest.skip("pypto_tui.lint is not there yet")
    return lint_source


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_generated_modules_lint_clean(kb, generated, task, flavour):
    lint_source = _lint()
    findings = lint_source(generated(task, flavour).source, f"{task}.py", kb, flavour,
                           (TASKS / f"{task}.py").read_text())
    assert [f"{f.line}:{f.col} {f.rule} {f.message}" for f in findings] == []
