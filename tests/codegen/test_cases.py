"""Tasks beyond the fixtures: the activations pattern A knows, what cannot be scaffolded (reported,
never raised), and loops whose chunks do not divide the axis."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TASK = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self{init}):
        super().__init__(){body}

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init_values}]
'''


def write_task(tmp_path: Path, name: str, expr: str, shape: str = "16, 256", args: str = "x", init: str = "",
               body: str = "", init_values: str = "") -> Path:
    inputs = ", ".join(f"torch.randn({shape})" for _ in args.split(", "))
    p = tmp_path / f"{name}.py"
    p.write_text(TASK.format(init=init, body=body, args=args, expr=expr, inputs=inputs, init_values=init_values),
                 encoding="utf-8")
    return p


ACTIVATIONS = {
    "relu": "F.relu(x)", "relu6": "F.relu6(x)", "leaky_relu": "F.leaky_relu(x, negative_slope=0.2)",
    "selu": "F.selu(x)", "celu": "F.celu(x, alpha=0.7)", "sigmoid": "torch.sigmoid(x)", "tanh": "torch.tanh(x)",
    "softplus": "F.softplus(x)", "softsign": "F.softsign(x)", "hardtanh": "F.hardtanh(x, min_val=-0.5, max_val=0.5)",
    "hardsigmoid": "F.hardsigmoid(x)", "hardswish": "F.hardswish(x)", "silu": "F.silu(x)", "mish": "F.mish(x)",
    "logsigmoid": "F.logsigmoid(x)", "softshrink": "F.softshrink(x, lambd=0.3)", "tanhshrink": "F.tanhshrink(x)",
    "exp": "torch.exp(x)", "abs": "torch.abs(x)", "neg": "torch.neg(x)", "square": "torch.square(x)",
    "sin": "torch.sin(x)", "cos": "torch.cos(x)", "expm1": "torch.expm1(x)", "sign": "torch.sign(x)",
    "clamp": "torch.clamp(x, min=-0.5, max=0.8)", "one_minus": "1.0 - x", "expression": "torch.relu(x) * 2.0 - x / 3.0",
    "scalar_over": "2.0 / (x.abs() + 1.0)", "log": "torch.log(x.abs() + 1.0)",
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_scaffold_as_pattern_a(tmp_path, fresh, name):
    g = fresh(str(write_task(tmp_path, name, ACTIVATIONS[name])))
    assert g.supported, g.reason
    assert g.pattern == "A"
    tree = ast.parse(g.source)
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("create_"))
    for node in ast.walk(kernel):  # P5 in the kernel: no unary minus on a tensor, no scalar left of - or /
        if isinstance(node, ast.UnaryOp):
            assert isinstance(node.operand, ast.Constant), ast.unparse(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub | ast.Div):
            assert not isinstance(node.left, ast.Constant), ast.unparse(node)


def test_one_minus_x_is_rewritten(tmp_path, fresh):
    g = fresh(str(write_task(tmp_path, "one_minus", "1.0 - x")))
    assert "x * (-1.0) + 1.0" in g.source


def test_a_scalar_from_init_is_a_factory_parameter(tmp_path, fresh):
    p = write_task(tmp_path, "lrelu", "F.leaky_relu(x, negative_slope=self.slope)", init=", slope: float = 0.1",
                   body="\n        self.slope = slope", init_values="0.2")
    g = fresh(str(p))
    assert "def create_leaky_relu_kernel(flat_size, negative_slope):" in g.source
    assert "create_leaky_relu_kernel(flat_size, float(self.slope))" in g.source


@pytest.mark.parametrize(("name", "expr", "reason"), [
    ("gelu_tanh_in_expression", "F.gelu(x, approximate='tanh') * 2.0", "gelu(approximate='tanh')"),
    ("logcumsumexp", "torch.logcumsumexp(x, dim=1)", "patterns take cumprod, cumsum"),
    ("argmax", "torch.argmax(x)", "no dim"),
])
def test_unsupported_is_reported_not_raised(tmp_path, fresh, name, expr, reason):
    g = fresh(str(write_task(tmp_path, name, expr)))
    assert not g.supported
    assert g.source == ""
    assert reason in g.reason


def test_a_conv_scaffolds_and_its_unsupported_variants_say_why(tmp_path, fresh):
    p = write_task(tmp_path, "conv", "self.conv(x)", shape="2, 3, 16, 16",
                   body="\n        self.conv = nn.Conv2d(3, 8, 3)")
    g = fresh(str(p))
    assert g.supported and g.pattern == "window", g.reason
    p = write_task(tmp_path, "conv_reflect", "self.conv(x)", shape="2, 3, 16, 16",
                   body="\n        self.conv = nn.Conv2d(3, 8, 3, padding=1, padding_mode='reflect')")
    g = fresh(str(p))
    assert not g.supported and "padding_mode='reflect'" in g.reason
    p = write_task(tmp_path, "adaptive", "self.pool(x)", shape="2, 3, 16, 16",
                   body="\n        self.pool = nn.AdaptiveAvgPool2d(4)")
    g = fresh(str(p))
    assert not g.supported and "adaptive" in g.reason


# ---------------------------------------------------------------------------- loop tails (P6.loop-tail)
def test_a_loop_whose_chunks_do_not_divide_the_axis_has_a_constant_tail(tmp_path, fresh):
    p = write_task(tmp_path, "scale", "x * 3.0", shape="1000, 3001")
    g = fresh(str(p), tile=[1024], loop_count=16)
    loop = g.constants["LOOP_COUNT"]["numbers"]
    assert (loop["basic_batch"], loop["iterations"], loop["tail"]) == (187563, 16, 187555)
    src = g.source
    assert "for bi in pypto.loop(0, MAIN_ITERS, 1" in src
    assert "x_tail = pypto.view(x, [TAIL], [TAIL_OFFSET])" in src
    assert "pypto.assemble(x_tail * 3.0, [TAIL_OFFSET], out)" in src
    assert "def create_mul_kernel(flat_size):" in src  # a literal scalar stays a literal
    assert "MAIN_ITERS = flat_size // BASIC_BATCH" in src


def test_the_divisor_choice_picks_a_count_that_divides(tmp_path, fresh):
    p = write_task(tmp_path, "scale", "x * 3.0", shape="1000, 3001")
    g = fresh(str(p), tile=[1024], loop_count=16, loop_tail="divisor")
    n = g.constants["LOOP_COUNT"]
    assert 3001000 % n["value"] == 0
    assert n["numbers"]["tail"] == 0


def _simulate_views(total: int, count: int) -> list[tuple[int, int]]:
    """The (offset, size) of every view the generated loop + tail reads, from the factory's arithmetic."""
    basic = (total + count - 1) // count
    main = total // basic
    views = [(i * basic, basic) for i in range(main)]
    tail = total - main * basic
    if tail > 0:
        views.append((main * basic, tail))
    return views


@pytest.mark.parametrize("total", [1, 7, 16, 1000, 3001000, 67108864])
@pytest.mark.parametrize("count", [1, 8, 16, 32, 64, 128])
def test_views_cover_the_axis_exactly_and_never_run_past_the_end(total, count):
    views = _simulate_views(total, count)
    covered = 0
    for off, size in views:
        assert off == covered and size > 0 and off + size <= total
        covered += size
    assert covered == total
