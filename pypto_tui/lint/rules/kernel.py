"""Kernel-body rules: no reshape (P2), one dim per kernel (P1), the reduction API, no pypto.cond.

Each of these is a construct the documents or the 0.2.0 compiler rule out inside a jit kernel;
outside kernels (forward, factories, helpers) they are ordinary Python and are left alone.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import (
    KernelInfo,
    Kind,
    call_arg,
    children,
    dotted,
    iter_load_names,
    iter_nodes,
    positional_args,
)
from pypto_tui.lint.base import Invalid, LintRule, example

_HEAD = """\
import pypto

R, C = 16, 256


@pypto.frontend.jit
def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, 1), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 256)
"""
# Kernel bodies start on line 9.


def _k(body: str) -> str:
    return _HEAD + textwrap.indent(example(body), "    ")


_RESHAPES = frozenset({"reshape", "flatten", "squeeze", "unsqueeze"})
_MAX_TRACE = 12


class KernelReshape(LintRule):
    CHECK = "lint.kernel_reshape"
    RULE = "P2.no-kernel-reshape"
    MESSAGE = "prefer reshaping in forward, before the call"
    VALID = (
        # PyPTO's documented in-kernel reshape: the storage relabelled (inplace=) or a ragged block
        # carried through (valid_shape=)
        _k("""\
            flat = pypto.reshape(x, [R * C], inplace=True)
            out.move(pypto.sum(pypto.reshape(flat, [R, C], inplace=True), 1, keepdim=True))
        """),
        _k("""\
            for i in pypto.loop(2):
                rows = pypto.min(8, R - i * 8)
                block = pypto.view(x, [8, C], [i * 8, 0], valid_shape=[rows, C])
                flat = pypto.reshape(block, [8 * C], valid_shape=[rows * C])
                back = pypto.reshape(flat * 2.0, [8, C], valid_shape=[rows, C])
                pypto.assemble(pypto.sum(back, 1, keepdim=True), [i * 8, 0], out)
        """),
        _k("""\
            out.move(pypto.sum(x, 1, keepdim=True))
        """),
        # pypto.view with a constant shape is the documented way to take a flat view
        _k("""\
            flat = pypto.view(x, [R * C], [0])
            out.move(pypto.sum(pypto.view(flat, [R, C], [0, 0]), 1, keepdim=True))
        """),
        # reshape in ModelNew.forward is the right place
        "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x.reshape(-1)\n",
        # a kernel that is the reshape (PyPTO's tests of reshape and unsqueeze): nothing else to move it to
        _k("""\
            y = pypto.reshape(pypto.view(x, [16, 1], [0, 0]), [16, 1])
            out.move(y)
        """),
        # computed data only the kernel has (PyPTO's RoPE interleave: reshape, transpose, reshape):
        # reported with --strict only
        _k("""\
            y = pypto.exp(x)
            pairs = pypto.reshape(y, [R, C // 2, 2])
            swapped = pypto.reshape(pypto.transpose(pairs, 1, 2), [R, C])
            out.move(pypto.sum(swapped, 1, keepdim=True))
        """),
    )
    INVALID = (
        # a library kernel (no ModelNew in the file): the caller reshapes
        Invalid(_k("""\
            flat = x.reshape([R * C])
            out.move(pypto.sum(flat, 0, keepdim=True))
        """), line=9, col=12, message="before the call"),
        # a view of the input, handed to a helper: still data the caller could reshape
        Invalid(example("""\
            import pypto
            import torch


            def rows(block):
                flat = pypto.reshape(block, [8 * 256])
                return pypto.sum(pypto.view(flat, [8, 256], [0, 0]), 1, keepdim=True)


            @pypto.frontend.jit
            def kernel(x: pypto.Tensor((16, 256), pypto.DT_FP32), out: pypto.Tensor((16, 1), pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(8, 256)
                for i in pypto.loop(2):
                    pypto.assemble(rows(pypto.view(x, [8, 256], [i * 8, 0])), [i * 8, 0], out)


            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    out = x.new_empty((16, 1))
                    kernel(x, out)
                    return out
            """), line=6, col=12, message="ModelNew.forward"),
        Invalid(_k("""\
            out.move(pypto.reshape(pypto.sum(x, 1), [R, 1]))
        """), line=9, strict=True, message="--strict only"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        name = self.info.pypto_call(node, *_RESHAPES)
        if any(a.keyword is not None and a.keyword.value in ("inplace", "valid_shape") for a in node.args):
            return  # the documented in-kernel forms
        if name is not None:
            what, src = f"pypto.{name}(...)", call_arg(node, 0, "input")
        elif (isinstance(node.func, cst.Attribute) and node.func.attr.value in _RESHAPES
              and self.info.kind_of(node.func.value, k) is Kind.TENSOR):
            what, src = f".{node.func.attr.value}(...)", node.func.value
        else:
            return
        if src is not None and self._input_data(src, k, 0) and not self._is_the_output(node, k):
            where = ("in ModelNew.forward" if self.model_new_module() else
                     "before the call (the caller hands the kernel the shape it computes on)")
            self.report(node, f"`{what}` of the kernel's input inside a jit kernel (0.2.0 accepts it; inside a "
                              f"kernel a reshape copies): reshape {where}, or use pypto.reshape(..., inplace=True)")
        elif self.ctx.strict:
            # computed data (a RoPE interleave, an op's result): only the kernel can reshape it, and
            # PyPTO documents the in-kernel reshape (pypto-reshape.md); the rule documents still forbid it
            self.report(node, f"`{what}` of data computed in the kernel (the rule documents forbid any in-kernel "
                              "reshape; 0.2.0 accepts it, PyPTO documents it): reported with --strict only; "
                              "pypto.reshape(..., inplace=True) relabels without a copy")

    def _is_the_output(self, node: cst.CSTNode, k: KernelInfo) -> bool:
        """The reshape is what the kernel computes: its result goes straight into an output parameter
        (`out.move(...)`, `out[:] = ...`, assembled into it, or through a local used once so), as
        in PyPTO's tests of reshape and unsqueeze themselves; moving it out would leave no kernel."""
        info = self.info
        p = info.parent(node)
        if isinstance(p, cst.Arg):
            call = info.parent(p)
            if not isinstance(call, cst.Call):
                return False
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value == "move":
                return isinstance(f.value, cst.Name) and f.value.value in k.tensor_params
            if info.pypto_call(call, "assemble") is not None and call_arg(call, 0, "input") is node:
                dst = call_arg(call, 2, "out")
                return isinstance(dst, cst.Name) and dst.value in k.tensor_params
            return False
        if not isinstance(p, cst.Assign) or len(p.targets) != 1:
            return False
        tgt = p.targets[0].target
        if isinstance(tgt, cst.Subscript):
            return isinstance(tgt.value, cst.Name) and tgt.value.value in k.tensor_params
        if not isinstance(tgt, cst.Name):
            return False
        uses = [n for n in iter_load_names(k.node.body) if n.value == tgt.value]
        return len(uses) == 1 and self._is_the_output(uses[0], k)

    def _input_data(self, expr: cst.BaseExpression, k: KernelInfo, depth: int) -> bool:
        """`expr` is data no op has computed yet, which the caller could reshape before the call: a
        jit kernel's tensor parameter, a view or slice of one, a local bound once to one, or a
        helper's parameter that every call in the module passes such data to."""
        if depth > _MAX_TRACE:
            return False
        info = self.info
        if isinstance(expr, cst.Subscript):
            return self._input_data(expr.value, k, depth + 1)
        if isinstance(expr, cst.Call):
            if info.pypto_call(expr, "view") is not None:
                src = call_arg(expr, 0, "input")
                return src is not None and self._input_data(src, k, depth + 1)
            f = expr.func
            if isinstance(f, cst.Attribute) and f.attr.value == "view" and info.kind_of(f.value, k) is Kind.TENSOR:
                return self._input_data(f.value, k, depth + 1)
            return False
        if not isinstance(expr, cst.Name):
            return False
        if expr.value in k.tensor_params:
            return not k.is_helper or self._helper_param_is_input(k, expr.value, depth)
        owner, bindings = info.lookup(expr.value, k.scope)
        if owner is not k.scope or not bindings:
            return False
        # the binding that reaches this use in straight-line code: the last one before it
        # (`block = pypto.view(x, ...)` then `block = pypto.reshape(block, ...)`)
        tree = info.tree
        before = [b for b in bindings if b.node in tree.end and tree.end[b.node] < tree.order.get(expr, -1)]
        if not before:
            return False
        last = max(before, key=lambda b: tree.order[b.node])
        return last.how == "assign" and last.value is not None and self._input_data(last.value, k, depth + 1)

    def _helper_param_is_input(self, k: KernelInfo, name: str, depth: int) -> bool:
        params = [p.name.value for p in k.node.params.params]
        if name not in params:
            return False
        index = params.index(name)
        sites = [c for c in self._calls() if self.info.called_function(c) is k.node]
        if not sites:
            return False
        for site in sites:
            caller = self.info.kernel_of(site)
            arg = call_arg(site, index, name)
            if caller is None or arg is None or not self._input_data(arg, caller, depth + 1):
                return False
        return True

    def _calls(self) -> list[cst.Call]:
        if not hasattr(self, "_all_calls"):
            self._all_calls = [n for n in iter_nodes(self.info.module, into_defs=True)
                               if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)]
        return self._all_calls


_DIM_NAMES = frozenset({
    "dim", "dims", "axis", "axes", "reduce_dim", "reduce_axis", "reduction_dim", "reduction_axis",
})


class DimBranch(LintRule):
    CHECK = "lint.dim_branch"
    RULE = "P1.single-dim-kernel"
    MESSAGE = "a branch on the reduction dim inside a kernel: write one kernel per dim"
    VALID = (
        _k("""\
            out.move(pypto.amax(x, 1, keepdim=True))
        """),
        # the factory picks the axis; the kernel itself has no branch
        """\
import pypto


def create_kernel(r, c, dim):
    @pypto.frontend.jit
    def kernel(x: pypto.Tensor((r, c), pypto.DT_FP32), out: pypto.Tensor((r, 1), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        out.move(pypto.amax(x, dim, keepdim=True))

    return kernel
""",
        # a branch on the loop position is not a dim branch
        _k("""\
            for i in pypto.loop(2):
                if pypto.is_loop_begin(i):
                    out.move(pypto.sum(pypto.view(x, [8, C], [0, 0]), 1, keepdim=True))
        """),
        # trace-time arithmetic on the axis (a negative dim made positive) builds no second kernel
        # body (PyPTO's quant_layer_norm, models/deepseek_v32_exp, hicann/pypto 883e7dfb)
        _k("""\
            actual_dim = dim + 2 if dim < 0 else dim
            out.move(pypto.sum(x, actual_dim, keepdim=True))
        """),
        # a branch whose arms call no pypto op chooses a view, not a kernel per dim
        # (PyPTO's _get_bias_view_3d, python/tests/st/operation/matmul)
        _k("""\
            if bias.dim == 2:
                b = bias[0:1, 0:C]
            else:
                b = bias[0, 0:1, 0:C]
            out.move(x + b)
        """),
    )
    INVALID = (
        Invalid("""\
import pypto


def create_kernel(r, c, dim):
    @pypto.frontend.jit
    def kernel(x: pypto.Tensor((r, c), pypto.DT_FP32), out: pypto.Tensor((r, 1), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        if dim == 1:
            out.move(pypto.amax(x, 1, keepdim=True))
        elif dim == 0:
            out.move(pypto.amax(x, 0, keepdim=True))

    return kernel
""", line=8, col=9),
        Invalid(_k("""\
            out.move(pypto.sum(x, 1, keepdim=True) if self.dim == 1 else pypto.sum(x, 0, keepdim=True))
        """), line=9),
    )

    @m.visit(m.If() | m.IfExp())
    def check_if(self, node: cst.If | cst.IfExp) -> None:
        if self.kernel_of(node) is None:
            return
        parent = self.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an elif: the chain was reported at its `if`
        named = _dim_name(node.test)
        if named is None or not self._calls_pypto(node):
            return
        self.report(node, f"branch on `{named}` inside a jit kernel: generate one kernel per fixed dim "
                          "(one factory per axis), not branches in one kernel")

    def _calls_pypto(self, node: cst.If | cst.IfExp) -> bool:
        """Whether an arm of the branch calls a pypto op or writes an output (a kernel body per dim);
        an arm that only does arithmetic or picks a view is trace-time Python."""
        arms = [node.body] if node.orelse is None else [node.body, node.orelse]
        return any(self.info.pypto_call(n) is not None
                   or (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "move")
                   for arm in arms for n in _walk(arm))


def _dim_name(test: cst.BaseExpression) -> str | None:
    for n in _walk(test):
        if isinstance(n, cst.Attribute) and n.attr.value in _DIM_NAMES:
            return dotted(n) or n.attr.value
    for name in iter_load_names(test):
        if name.value in _DIM_NAMES:
            return name.value
    return None


def _walk(node: cst.CSTNode):  # type: ignore[no-untyped-def]
    yield node
    for child in children(node):
        yield from _walk(child)


_REDUCTIONS = ("sum", "amax", "amin", "prod")


class ReduceApi(LintRule):
    CHECK = "lint.reduce_api"
    RULE = "API.single-dim-reduce"
    MESSAGE = "reductions take one int dim; there is no pypto.mean"
    VALID = (
        _k("""\
            out.move(pypto.sum(x, 1, keepdim=True) * (1.0 / C))
        """),
        _k("""\
            out.move(pypto.amax(x, dim=-1, keepdim=True))
        """),
        _k("""\
            out.move(x.sum(1, keepdim=True))
        """),
        # torch.mean in the baseline or forward is not a kernel
        "import torch\n\n\ndef reference(x):\n    return torch.mean(x, dim=(1, 2))\n",
    )
    INVALID = (
        Invalid(_k("""\
            out.move(pypto.mean(x, 1, keepdim=True))
        """), line=9, col=14, message="sum"),
        Invalid(_k("""\
            out.move(pypto.sum(x, (0, 1)))
        """), line=9, message="one int dim"),
        Invalid(_k("""\
            out.move(pypto.amax(x, dim=[1]))
        """), line=9),
        Invalid(_k("""\
            out.move(x.mean(1, keepdim=True))
        """), line=9),
        Invalid(_k("""\
            out.move(pypto.sum(x))
        """), line=9, message="needs one int dim"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        name = self.info.pypto_call(node)
        k = self.kernel_of(node)
        if name == "mean":
            self.report(node, "there is no pypto.mean: write `pypto.sum(x, dim, keepdim=...) * (1.0 / count)`")
            return
        if name in _REDUCTIONS:
            if any(a.star for a in node.args):
                return
            dim = call_arg(node, 1, "dim")
            if dim is None:
                self.report(node, f"pypto.{name} needs one int dim: `pypto.{name}(x, dim, keepdim=...)`")
                return
            self._check_dim(node, f"pypto.{name}", dim, k)
            return
        if k is None or not isinstance(node.func, cst.Attribute):
            return
        meth = node.func.attr.value
        if self.info.kind_of(node.func.value, k) is not Kind.TENSOR:
            return
        if meth == "mean":
            self.report(node, "there is no tensor mean in pypto: write `x.sum(dim, keepdim=...) * (1.0 / count)`")
        elif meth in _REDUCTIONS:
            pos = positional_args(node)
            dim = pos[0].value if pos else call_arg(node, 99, "dim")
            if dim is not None:
                self._check_dim(node, f".{meth}", dim, k)

    def _check_dim(self, node: cst.Call, what: str, dim: cst.BaseExpression, k: object) -> None:
        scope = self.info.scope_of(node)
        value = self.info.const_value(dim, scope)
        if isinstance(dim, cst.Tuple | cst.List) or isinstance(value, tuple):
            self.report(node, f"{what} takes one int dim, not `{cst.Module([]).code_for_node(dim)}`: merge "
                              "adjacent axes with a reshape in forward (O3) and reduce once, or reduce "
                              "one axis at a time")


class Cond(LintRule):
    CHECK = "lint.cond"
    RULE = "V020.no-cond"
    MESSAGE = "pypto.cond fails in a frontend jit kernel"
    VALID = (
        _k("""\
            for i in pypto.loop(2):
                if pypto.is_loop_begin(i):
                    out.move(pypto.sum(pypto.view(x, [8, C], [0, 0]), 1, keepdim=True))
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(2):
                if pypto.cond(i == 0):
                    out.move(pypto.sum(pypto.view(x, [8, C], [0, 0]), 1, keepdim=True))
        """), line=10, col=12),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        if self.info.pypto_call(node, "cond") is None or self.kernel_of(node) is None:
            return
        self.report(node, "pypto.cond(...) in a frontend jit kernel raises 'Test condition must be a "
                          "symbolic scalar or boolean' in 0.2.0: use a plain `if` on a symbolic scalar "
                          "(e.g. `if pypto.is_loop_begin(i):`)")
