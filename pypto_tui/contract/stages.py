"""One kernel of a module plan as a task of its own: a KernelBench-style source whose `forward`
computes the kernel's nodes from the values it reads (issue 21).

A kernel group (plan.KernelGroup) of an operator graph becomes the task a level-1 design is made
for: its reads are forward's inputs (a task input, a parameter created in __init__, or the output
of an earlier kernel, each with its shape), constants are written in, and the nodes are written
back as the torch calls the contract reader understands. The existing steps then plan and write
that kernel exactly as for a level-1 task. Pure text in, text out: no libcst.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pypto_tui.contract.graph import OpGraph, OpNode
from pypto_tui.errors import Unsupported
from pypto_tui.ops import views as V

TORCH_UNARY = ("relu", "sigmoid", "tanh", "exp", "log", "abs", "sqrt", "rsqrt", "sin", "cos", "erf", "log1p",
               "expm1", "sign", "floor", "ceil", "round", "square", "reciprocal", "neg", "clamp", "clamp_min",
               "clamp_max")
F_UNARY = {"leaky_relu": "leaky_relu", "gelu": "gelu", "elu": "elu", "celu": "celu", "selu": "selu",
           "softplus": "softplus", "softsign": "softsign", "hardtanh": "hardtanh", "hardsigmoid": "hardsigmoid",
           "hardswish": "hardswish", "swish": "silu", "mish": "mish", "logsigmoid": "logsigmoid",
           "softshrink": "softshrink", "hardshrink": "hardshrink", "tanhshrink": "tanhshrink", "relu6": "relu6"}
IDENTITY = ("contiguous", "clone", "float", "detach", "identity")
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
         "eq": "==", "ne": "!="}
REDUCE = {"sum": "sum", "mean": "mean", "amax": "amax", "amin": "amin", "max_dim": "amax", "min_dim": "amin",
          "prod": "prod", "logsumexp": "logsumexp"}
DTYPES = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16"}


# Locals the level-1 patterns' forward code binds (a matmul unpacks `batch, m, k = a.shape`): a
# stage input of that name would be overwritten before the kernel reads it (an attention score's
# `bmm(q, k.transpose(1, 2))` did: 'int' object has no attribute 'shape').
PATTERN_LOCALS = frozenset({"m", "k", "n", "k_b", "batch", "batch_b", "out", "out_rows", "kernel", "rows", "cols"})


def arg_name(vid: str) -> str:
    """A forward parameter name for a value id (`gemm.weight` -> `gemm_weight`; `k` -> `k_in`)."""
    name = re.sub(r"\W", "_", vid)
    name = name if name.isidentifier() and not name[0].isdigit() else f"v_{name}"
    return f"{name}_in" if name in PATTERN_LOCALS else name


def _lit(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, tuple | list):
        return "(" + ", ".join(_lit(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _kw(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    return "".join(f", {k}={_lit(attrs[k])}" for k in keys if attrs.get(k) is not None)


MODULE_ANCHORS = ("conv", "conv_transpose", "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool",
                  "batch_norm", "group_norm", "layer_norm", "instance_norm", "rms_norm")


def module_of(n: OpNode) -> tuple[str, str] | None:
    """(nn type, self attribute) of a node read from an `nn.<Type>` module call, else None."""
    parts = n.spelling.split()
    if len(parts) == 2 and parts[0].startswith("nn.") and parts[1].startswith("self."):
        return parts[0][3:], parts[1][5:]
    return None


def stage_source(graph: OpGraph, nodes: tuple[str, ...], reads: tuple[str, ...], writes: str,
                 title: str) -> tuple[str, list[str], list[str]]:
    """(task source, forward's parameters in order: the value ids of the tensors it reads, the
    `self.` modules the stage builds: the composed module hands it the task's own ones)."""
    text: dict[str, str] = {}
    params: list[str] = []
    inputs: list[str] = []
    modules: list[str] = []
    init: list[str] = []
    owned: set[str] = set()
    for nid in nodes:
        n = graph.node(nid)
        mod = module_of(n) if n is not None and n.op in MODULE_ANCHORS else None
        if n is None or mod is None:
            continue
        kind, attr = mod
        args = ", ".join(f"{k}={_lit(v)}" for k, v in n.attrs.items() if k not in ("nd", "device", "dtype"))
        init.append(f"self.{attr} = nn.{kind}({args})")
        modules.append(attr)
        owned.update(i for i in n.inputs if i.startswith(attr + "."))
        text[f"module:{nid}"] = f"self.{attr}"
    for vid in reads:
        if vid in owned:
            continue
        v = graph.value(vid)
        if v is not None and v.kind in ("const", "scalar"):
            if not isinstance(v.value, int | float) or isinstance(v.value, bool):
                raise Unsupported(f"the constant {v.value!r} ({v.source or vid}) has no kernel form")
            text[vid] = _lit(v.value)
            continue
        shape = graph.shape_of(vid)
        if shape is None:
            raise Unsupported(f"the shape of {vid} is unknown")
        node = graph.node(vid)
        dtype = (v.dtype if v is not None else (node.dtype if node is not None else None)) or "fp32"
        if dtype not in DTYPES:
            raise Unsupported(f"{vid} is {dtype}: the stage kernels take floating-point tensors")
        name = arg_name(vid)
        text[vid] = name
        params.append(vid)
        dims = ", ".join(str(s) for s in shape)
        inputs.append(f"torch.randn({dims}, dtype={DTYPES[dtype]})" if shape else
                      f"torch.randn((), dtype={DTYPES[dtype]})")
    for nid in nodes:
        n = graph.node(nid)
        assert n is not None
        if f"module:{nid}" in text:
            text[nid] = f"{text[f'module:{nid}']}({text[n.inputs[0]]})"
            continue
        text[nid] = _torch(n, [text[i] for i in n.inputs])
    body = text[writes]
    args = ", ".join(arg_name(p) for p in params)
    init_text = "".join(f"\n        {line}" for line in init)
    source = f'''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """{title}"""

    def __init__(self):
        super().__init__(){init_text}

    def forward(self, {args}):
        return {body}


def get_inputs():
    return [{", ".join(inputs)}]


def get_init_inputs():
    return []
'''
    return source, params, modules


def _torch(n: OpNode, a: list[str]) -> str:
    """One node as torch text over its inputs' texts."""
    op, at = n.op, n.attrs
    if op == "view":
        out = a[0]
        for step in at.get("steps", ()):
            s = V.step_of(step)
            out = f"({out})" + (f".expand({_lit(s.shape)[1:-1]})" if s.kind == "expand" else V.torch_text(s))
        return out
    if op in INFIX:
        return f"({a[0]} {INFIX[op]} {a[1]})"
    if op in ("maximum", "minimum"):
        return f"torch.{op}({a[0]}, {a[1]})"
    if op == "where":
        return f"torch.where({a[0]}, {a[1]}, {a[2]})"
    if op in IDENTITY:
        return a[0]
    if op == "dropout":
        if not at.get("p"):
            return a[0]
        raise Unsupported(f"{n.spelling}: dropout(p={at.get('p')}) in training mode (the module's default) zeroes "
                          "random elements, so no kernel can match the baseline; in eval mode it is the identity")
    if op == "rotate_half" and n.shape:  # written out as PyTorch code does; the reader folds it back
        h = n.shape[-1] // 2
        return f"torch.cat((-({a[0]})[..., {h}:], ({a[0]})[..., :{h}]), dim=-1)"
    if op in TORCH_UNARY:
        return f"torch.{op}({a[0]}{_kw(at, ('min', 'max'))})"
    if op in F_UNARY:
        keys = tuple(k for k in at if k not in ("inplace",))
        return f"F.{F_UNARY[op]}({a[0]}{_kw(at, keys)})"
    if op == "linear":
        return f"torch.matmul({a[0]}, {a[1]}.t())"
    if op in ("matmul", "bmm"):
        return f"torch.{op}({a[0]}, {a[1]})"
    if op in ("softmax", "log_softmax"):
        return f"torch.{op}({a[0]}, dim={_lit(at.get('dim'))})"
    if op == "transpose":
        return f"{a[0]}.transpose({_lit(at.get('dim0', -2))}, {_lit(at.get('dim1', -1))})"
    if op in REDUCE:
        return f"torch.{REDUCE[op]}({a[0]}{_kw(at, ('dim',))}, keepdim={bool(at.get('keepdim'))})"
    if op in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool") and n.spelling.startswith("F."):
        keys = tuple(k for k in at if k not in ("nd", "return_indices"))
        return f"{n.spelling}({a[0]}{_kw(at, keys)})"
    raise Unsupported(f"{n.spelling} ({op}, a {n.role}) inside a chain is not scaffolded yet")
