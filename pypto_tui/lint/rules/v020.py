"""The pypto 0.2.0 traps: code that compiles and silently computes nothing (research note §1.1, §1.7).

In 0.2.0 a jit kernel takes its outputs as annotated parameters. Rebinding such a parameter
(`out = expr`) is plain Python: the compiled graph has no task and `out` keeps its old contents.
Moving a local accumulator into `out` after a `pypto.loop`, or rebinding the accumulator inside
the loop, leaves `out` unwritten too. A return annotation or `return` is refused outright.
These rules run only for flavours whose kernels take output parameters.
"""

from __future__ import annotations

import re
import textwrap

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import KernelInfo, Kind, _target_names, call_arg, iter_load_names, iter_nodes
from pypto_tui.lint.base import Invalid, LintRule, Valid, example

_HEAD = """\
import pypto

R, C = 16, 4096
CH = 512


@pypto.frontend.jit
def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, CH), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 512)
"""
# Kernel bodies start on line 10.


def _k(body: str) -> str:
    return _HEAD + textwrap.indent(example(body), "    ")


_OUT_NAME = re.compile(r"^(out|output|outs|outputs|result|res|dst)(_\w+)?$|_out$|^out\d+$")


def written_params(info_k: KernelInfo, qualify) -> set[str]:  # type: ignore[no-untyped-def]
    """Tensor parameters the kernel writes: `p.move(...)`, `p[...] = ...`, assemble into `p`."""
    out: set[str] = set()
    params = set(info_k.tensor_params)
    for node in iter_nodes(info_k.node.body):
        if isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value in ("move", "assemble") and isinstance(f.value, cst.Name):
                out.add(f.value.value)
            if qualify(f) == "pypto.assemble":
                dst = call_arg(node, 2, "dst")
                if isinstance(dst, cst.Name):
                    out.add(dst.value)
        elif isinstance(node, cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name):
                    out.add(t.target.value.value)
    return out & params


class OutRebind(LintRule):
    CHECK = "lint.out_rebind"
    RULE = "V020.out-rebind"
    MESSAGE = "rebinding an output parameter computes nothing"
    OUT_PARAM_ONLY = True
    VALID = (
        _k("""\
            out.move(pypto.view(x, [R, CH], [0, 0]) * 2.0)
        """),
        _k("""\
            out[:] = pypto.exp(pypto.view(x, [R, CH], [0, 0]))
        """),
        # a branch the constant test never takes is not traced
        _k("""\
            mode = 0
            if mode == 0:
                out.move(pypto.view(x, [R, CH], [0, 0]) * 2.0)
            else:
                out = pypto.view(x, [R, CH], [0, 0]) * 2.0
        """),
        # rebinding an *input* parameter is harmless
        _k("""\
            x = pypto.view(x, [R, CH], [0, 0])
            out.move(pypto.exp(x))
        """),
        # an input called y is not an output, even though it is rebound
        example("""\
            import pypto


            @pypto.frontend.jit
            def add(x: pypto.Tensor((16,), pypto.DT_FP32), y: pypto.Tensor((32,), pypto.DT_FP32),
                    out: pypto.Tensor((16,), pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(16)
                y = pypto.view(y, [16], [0])
                out.move(x + y)
            """),
        # the documents' flavour returns a local output: no output parameters to rebind
        Valid(example("""\
            import pypto


            @pypto.jit
            def kernel(x: pypto.Tensor((16, 512), pypto.DT_FP32)) -> pypto.Tensor((16, 512), pypto.DT_FP32):
                pypto.set_vec_tile_shapes(16, 512)
                output = pypto.tensor([16, 512], pypto.DT_FP32)
                output = pypto.exp(x)
                return output
            """), flavour="docs"),
    )
    INVALID = (
        Invalid(_k("""\
            out = pypto.exp(pypto.view(x, [R, CH], [0, 0]))
        """), line=10, col=5, message="out.move("),
        Invalid(_k("""\
            out += pypto.view(x, [R, CH], [0, 0])
        """), line=10),
        Invalid(example("""\
            import pypto


            @pypto.frontend.jit
            def mm(a: pypto.Tensor((128, 256), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16),
                   c: pypto.Tensor((128, 512), pypto.DT_FP32)):
                pypto.set_cube_tile_shapes([64, 128], [64, 256], [128, 128])
                c = pypto.matmul(a, b, pypto.DT_FP32)
            """), line=8),
    )

    def __init__(self, ctx):  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._outputs: dict[cst.FunctionDef, set[str]] = {}

    def outputs(self, k: KernelInfo) -> set[str]:
        if k.node not in self._outputs:
            names = written_params(k, self.info.qualify)
            tensors = list(k.tensor_params)
            names |= {p for p in tensors if _OUT_NAME.search(p)}
            if len(tensors) >= 2:
                names.add(tensors[-1])  # 0.2.0 convention: outputs come after the inputs
            self._outputs[k.node] = names
        return self._outputs[k.node]

    @m.visit(m.Assign() | m.AugAssign() | m.AnnAssign())
    def check_assign(self, node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> None:
        k = self.kernel_of(node)
        if k is None or k.is_helper:
            return  # a helper rebinding its own parameter is ordinary Python
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        outs = self.outputs(k)
        for t in targets:
            for name in _target_names(t):
                if name.value in outs and self.info.scope_of(node) is k.scope:
                    value = node.value if node.value is not None else None
                    code = cst.Module([]).code_for_node(value) if value is not None else "..."
                    if isinstance(node, cst.AugAssign):
                        op = cst.Module([]).code_for_node(node.operator).strip().rstrip("=")
                        code = f"{name.value} {op} {code}"
                    if len(code) > 40:
                        code = "..."
                    self.report(name, f"`{name.value} = ...` rebinds the output parameter '{name.value}': "
                                      f"0.2.0 compiles it to nothing and leaves the output untouched; write "
                                      f"`{name.value}.move({code})`")


def _updated_names(body: cst.CSTNode, qualify) -> set[str]:  # type: ignore[no-untyped-def]
    """Names a loop body updates: `a.move(...)`, `a[...] = ...`, assemble into `a`, `a = ...`."""
    out: set[str] = set()
    for node in iter_nodes(body):
        if isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value in ("move", "assemble") and isinstance(f.value, cst.Name):
                out.add(f.value.value)
            if qualify(f) == "pypto.assemble":
                dst = call_arg(node, 2, "dst")
                if isinstance(dst, cst.Name):
                    out.add(dst.value)
        elif isinstance(node, cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name):
                    out.add(t.target.value.value)
                out.update(n.value for n in _target_names(t.target))
        elif isinstance(node, cst.AugAssign):
            out.update(n.value for n in _target_names(node.target))
    return out


class MoveAfterLoop(LintRule):
    CHECK = "lint.move_after_loop"
    RULE = "V020.move-after-loop"
    MESSAGE = "a loop-carried local moved into the output after the loop is lost"
    OUT_PARAM_ONLY = True
    VALID = (
        # accumulate in the output parameter itself
        _k("""\
            out.move(pypto.zeros(R, CH))
            for i in pypto.loop(C // CH):
                out.move(out + pypto.view(x, [R, CH], [0, i * CH]))
        """),
        # a local accumulator written out with assemble after the loop
        _k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc.move(acc + pypto.view(x, [R, CH], [0, i * CH]))
            pypto.assemble(acc, [0, 0], out)
        """),
        # moved inside the loop
        _k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc.move(acc + pypto.view(x, [R, CH], [0, i * CH]))
                out.move(acc)
        """),
        # per-iteration temporaries are fine
        _k("""\
            for i in pypto.loop(R // 4):
                chunk = pypto.view(x, [4, CH], [i * 4, 0])
                chunk = pypto.exp(chunk)
                pypto.assemble(chunk, [i * 4, 0], out)
        """),
        # a Python range loop is unrolled: rebinding is fine there
        _k("""\
            acc = pypto.zeros(R, CH)
            for j in range(C // CH):
                acc = acc + pypto.view(x, [R, CH], [0, j * CH])
            out.move(acc)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc.move(acc + pypto.view(x, [R, CH], [0, i * CH]))
            out.move(acc)
        """), line=13, col=5, message="'acc'"),
        Invalid(_k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                pypto.assemble(acc + pypto.view(x, [R, CH], [0, i * CH]), [0, 0], acc)
            out[:] = acc
        """), line=13),
        Invalid(_k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc.move(acc + pypto.view(x, [R, CH], [0, i * CH]))
            out.move(acc * (1.0 / C))
        """), line=13),
        Invalid(_k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc = acc + pypto.view(x, [R, CH], [0, i * CH])
                out.move(acc)
        """), line=12, col=9, message="not carried"),
        Invalid(_k("""\
            acc = pypto.zeros(R, CH)
            for i in pypto.loop(C // CH):
                acc += pypto.view(x, [R, CH], [0, i * CH])
                out.move(acc)
        """), line=12),
    )

    @m.visit(m.FunctionDef())
    def check_kernel(self, node: cst.FunctionDef) -> None:
        k = self.info.kernels.get(node)
        if k is None:
            return
        for loop in k.loops:
            if self.info.loops_around(loop):
                continue  # the outer loop is judged; nested_loop reports the nesting
            self._check_loop(k, loop)

    def _check_loop(self, k: KernelInfo, loop: cst.For) -> None:
        before = {
            name for name, bindings in k.scope.bindings.items()
            if any(self.info.before(b.node, loop) for b in bindings)
        }
        # (b) loop-carried rebinding inside the loop: `acc = acc + part` / `acc += part`
        for node in iter_nodes(loop.body):
            if isinstance(node, cst.Assign | cst.AugAssign):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for t in targets:
                    if not isinstance(t, cst.Name) or t.value not in before or t.value in k.tensor_params:
                        continue
                    if k.kinds.get(t.value) is not Kind.TENSOR:
                        continue  # a Python counter: counted once per trace, nothing is lost
                    reads = {n.value for n in iter_load_names(node.value)}
                    if isinstance(node, cst.AugAssign) or t.value in reads:
                        self.report(node, f"`{t.value}` is rebound inside a pypto.loop: the new value is not "
                                          "carried between iterations in 0.2.0 and the output is never "
                                          f"written; use `{t.value}.move(...)` or accumulate in the output "
                                          "parameter")
        # (a) `out.move(local)` / `out[:] = local` after the loop, `local` updated inside it
        carried = (_updated_names(loop.body, self.info.qualify) & before) - set(k.tensor_params)
        if not carried:
            return
        for node in iter_nodes(k.node.body):
            value = self._move_into_param(node, k)
            if value is None or not self.info.after_end(node, loop) or self.info.loops_around(node):
                continue
            used = sorted({n.value for n in iter_load_names(value)} & carried)
            if used:
                self.report(node, f"the local '{used[0]}' is updated in the pypto.loop above and moved into "
                                  "the output after it: 0.2.0 silently drops it; accumulate in the output "
                                  "parameter inside the loop, or write it with pypto.assemble(...) after the loop")

    def _move_into_param(self, node: cst.CSTNode, k: KernelInfo) -> cst.BaseExpression | None:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "move":
            recv = node.func.value
            if isinstance(recv, cst.Name) and recv.value in k.tensor_params and node.args:
                return node.args[0].value
        if isinstance(node, cst.Assign):
            for t in node.targets:
                tgt = t.target
                if (isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name)
                        and tgt.value.value in k.tensor_params):
                    return node.value
        return None


class ReturnInKernel(LintRule):
    CHECK = "lint.return_in_kernel"
    RULE = "V020.out-param"
    MESSAGE = "a 0.2.0 jit kernel has no return annotation and no return"
    OUT_PARAM_ONLY = True
    VALID = (
        _k("""\
            out.move(pypto.view(x, [R, CH], [0, 0]))
        """),
        # a helper nested in the factory may return; only the kernel may not
        example("""\
            import pypto


            def create(n):
                def tile() -> tuple:
                    return (n,)

                @pypto.frontend.jit
                def kernel(x: pypto.Tensor((n,), pypto.DT_FP32), out: pypto.Tensor((n,), pypto.DT_FP32)):
                    pypto.set_vec_tile_shapes(*tile())
                    out.move(pypto.exp(x))

                return kernel
            """),
    )
    INVALID = (
        Invalid(example("""\
            import pypto


            @pypto.frontend.jit
            def kernel(x: pypto.Tensor((16, 512), pypto.DT_FP32), out: pypto.Tensor((16, 512), pypto.DT_FP32)) -> None:
                pypto.set_vec_tile_shapes(16, 512)
                out.move(pypto.exp(x))
            """), line=5, message="annotation"),
        Invalid(_k("""\
            y = pypto.exp(pypto.view(x, [R, CH], [0, 0]))
            return y
        """), line=11, col=5, message="out.move("),
    )

    @m.visit(m.FunctionDef())
    def check_def(self, node: cst.FunctionDef) -> None:
        if node in self.info.kernels and node.returns is not None:
            self.report(node.returns, "return annotation on a jit kernel: 0.2.0 refuses it ('Return annotation "
                                      "is not allowed'); take the output as an annotated parameter instead")

    @m.visit(m.Return())
    def check_return(self, node: cst.Return) -> None:
        for a in self.info.ancestors(node):
            if isinstance(a, cst.FunctionDef):
                if a in self.info.kernels:
                    self.report(node, "`return` in a jit kernel: 0.2.0 refuses it ('Return statements are not "
                                      "allowed'); write the output parameter with `out.move(...)` or "
                                      "pypto.assemble(...)")
                return
