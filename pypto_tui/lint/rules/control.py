"""Control flow the kernel parser takes: which loops, which min/max, where unrolling goes.

A jit kernel is Python that is traced, not run: a `pypto.loop` index is a symbolic scalar, a
Python `for` is unrolled at trace time, and some Python is simply not there (`while`). These
checks apply to kernels and to the helpers they call.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from libcst.metadata import PositionProvider

from pypto_tui.lint.analysis import call_arg, iter_nodes
from pypto_tui.lint.base import Invalid, LintRule, Valid, example
from pypto_tui.lint.rules._examples import RAGGED_ROWS, ROWS, in_kernel
from pypto_tui.lint.rules.operators import MODEL_NEW_TAIL


def _k(body: str) -> str:
    return in_kernel(body, ROWS)


# What a Python `for` may run over in a kernel; the parser refuses these container kinds.
_REFUSED_ITERABLES = (cst.Dict, cst.Set, cst.DictComp, cst.SetComp, cst.SimpleString, cst.FormattedString,
                      cst.ConcatenatedString)
_DICT_VIEWS = frozenset({"items", "keys", "values"})


class KernelLoops(LintRule):
    CHECK = "lint.kernel_loops"
    RULE = "API.kernel-loops"
    MESSAGE = "a kernel loops with pypto.loop or a Python for over range, a list or a tuple"
    VALID = (
        _k("""\
            for i in pypto.loop(R // 16):
                pypto.assemble(pypto.exp(pypto.view(x, [16, C], [i * 16, 0])), [i * 16, 0], out)
        """),
        # a Python for over a list or range is unrolled when the kernel is traced
        _k("""\
            for off in [0, 32]:
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [off, 0])), [off, 0], out)
            for j in range(2):
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [j * 32, 0])), [j * 32, 0], out)
        """),
        # outside a kernel, any Python goes
        "def host(n):\n    while n > 1:\n        n //= 2\n    return {k: v for k, v in {1: 2}.items()}\n",
        # a helper the kernel calls on plain ints, naming nothing of pypto, runs while the kernel is
        # traced (it computes the unroll list): not kernel code
        _k("""\
            for i in pypto.loop(R // 16, unroll_list=halvings(4)):
                pypto.assemble(pypto.exp(pypto.view(x, [16, C], [i * 16, 0])), [i * 16, 0], out)
        """).replace("@pypto.frontend.jit", "def halvings(n):\n    out = []\n    while n:\n        out.append(n)\n"
                     "        n //= 2\n    return out\n\n\n@pypto.frontend.jit"),
    )
    INVALID = (
        Invalid(_k("""\
            b = 0
            while b < 2:
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [b * 32, 0])), [b * 32, 0], out)
                b = b + 1
        """), line=11, col=5, message="while"),
        Invalid(_k("""\
            for off, _ in {0: 0, 32: 1}.items():
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [off, 0])), [off, 0], out)
        """), line=10, col=19, message="dict"),
        Invalid(_k("""\
            for i in pypto.loop(2):
                for j in range(i + 1):
                    pypto.assemble(pypto.exp(pypto.view(x, [32, C], [i * 32, 0])), [i * 32, 0], out)
        """), line=11, message="range() of a symbolic value"),
    )

    @m.visit(m.While())
    def check_while(self, node: cst.While) -> None:
        if self.kernel_of(node) is not None:
            self.report(node, "`while` inside a jit kernel: the kernel parser has no while loops ('While is not "
                              "supported by the PTO parser'); loop with pypto.loop(...) or a Python for over range()")

    @m.visit(m.For())
    def check_for(self, node: cst.For) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        it = node.iter
        if isinstance(it, _REFUSED_ITERABLES) or (
            isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value in _DICT_VIEWS
            and isinstance(it.func.value, cst.Dict | cst.DictComp)
        ):
            self.report(it, "a kernel's Python for runs over range(), a list, a tuple or an iterator; a dict, set or "
                            "string fails when the kernel is traced ('Loop iterator must be range Iterator, or "
                            "list/tuple'): iterate over a list of the values")
            return
        if isinstance(it, cst.Call) and self.info.qualify(it.func) == "range":
            for a in it.args:
                why = self.info.symbolic_reason(a.value, k)
                if why is not None:
                    self.report(it, f"range() of a symbolic value ({why}): the kernel parser unrolls range() when "
                                    "it traces the kernel and refuses a bound it cannot know; use pypto.loop(...)")
                    return


class BuiltinMinMax(LintRule):
    CHECK = "lint.builtin_minmax"
    RULE = "V020.builtin-minmax"
    MESSAGE = "builtin min()/max() of a symbolic value fails in a 0.2.0 kernel"
    VALID = (
        in_kernel(RAGGED_ROWS),
        # compile-time ints: builtin min is plain Python
        _k("""\
            rows = min(B, R)
            pypto.assemble(pypto.exp(pypto.view(x, [rows, C], [0, 0])), [0, 0], out)
            pypto.assemble(pypto.exp(pypto.view(x, [R - rows, C], [rows, 0])), [rows, 0], out)
        """),
        # builtin min of a symbolic value works from 0.2.1 on
        Valid(_k("""\
            for i in pypto.loop(3):
                rows = min(B, R - i * B)
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), pypto="0.2.1"),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(3):
                rows = min(B, R - i * B)
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, col=16, pypto="0.2.0", message="pypto.min(B, R - i * B)"),
        Invalid(example("""\
            import pypto


            @pypto.frontend.jit
            def kernel(x: pypto.Tensor([pypto.DYNAMIC, 512], pypto.DT_FP32),
                       out: pypto.Tensor([pypto.DYNAMIC, 512], pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(8, 512)
                rows = x.shape[0]
                first = max(rows, 16)
                out.move(pypto.exp(x) * 1.0 + first * 0.0)
            """), line=9, pypto="0.2.0", message="dynamic axis"),
    )

    @m.visit(m.Call(func=m.Name("min") | m.Name("max")))
    def check_call(self, node: cst.Call) -> None:
        k = self.kernel_of(node)
        if k is None or self.info.qualify(node.func) not in ("min", "max"):
            return
        name = node.func.value  # type: ignore[attr-defined]
        owner, _ = self.info.lookup(name, self.info.scope_of(node))
        if owner is not None:
            return  # a local function called min
        for a in node.args:
            why = self.info.symbolic_reason(a.value, k)
            if why is not None:
                args = ", ".join(cst.Module([]).code_for_node(x.value) for x in node.args)
                self.report(node, f"builtin {name}() of a symbolic value ({why}) fails in pypto 0.2.0 ('Not concrete "
                                  f"value'): write `pypto.{name}({args})`")
                return


class UnrollInnermost(LintRule):
    CHECK = "lint.unroll_innermost"
    RULE = "P6.unroll-innermost"
    MESSAGE = "unroll only the innermost pypto.loop"
    VALID = (
        _k("""\
            for i in pypto.loop(2):
                for j, n in pypto.loop_unroll(0, 2, 1, unroll_list=[2, 1]):
                    block = pypto.view(x, [32, 256 * n], [i * 32, j * 256])
                    pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
        """),
        # unroll_list of [1] unrolls nothing
        _k("""\
            for i in pypto.loop(0, 2, 1, unroll_list=[1]):
                for j in pypto.loop(2):
                    block = pypto.view(x, [32, 256], [i * 32, j * 256])
                    pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for i, n in pypto.loop_unroll(0, 2, 1, unroll_list=[2, 1]):
                for j in pypto.loop(2):
                    block = pypto.view(x, [32 * n, 256], [i * 32, j * 256])
                    pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
        """) + MODEL_NEW_TAIL, line=10, col=5, message="line 11"),
        # a library kernel (PyPTO's tests of loop_unroll): --strict only (probe unroll_outer_loop runs)
        Invalid(_k("""\
            for i, n in pypto.loop_unroll(0, 2, 1, unroll_list=[2, 1]):
                for j in pypto.loop(2):
                    block = pypto.view(x, [32 * n, 256], [i * 32, j * 256])
                    pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
        """), line=10, col=5, strict=True),
    )

    @m.visit(m.For())
    def check_for(self, node: cst.For) -> None:
        if not self.info.is_pypto_loop(node) or self.kernel_of(node) is None or not self._unrolls(node):
            return
        inner = next((n for n in iter_nodes(node.body) if n is not node and self.info.is_pypto_loop(n)), None)
        if inner is None:
            return
        if not self.docs_advice_applies():
            return  # the documents' advice (0.2.0 runs it: probe unroll_outer_loop): a ModelNew's, or --strict
        line = self.get_metadata(PositionProvider, inner).start.line
        self.report(node, f"this pypto.loop unrolls and holds the pypto.loop on line {line}: each unroll factor copies "
                          "everything inside it; unroll only the innermost loop")

    def _unrolls(self, loop: cst.For) -> bool:
        call = loop.iter
        assert isinstance(call, cst.Call)
        factors = call_arg(call, 99, "unroll_list")
        if factors is None:
            return False
        value = self.info.const_value(factors, self.info.scope_of(loop))
        if isinstance(value, tuple):
            return any(f != 1 for f in value)
        return True


class LoopOptions(LintRule):
    CHECK = "lint.loop_options"
    RULE = "API.loop-options"
    MESSAGE = "a pypto.loop keyword this release ignores"
    VALID = (
        _k("""\
            for i in pypto.loop(0, 2, 1, name="rows", idx_name="i", submit_before_loop=True):
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [i * 32, 0])), [i * 32, 0], out)
        """),
        Valid(_k("""\
            for i in pypto.loop(2, parallel=True):
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [i * 32, 0])), [i * 32, 0], out)
        """), pypto="0.2.1"),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(2, parallel=True):
                pypto.assemble(pypto.exp(pypto.view(x, [32, C], [i * 32, 0])), [i * 32, 0], out)
        """), line=10, col=28, pypto="0.2.0", message="parallel"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        if self.info.pypto_call(node, "loop", "loop_unroll") is None:
            return
        known = self.ctx.release.loop_options
        for a in node.args:
            if a.keyword is not None and a.keyword.value not in known:
                self.report(a, f"pypto {self.ctx.release.pypto}'s pypto.loop ignores `{a.keyword.value}=`: the kernel "
                               f"runs as if it were not there (it acts on {', '.join(sorted(known))})")
