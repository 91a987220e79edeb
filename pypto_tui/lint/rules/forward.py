"""ModelNew rules (P1, P2): forward only asserts, reshapes, allocates and calls the kernel; and
`ModelNew.__init__` takes exactly the task's `Model.__init__` parameters.

Torch work in forward is work the kernel does not do: it hides the kernel's real cost and
correctness. What forward may do is listed here once (`ALLOWED_TORCH`, `ALLOWED_METHODS`):
shape bookkeeping and views (reshape/view/flatten/squeeze/unsqueeze/contiguous), output
allocation (torch.empty/zeros and their _like forms) and the kernel call. Layout changes that
copy data (permute, transpose, .T, expand) and dtype conversions count as computation.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from pypto_tui.contract.model import Signature
from pypto_tui.contract.signature import init_params_of, method
from pypto_tui.lint.analysis import Kind, ModuleInfo, Scope, children, iter_nodes, join, numeric_literal
from pypto_tui.lint.base import Invalid, LintRule, Valid, example

ALLOWED_TORCH = frozenset({
    "torch.empty", "torch.zeros", "torch.empty_like", "torch.zeros_like", "torch.empty_strided", "torch.full",
    "torch.Size", "torch.device", "torch.is_tensor", "torch.no_grad", "torch.inference_mode",
    "torch.finfo", "torch.iinfo", "torch.get_default_dtype",
})
ALLOWED_METHODS = frozenset({
    "reshape", "view", "view_as", "reshape_as", "contiguous", "flatten", "unflatten", "unsqueeze",
    "squeeze", "dim", "size", "numel", "nelement", "ndimension", "stride", "is_contiguous",
    "new_empty", "new_zeros", "detach", "data_ptr", "element_size", "storage_offset",
})
_SHAPE_METHODS = frozenset({"dim", "size", "numel", "nelement", "ndimension", "stride", "is_contiguous",
                            "data_ptr", "element_size", "storage_offset"})
_NON_TENSOR_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"})
_NON_TENSOR_TORCH = frozenset({"torch.Size", "torch.device", "torch.finfo", "torch.iinfo"})
_BUILTINS = frozenset({"len", "tuple", "list", "int", "float", "bool", "isinstance", "range", "min", "max",
                       "abs", "round", "str", "print", "ceil_div", "getattr", "hasattr", "type"})


class _ForwardTypes:
    """Which names in ModelNew.forward hold torch tensors (a small flow-insensitive inference)."""

    def __init__(self, info: ModuleInfo, fn: cst.FunctionDef) -> None:
        self.info = info
        self.scope: Scope = info.scopes[fn]
        self.kinds: dict[str, Kind] = {}
        ps = fn.params
        params = [*ps.posonly_params, *ps.params, *ps.kwonly_params]
        for i, p in enumerate(params):
            if i == 0 and p.name.value == "self":
                self.kinds["self"] = Kind.UNKNOWN
                continue
            ann = self.info.qualify(p.annotation.annotation) if p.annotation else None
            has_number = p.default is not None and numeric_literal(p.default) is not None
            if ann in ("int", "float", "bool", "str") or has_number:
                self.kinds[p.name.value] = Kind.SCALAR
            else:
                self.kinds[p.name.value] = Kind.TENSOR
        param_kinds = dict(self.kinds)
        for _ in range(6):
            changed = False
            for name, bindings in self.scope.bindings.items():
                ks = [self.kind(b.value) if b.value is not None and b.how == "assign" else Kind.UNKNOWN
                      for b in bindings]
                if name in param_kinds:
                    ks.append(param_kinds[name])
                new = join(ks)
                if self.kinds.get(name) is not new:
                    self.kinds[name] = new
                    changed = True
            if not changed:
                break

    def kind(self, expr: cst.BaseExpression) -> Kind:
        info = self.info
        if isinstance(expr, cst.Name):
            return self.kinds.get(expr.value, Kind.UNKNOWN)
        if isinstance(expr, cst.Integer | cst.Float):
            return Kind.SCALAR
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("T", "mT", "H", "mH") and self.kind(expr.value) is Kind.TENSOR:
                return Kind.TENSOR
            return Kind.UNKNOWN
        if isinstance(expr, cst.Call):
            q = info.qualify(expr.func)
            if q is not None and q.startswith("torch."):
                return Kind.UNKNOWN if q in _NON_TENSOR_TORCH else Kind.TENSOR
            if isinstance(expr.func, cst.Attribute) and self.kind(expr.func.value) is Kind.TENSOR:
                return Kind.SCALAR if expr.func.attr.value in _SHAPE_METHODS else Kind.TENSOR
            if q in _BUILTINS or (q or "").startswith("math."):
                return Kind.UNKNOWN
            if any(self.kind(a.value) is Kind.TENSOR for a in expr.args):
                return Kind.TENSOR  # the kernel's output (documents' flavour) or a helper's
            return Kind.UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            return join([self.kind(expr.left), self.kind(expr.right)])
        if isinstance(expr, cst.UnaryOperation):
            return self.kind(expr.expression)
        if isinstance(expr, cst.Subscript):
            return Kind.TENSOR if self.kind(expr.value) is Kind.TENSOR else Kind.UNKNOWN
        return Kind.UNKNOWN


def _forward_methods(cls: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name]


def _model(code: str) -> str:
    return example(code)


_FORWARD_OK = _model("""\
    import torch
    import torch.nn as nn


    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            assert x.dim() == 2
            assert tuple(x.shape) == (16, 16384)
            b, n = x.shape[0], x.shape[1]
            flat = x.reshape(-1).contiguous()
            out = torch.empty_like(flat)
            kernel = create_kernel(b * n)
            kernel(flat, out)
            return out.reshape(b, n)
    """)


class ForwardTorch(LintRule):
    CHECK = "lint.forward_torch"
    RULE = "P2.forward-duties"
    MESSAGE = "torch computation in ModelNew.forward"
    VALID = (
        _FORWARD_OK,
        _model("""\
            import torch


            class ModelNew(torch.nn.Module):
                def __init__(self, dim: int = 1):
                    super().__init__()
                    self.dim = dim

                def forward(self, x):
                    assert x.dim() == 3 and x.size(1) > 0
                    out = torch.empty((x.shape[0], 1, x.shape[2]), dtype=x.dtype)
                    self._kernel(x.contiguous(), out)
                    return out.squeeze(1)
            """),
        # other classes (the baseline Model) may compute with torch
        _model("""\
            import torch


            class Model(torch.nn.Module):
                def forward(self, x):
                    return torch.softmax(x, dim=1) * 2.0
            """),
    )
    INVALID = (
        Invalid(_model("""\
            import torch


            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    out = torch.empty_like(x)
                    kernel(x, out)
                    return out * 2.0
            """), line=8, col=16, message="out * 2.0"),
        Invalid(_model("""\
            import torch
            import torch.nn.functional as F


            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    x = F.relu(x)
                    out = torch.empty_like(x)
                    kernel(x.contiguous(), out)
                    return out
            """), line=7, col=13, message="F.relu"),
        Invalid(_model("""\
            import torch


            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    out = torch.empty((x.shape[0], 1))
                    kernel(x, out)
                    return out.sum()
            """), line=8, message=".sum("),
        Invalid(_model("""\
            import torch


            class ModelNew(torch.nn.Module):
                def forward(self, a, b):
                    out = torch.empty((a.shape[0], b.shape[0]))
                    kernel(a, b.T.contiguous(), out)
                    return out
            """), line=7, message=".T"),
        Invalid(_model("""\
            import torch


            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    y = self.kernel(x)
                    return torch.mean(y, dim=0)
            """), line=7, message="torch.mean"),
    )

    @m.visit(m.ClassDef(name=m.Name("ModelNew")))
    def check_class(self, node: cst.ClassDef) -> None:
        for fn in _forward_methods(node, "forward"):
            if fn not in self.info.scopes:
                continue
            types = _ForwardTypes(self.info, fn)
            self._walk(fn.body, types)

    def _walk(self, node: cst.CSTNode, t: _ForwardTypes) -> None:
        if isinstance(node, cst.Assert | cst.FunctionDef | cst.ClassDef | cst.Lambda):
            return
        reason = self._reason(node, t)
        if reason is not None:
            code = cst.Module([]).code_for_node(node).strip().replace("\n", " ")
            if len(code) > 50:
                code = code[:47] + "..."
            self.report(node, f"`{code}` {reason} in ModelNew.forward: forward only asserts, reshapes, "
                              "allocates the output and calls the kernel; move the computation into the kernel")
            return
        for child in children(node):
            self._walk(child, t)

    def _reason(self, node: cst.CSTNode, t: _ForwardTypes) -> str | None:
        if isinstance(node, cst.BinaryOperation) and Kind.TENSOR in (t.kind(node.left), t.kind(node.right)):
            return "is torch arithmetic"
        if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not) and (
            t.kind(node.expression) is Kind.TENSOR
        ):
            return "is torch arithmetic"
        if isinstance(node, cst.Comparison) and any(
            t.kind(e) is Kind.TENSOR for e in (node.left, *(c.comparator for c in node.comparisons))
        ):
            return "is a torch comparison"
        if isinstance(node, cst.AugAssign) and Kind.TENSOR in (t.kind(node.target), t.kind(node.value)):
            return "is torch arithmetic"
        if isinstance(node, cst.Call):
            q = self.info.qualify(node.func)
            if q is not None and q.startswith("torch.") and q not in ALLOWED_TORCH:
                return "computes with torch"
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value not in ALLOWED_METHODS and (
                t.kind(f.value) is Kind.TENSOR
            ):
                return "computes with torch"
        if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT", "H", "mH") and (
            t.kind(node.value) is Kind.TENSOR
        ):
            return "copies a transposed layout with torch (use the kernel's b_trans)"
        return None


# ------------------------------------------------------------------------------ init signature
def init_signature(cls: cst.ClassDef) -> Signature:
    """The parameters of `cls.__init__` after self, read as the contract reads Model's."""
    init = method(cls, "__init__")
    return Signature(init=init_params_of(init.params)) if init is not None else Signature()


def find_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    for node in iter_nodes(module, into_defs=True):
        if isinstance(node, cst.ClassDef) and node.name.value == name:
            return node
    return None


_TASK = _model("""\
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, dim: int, keepdim: bool = False):
            super().__init__()
            self.dim = dim

        def forward(self, x):
            return x.sum(dim=self.dim, keepdim=True)
    """)


class InitSignatureRule(LintRule):
    CHECK = "lint.init_signature"
    RULE = "P1.init-signature"
    MESSAGE = "ModelNew.__init__ must take exactly the parameters of Model.__init__"
    NEEDS_TASK = True
    VALID = (
        Valid(_model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def __init__(self, dim, keepdim=False):
                    super().__init__()
                    self.dim = dim
            """), task=_TASK),
        Valid(_model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def forward(self, x):
                    return x
            """), task=_model("""\
            import torch.nn as nn


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
            """)),
        # without a task file nothing is compared
        _model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def __init__(self, m, n):
                    super().__init__()
            """),
    )
    INVALID = (
        Invalid(_model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def __init__(self, m, n, dim):
                    super().__init__()
            """), line=5, col=9, task=_TASK, message="(self, dim, keepdim=False)"),
        Invalid(_model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def __init__(self, dim, keepdim=True):
                    super().__init__()
            """), line=5, task=_TASK),
        Invalid(_model("""\
            import torch.nn as nn


            class ModelNew(nn.Module):
                def forward(self, x):
                    return x
            """), line=4, col=7, task=_TASK, message="has no __init__"),
    )

    @m.visit(m.ClassDef(name=m.Name("ModelNew")))
    def check_class(self, node: cst.ClassDef) -> None:
        want = self.ctx.task_init
        if want is None:
            return
        have = init_signature(node)
        if have.key() == want.key():
            return
        inits = _forward_methods(node, "__init__")
        where: cst.CSTNode = inits[-1].name if inits else node.name
        mine = f"ModelNew.__init__{have.render()}" if inits else "ModelNew has no __init__"
        self.report(where, f"{mine} but the task's Model.__init__ is {want.render()}: the harness builds "
                           "ModelNew(*get_init_inputs()); take exactly Model's parameters and read shapes "
                           "in forward")
