"""PyPTO's API as a release has it: the names under `pypto.` and the jit decorator's form.

Which names and jit keywords a release has is pack data (lint.toml [[profile]]), so the same
module can be right for 0.2.1 and wrong for 0.2.0: `@pypto.jit` is an alias from 0.2.1 on, and
`new_ir=` a 0.2.1 keyword. These checks look at the whole module, not only kernels: a missing
name fails when the module is imported.
"""

from __future__ import annotations

import ast
import builtins
import difflib

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import dotted, iter_nodes
from pypto_tui.lint.base import Invalid, LintRule, Valid, example

# Namespaces under pypto whose members the api lists name (`frontend.jit`).
_NAMESPACES = ("frontend", "experimental")
# Names another check explains better (there is no pypto.mean: lint.reduce_api says what to write).
_EXPLAINED_ELSEWHERE = frozenset({"mean"})

_KERNEL = example("""\
    import pypto


    @pypto.frontend.jit
    def kernel(x: pypto.Tensor((16, 512), pypto.DT_FP32), out: pypto.Tensor((16, 512), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """)


class ApiNames(LintRule):
    CHECK = "lint.api_names"
    RULE = "API.known-name"
    MESSAGE = "this pypto name does not exist in the targeted release"
    VALID = (
        _KERNEL,
        Valid(_KERNEL.replace("@pypto.frontend.jit", "@pypto.jit"), pypto="0.2.1"),
        # names PyPTO's sources have today (the 0.2.1 list is generated from them)
        Valid(_KERNEL.replace("pypto.exp(x)", "pypto.cast(pypto.exp(x), pypto.DT_FP32, pypto.PrecisionType.HIGH)"),
              pypto="0.2.1"),
        # an alias and a from-import of names 0.2.0 has
        example("""\
            import pypto as pt
            from pypto.frontend import jit


            @jit
            def kernel(x: pt.Tensor((16,), pt.DT_FP32), out: pt.Tensor((16,), pt.DT_FP32)):
                pt.set_vec_tile_shapes(16)
                out.move(pt.sigmoid(x) * x)
            """),
        # a local variable that happens to be called pypto is not the package
        "def f(pypto):\n    return pypto.whatever\n",
    )
    INVALID = (
        Invalid(_KERNEL.replace("@pypto.frontend.jit", "@pypto.jit"), line=4, col=2, pypto="0.2.0",
                message="@pypto.frontend.jit"),
        Invalid(_KERNEL.replace("pypto.exp(x)", "pypto.expp(x)"), line=7, col=14, message="pypto.exp"),
        Invalid(_KERNEL.replace("pypto.exp(x)", "pypto.argmax(x, 1)"), line=7, pypto="0.2.0", message="0.2.0"),
        Invalid(_KERNEL.replace("pypto.exp(x)", "pypto.cast(pypto.exp(x), pypto.DT_FP32, pypto.PrecisionType.HIGH)"),
                line=7, pypto="0.2.0", message="pypto.PrecisionType"),
        Invalid(_KERNEL.replace("import pypto\n", "import pypto\nfrom pypto.frontend import jits\n"), line=2),
    )

    @m.visit(m.Attribute())
    def check_attribute(self, node: cst.Attribute) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # judge the whole chain once, at its outermost attribute
        q = self.info.qualify(node)
        if q is None or not q.startswith("pypto.") or not self._is_package(node):
            return
        self._check(node, q[len("pypto."):])

    @m.visit(m.ImportFrom())
    def check_import(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted(node.module) or ""
        if base != "pypto" and not base.startswith("pypto."):
            return
        prefix = base[len("pypto."):] if base != "pypto" else ""
        for alias in node.names:
            name = dotted(alias.name) or ""
            self._check(alias.name, f"{prefix}.{name}" if prefix else name)

    def _is_package(self, node: cst.Attribute) -> bool:
        """The chain starts at a name bound by an import (not a local called `pypto`)."""
        head: cst.BaseExpression = node
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name):
            return False
        _owner, bindings = self.info.lookup(head.value, self.info.scope_of(node))
        return bool(bindings) and all(b.how == "import" for b in bindings)  # type: ignore[union-attr]

    def _check(self, node: cst.CSTNode, path: str) -> None:
        parts = path.split(".")
        api = self.ctx.release.api
        name = parts[0] if parts[0] not in _NAMESPACES or len(parts) == 1 else f"{parts[0]}.{parts[1]}"
        if name in api or name in _EXPLAINED_ELSEWHERE:
            return
        release = self.ctx.release.pypto
        hint = self.ctx.settings.hints.get(name)
        if hint is None:
            close = difflib.get_close_matches(name, sorted(api), n=1, cutoff=0.75)
            hint = f"did you mean pypto.{close[0]}?" if close else "check PyPTO's API reference for this release"
        self.report(node, f"pypto.{name} does not exist in pypto {release}: {hint}")


def _jit_kernel(decorator: str) -> str:
    return _KERNEL.replace("@pypto.frontend.jit", decorator)


class JitDecorator(LintRule):
    CHECK = "lint.jit_decorator"
    RULE = "API.one-jit"
    ALSO_CITES = ("API.jit-options",)
    MESSAGE = "a kernel takes one jit decorator, with the keywords its release knows"
    VALID = (
        _KERNEL,
        _jit_kernel('@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})'),
        Valid(_jit_kernel("@pypto.frontend.jit(use_cache=False)"), pypto="0.2.0"),
        Valid(_jit_kernel("@pypto.frontend.jit(new_ir=True)"), pypto="0.2.1"),
        # options passed as a dict are not keywords the decorator sees one by one
        _jit_kernel("@pypto.frontend.jit(**OPTIONS)").replace("import pypto\n", "import pypto\n\nOPTIONS = {}\n"),
    )
    INVALID = (
        Invalid(_jit_kernel("@pypto.frontend.jit\n@pypto.frontend.jit"), line=5, col=1, message="2 jit decorators"),
        Invalid(_jit_kernel("@pypto.frontend.jit(new_ir=True)"), line=4, pypto="0.2.0", rule="API.jit-options",
                message="new_ir"),
        Invalid(_jit_kernel("@pypto.frontend.jit(use_cache=False)"), line=4, pypto="0.2.1", rule="API.jit-options",
                message="use_cache"),
    )

    @m.visit(m.FunctionDef())
    def check_def(self, node: cst.FunctionDef) -> None:
        decorators = self.info.jit_decorators(node)
        if len(decorators) > 1:
            self.report(decorators[1], f"`{node.name.value}` has {len(decorators)} jit decorators: the second wraps "
                                       "the compiled kernel and the module fails to import ('jit decorator can "
                                       "only be used on functions'); keep one")
        known = self.ctx.release.jit_options
        for d in decorators:
            if not isinstance(d.decorator, cst.Call):
                continue
            for a in d.decorator.args:
                if a.keyword is not None and a.keyword.value not in known:
                    self.report(a, f"jit has no `{a.keyword.value}=` in pypto {self.ctx.release.pypto}: it takes "
                                   f"{', '.join(sorted(known))}", rule="API.jit-options")


def bound_names(tree: ast.Module) -> set[str]:
    """Every name the file binds anywhere: imports, assignments, loop, with, except and comprehension
    targets, parameters (lambdas' too), defs, classes, global/nonlocal and match captures."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.alias):
            out.add(n.asname or n.name.split(".")[0])
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or (
                isinstance(n, ast.ExceptHandler) and n.name):
            out.add(n.name)  # type: ignore[arg-type]
        elif isinstance(n, ast.Global | ast.Nonlocal):
            out.update(n.names)
        elif isinstance(n, ast.MatchAs | ast.MatchStar) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
    return out


class KnownModules(LintRule):
    CHECK = "lint.known_modules"
    RULE = "API.known-module"
    MESSAGE = "a module name the file never imports"
    VALID = (
        _KERNEL,
        # names bound by a comprehension, a lambda, a parameter or a function-level import
        example("""\
            import pypto


            def shapes(ts):
                import math
                return [t.shape for t in ts], (lambda u: u.dtype), math.pi
            """),
        # dotted module paths in imports are not reads
        "from numpy.random import default_rng\nimport os.path as osp\n\nrng = default_rng(0)\np = osp.sep\n",
        # a function no pypto kernel calls may be another DSL's, which resolves its own names
        "import pypto\n\n\ndef other_dsl(x):\n    return vf.create_mask(x)\n",
        # a star import may bind anything: nothing is judged
        "from pypto import *\n\nx = frontend.jit\n",
    )
    INVALID = (
        Invalid(_KERNEL.replace("out.move(pypto.exp(x))", "out.move(pyto.exp(x))"), line=7, col=14,
                message="did you mean pypto"),
        Invalid(_KERNEL.replace("pypto.set_vec_tile_shapes", "ptyo.set_vec_tile_shapes"), line=6, col=5,
                message="`ptyo`"),
    )

    @m.visit(m.Module())
    def check_module(self, node: cst.Module) -> None:
        try:
            tree = ast.parse(node.code)
        except (SyntaxError, ValueError, RecursionError):
            return
        if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
            return
        known = bound_names(tree) | set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}
        modules = sorted(self.info.aliases)
        said: set[str] = set()
        # `from numpy.random import x`, `import a.b as c`: module paths, not names read
        in_imports = {id(d) for n in iter_nodes(node, into_defs=True) if isinstance(n, cst.Import | cst.ImportFrom)
                      for d in iter_nodes(n)}
        for n in iter_nodes(node, into_defs=True):
            if not isinstance(n, cst.Attribute) or not isinstance(n.value, cst.Name) or id(n) in in_imports:
                continue
            head = n.value.value
            if head in known or head in said:
                continue
            close = difflib.get_close_matches(head, modules, n=1, cutoff=0.6)
            if not close and self.kernel_of(n) is None and self.info.scope_of(n) is not self.info.module_scope:
                continue  # a function of another DSL may resolve its own names; a misspelling is still said
            said.add(head)
            hint = f"did you mean {close[0]}?" if close else "import it first"
            self.report(n.value, f"`{head}` is not imported or defined in this file: Python stops with NameError "
                                 f"before anything is compiled; {hint}")
