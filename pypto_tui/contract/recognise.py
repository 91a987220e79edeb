"""Which operator a forward computes: pattern matching on the expression tree (no libcst).

The matchers read the *call* (P0.api-semantics): arguments are bound to the torch signature by
position and keyword, transforms applied to an argument are recorded (`kl_div(log(p), t)` has
`input_transform = "log"`), and the roles of the inputs come from their positions in the call,
never from their names. What no matcher claims is `unknown`, with the forward's expression in
the reason, so the user can fill it in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pypto_tui.contract import ir, views
from pypto_tui.contract.ir import Node
from pypto_tui.contract.model import Input
from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, bind
from pypto_tui.ops import idiom
from pypto_tui.ops import norm as ops_norm
from pypto_tui.ops.registry import REGISTRY, by_module, by_spelling, element_of

_UNARY = [k for k in REGISTRY.values() if k.is_elementwise and k.arity == 1 and k.functions and not k.identity
          and not k.row_local]
# The unary elementwise ops a contract names as its op (a copy, a cast or a view is not one), each with
# its parameters besides the input and the `inplace` flag (which computes nothing).
ACTIVATIONS: dict[str, tuple[str, ...]] = {k.name: tuple(p for p in k.params if p != "inplace") for k in _UNARY}
# Functions allowed inside a generic elementwise expression: every elementwise kind of the registry.
ELEMENTWISE_FUNCS = {k.name for k in REGISTRY.values() if k.is_elementwise}
# The binary ones: a call of one on two inputs (`torch.maximum(a, b)`) is that named op.
BINARY_FUNCS = {k.name for k in REGISTRY.values() if k.is_elementwise and k.arity == 2}
_ANCHORS = [k for k in REGISTRY.values() if k.is_anchor]
# The kinds with forms written out by hand (their entries' idioms), anchors apart from elementwise ones:
# an anchor's form is the whole expression, an elementwise one's a named shape of a small expression.
_WRITTEN_ANCHORS = [k for k in _ANCHORS if k.idioms]
# What a loss may take its first input through and still have a kernel (its entry says which).
_TRANSFORMS = frozenset(t for k in REGISTRY.values() for t in k.input_transforms)
_WRITTEN_ELEMENTWISE = [k for k in REGISTRY.values() if k.is_elementwise and k.idioms]
# The reductions over `dim` a call names: the kinds the reduction patterns (or a pattern of the kind's own,
# topk's) take, by name and spelling (a kind another one spells, max_dim, is read through torch.max);
# torch.max / torch.min are also the elementwise maximum and minimum: the matcher tells them apart by their
# arguments.
REDUCTIONS = (*dict.fromkeys(s for k in _ANCHORS if k.role in ("reduction", "argreduce")
                             and k.pattern in (k.role, k.name) and not k.spelled_as
                             for s in (k.name, *k.functions)), "max", "min")
SCANS = tuple(k.name for k in _ANCHORS if k.role == "scan")
MODULE_ACTIVATIONS = {m: k.name for k in _UNARY for m in k.modules}
# The losses (and the similarity) the loss pattern writes, by their module and function spellings.
_LOSSES = [k for k in _ANCHORS if k.pattern == "D"]
MODULE_LOSSES = {m: k.name for k in _LOSSES for m in k.modules}
FUNC_LOSSES = {f for k in _LOSSES for f in k.functions}
CONV_NAMES = tuple(f for k in _ANCHORS if k.role == "conv" for f in k.functions)
POOL_NAMES = tuple(f for k in _ANCHORS if k.role == "pool" for f in k.functions)
# nn.MultiheadAttention's functional form is no registry kind yet: the contract names it unsupported
ATTENTION_NAMES = (*(f for k in _ANCHORS if k.role == "attention" for f in k.functions),
                   "multi_head_attention_forward")


@dataclass
class Recognition:
    family: str
    op: str | None
    op_args: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    unknown: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class _NotConst(Exception):
    pass


class Ctx:
    def __init__(self, inputs: Mapping[str, Input]) -> None:
        self.inputs = inputs

    def is_tensor(self, n: Node) -> bool:
        return n.kind == "in" and n.name in self.inputs and self.inputs[n.name].is_tensor

    def constants(self, call: Node, names: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
        """A call's named parameters that are constants, and why each other one is not (ops/idiom.py)."""
        rec = Recognition("unknown", None)
        return _params(call, names, rec), rec.unknown

    def is_scalar(self, n: Node) -> bool:
        return n.kind == "in" and n.name in self.inputs and not self.inputs[n.name].is_tensor

    def rank(self, n: Node) -> int | None:
        if n.kind == "in" and n.name in self.inputs and self.inputs[n.name].shape is not None:
            return len(self.inputs[n.name].shape or ())
        return None


def _val(n: Node | Any) -> Any:
    if not isinstance(n, Node):
        return n
    if n.kind == "const":
        return n.value
    raise _NotConst(ir.render(n) if n.kind != "unknown" else str(n.value))


def _bound(call: Node) -> dict[str, Any]:
    """Arguments of a call bound to its torch signature (Nodes or default values)."""
    params = FUNC_SIGS.get(call.name, ())
    bound, _ = bind(params, call.args, call.kw(), FUNC_DEFAULTS.get(call.name))
    return bound


def _params(call: Node, names: tuple[str, ...], rec: Recognition, prefix: str = "") -> dict[str, Any]:
    """Constant values of the named parameters; non-constants go to rec.unknown."""
    b = _bound(call)
    out: dict[str, Any] = {}
    for p in names:
        if p not in b:
            continue
        try:
            out[p] = _val(b[p])
        except _NotConst as exc:
            rec.unknown[f"op_args.{prefix}{p}"] = f"'{p}' is not a constant ({exc})"
    return out


def _is_call(n: Node, *names: str) -> bool:
    return n.kind == "call" and n.name in names


# ================================================================================= matchers
def _module(n: Node, ctx: Ctx) -> Recognition | None:
    if n.kind != "module":
        return None
    spec = n.value
    t = n.name
    params = {k: v for k, v in spec.params.items() if k not in ("inplace",)}
    rec = Recognition("unknown", None)
    for k, v in params.items():
        if _has_unknown(v):
            rec.unknown[f"op_args.{k}"] = f"nn.{t}({k}=...) could not be read statically"
    for problem in spec.problems:
        rec.notes.append(f"nn.{t}: {problem}")
    params = {k: _plain(v) for k, v in params.items()}
    first = n.args[0] if n.args else None
    direct = first is not None and ctx.is_tensor(first)
    if t in MODULE_ACTIVATIONS:
        return _finish(rec, "elementwise", MODULE_ACTIVATIONS[t], params, [first], direct, n)
    kind = by_module(t)
    if kind is not None and kind.role == "softmax":
        return _finish(rec, "softmax", kind.name, params, [first], direct, n)
    if kind is not None and kind.role == "norm":
        if "training" in kind.params:  # the module's default mode normalises with the batch's statistics
            params["training"] = True
        params["module"] = t
        return _finish(rec, "norm", kind.name, params, [first], direct, n)
    if t in MODULE_LOSSES:
        op = MODULE_LOSSES[t]
        return _loss_from_args(rec, op, params, list(n.args), ctx, n)
    if kind is not None and kind.role in ("conv", "pool"):
        chain = None if direct else _pointwise_chain(t, spec.attr, params, first, ctx)
        if chain is not None:
            return chain
        return _window_module(rec, t, spec.attr, params, first, direct, n)
    if t == "MultiheadAttention":
        return _finish(rec, "attention", "multihead_attention", params, list(n.args), True, n)
    if kind is not None and kind.role == "matmul":
        return _finish(rec, "matmul", kind.name, params, [first], direct, n)
    rec.reason = f"self.{t}-module call: nn.{t} is not a module pypto-tui knows"
    return rec


def _has_unknown(v: Any) -> bool:
    from pypto_tui.contract.values import find_unknown

    return find_unknown(v) is not None


def _plain(v: Any) -> Any:
    from pypto_tui.contract.values import plain

    return plain(v)


def _finish(rec: Recognition, family: str, op: str, op_args: dict[str, Any], operands: list[Node | None],
            direct: bool, n: Node) -> Recognition:
    rec.family, rec.op = family, op
    rec.op_args.update(op_args)
    names = [o.name for o in operands if o is not None and o.kind == "in"]
    rec.op_args["operands"] = tuple(names)
    if not direct:
        rec.reason = (f"{op} is applied to an expression ({ir.brief(n)}), not to an input: fused "
                      "pre-processing has no scaffold")
        rec.op_args["fused"] = True
    return rec


def _transform(n: Node, ctx: Ctx) -> tuple[Node | None, str | None, dict[str, Any]]:
    """An input, possibly under a kind some loss takes as a transform of its input (`log`, `log_softmax`
    over dim: the registry's `input_transforms`): (input, transform, args)."""
    if ctx.is_tensor(n):
        return n, None, {}
    if n.kind == "call" and n.name in _TRANSFORMS and n.args and ctx.is_tensor(n.args[0]):
        kind = REGISTRY.get(n.name)
        if kind is None or "dim" not in kind.params:
            return n.args[0], n.name, {}
        try:
            dim = _val(_bound(n).get("dim"))
        except _NotConst:
            dim = None
        return n.args[0], n.name, {"transform_dim": dim}
    return None, None, {}


def _loss_from_args(rec: Recognition, op: str, params: dict[str, Any], args: list[Node], ctx: Ctx,
                    n: Node) -> Recognition:
    """A loss given its (bound) parameters and the Nodes passed as its tensors."""
    rec.family, rec.op = "loss", op
    rec.op_args.update({k: v for k, v in params.items() if k not in ("size_average", "reduce")})
    for legacy in ("size_average", "reduce"):
        if params.get(legacy) is not None:
            rec.unknown["op_args.reduction"] = f"the legacy '{legacy}=' argument is set; use reduction="
    operands: list[str] = []
    fused = False
    transforms = REGISTRY[op].input_transforms if op in REGISTRY else ()
    for i, a in enumerate(args):
        base, tf, extra = _transform(a, ctx)
        if base is None:
            if ctx.is_scalar(a) or a.is_const:
                continue
            fused = True
            continue
        operands.append(base.name)
        if tf is not None:
            if tf in transforms and i == 0:
                rec.op_args["input_transform"] = tf
                rec.op_args.update(extra)
            else:
                fused = True
    if transforms:
        rec.op_args.setdefault("input_transform", None)
    rec.op_args["operands"] = tuple(operands)
    if fused:
        rec.op_args["fused"] = True
        rec.reason = f"{op} is applied to computed tensors ({ir.brief(n)}): fused pre-processing has no scaffold"
    return rec


def _functional(n: Node, ctx: Ctx) -> Recognition | None:
    if n.kind != "call":
        return None
    name = n.name
    rec = Recognition("unknown", None)
    if name in FUNC_LOSSES:
        b = _bound(n)
        params = FUNC_SIGS[name]
        loss = by_spelling(name)
        tensor_params = set(loss.inputs if loss is not None else ())  # the entry names its tensors
        tensors = [b[p] for p in params if p in tensor_params and isinstance(b.get(p), Node)]
        consts = _params(n, tuple(p for p in params if p not in tensor_params), rec)
        return _loss_from_args(rec, name, consts, tensors, ctx, n)
    if name.endswith("_loss") or name in ("binary_cross_entropy", "nll_loss", "margin_ranking_loss"):
        rec.family, rec.op = "loss", name
        rec.reason = f"{name} is recognised but pypto-tui has no contract template for it"
        rec.op_args["operands"] = tuple(ir.inputs_of(n))
        return rec
    if name in ACTIVATIONS and n.args:
        direct = ctx.is_tensor(n.args[0])
        if not direct:
            return None  # part of a bigger elementwise expression, or something else
        return _finish(rec, "elementwise", name, _params(n, ACTIVATIONS[name], rec), [n.args[0]], True, n)
    kind = by_spelling(name)
    if kind is not None and kind.role == "softmax" and n.args:
        args = _params(n, ("dim",), rec)
        return _finish(rec, "softmax", kind.name, args, [n.args[0]], ctx.is_tensor(n.args[0]), n)
    if kind is not None and kind.role == "norm" and kind.name == name:
        return _functional_norm(n, ctx, rec)
    if kind is not None and kind.role == "attention":
        return _sdpa(n, ctx, rec)
    if name in CONV_NAMES or (name in POOL_NAMES and not name.startswith("adaptive_")):
        return _window_call(n, ctx, rec)
    if name in POOL_NAMES or name in ATTENTION_NAMES:
        fam = "pool" if name in POOL_NAMES else "attention"
        tensors = [a for a in n.args if a.kind == "in"]
        return _finish(rec, fam, name, {}, tensors, bool(tensors), n)
    return None


# ================================================================================ conv and pool
# Their arguments are contract fields (op_args); contract/conv.py normalises them and derives the
# output size. The module's `self.` attribute is recorded so a generated ModelNew can build the same
# module (same weights under the same seed) and pass its weight and bias to the kernel.
_WINDOW_TENSORS = ("weight", "bias")
"""A conv's tensor parameters: its inputs, not contract fields."""


def _window_module(rec: Recognition, t: str, attr: str | None, params: dict[str, Any], first: Node | None,
                   direct: bool, n: Node) -> Recognition:
    """nn.Conv*d, nn.ConvTranspose*d, nn.MaxPool*d, nn.AvgPool*d, nn.Adaptive*Pool*d."""
    kind = by_module(t)
    assert kind is not None
    family, op = kind.role, kind.name
    args = {k: v for k, v in params.items() if k not in ("device", "dtype")}
    args["module"] = t
    if attr:
        args["attr"] = attr
    return _finish(rec, family, op, args, [first], direct, n)


def _is_pointwise(params: dict[str, Any]) -> bool:
    """kernel 1, stride 1, no padding, dilation 1, one group: a matmul over the channels."""
    def ones(v: Any, want: int) -> bool:
        return v == want or (isinstance(v, list | tuple) and len(v) > 0 and all(x == want for x in v))

    return (ones(params.get("kernel_size"), 1) and ones(params.get("stride", 1), 1)
            and ones(params.get("padding", 0), 0) and ones(params.get("dilation", 1), 1)
            and params.get("groups", 1) == 1 and params.get("padding_mode", "zeros") == "zeros")


def _pointwise_chain(t: str, attr: str | None, params: dict[str, Any], first: Node | None,
                     ctx: Ctx) -> Recognition | None:
    """`self.pw(self.dw(x))`: a pointwise nn.Conv*d applied to another nn.Conv*d of the input (a
    depthwise-separable conv). The first conv is the contract's op; the pointwise one is its
    `pointwise` stage (contract/conv.py). None when the outer module is not a plain pointwise conv
    or the inner one is not a conv of an input."""
    if "Transpose" in t or first is None or first.kind != "module" or not attr:
        return None
    inner_t = first.name
    if not inner_t.startswith("Conv") or "Transpose" in inner_t or inner_t[-2:] != t[-2:]:
        return None
    if not _is_pointwise(params) or not first.args or not ctx.is_tensor(first.args[0]):
        return None
    inner = _module(first, ctx)
    if inner is None or inner.family != "conv" or inner.op_args.get("fused"):
        return None
    inner.op_args["pointwise"] = {"attr": attr, "in_channels": params.get("in_channels"),
                                  "out_channels": params.get("out_channels"), "bias": params.get("bias", True)}
    return inner


def _window_call(n: Node, ctx: Ctx, rec: Recognition) -> Recognition:
    """F.conv2d(x, w, b, stride, ...), F.max_pool2d(x, k, s, ...), F.avg_pool1d(x, k, ...)."""
    name = n.name
    kind = by_spelling(name)
    assert kind is not None
    args = _params(n, tuple(p for p in kind.params if p not in _WINDOW_TENSORS), rec)
    b = _bound(n)
    tensors = [b[p] for p in ("input", "weight", "bias") if isinstance(b.get(p), Node) and not (
        b[p].is_const and b[p].value is None)]
    x = tensors[0] if tensors else None
    direct = x is not None and ctx.is_tensor(x)
    if kind.role == "conv":
        args["weight_input"] = True
    return _finish(rec, kind.role, name, args, tensors, direct, n)


def _functional_norm(n: Node, ctx: Ctx, rec: Recognition) -> Recognition:
    name = n.name
    first = n.args[0]
    kind = by_spelling(name)
    assert kind is not None
    args = _params(n, tuple(p for p in kind.params if p not in (*ops_norm.TENSOR_PARAMS, *ops_norm.STATE_PARAMS)),
                   rec)
    b = _bound(n)
    for p in ops_norm.TENSOR_PARAMS:
        v = b.get(p)
        if isinstance(v, Node) and not (v.is_const and v.value is None):
            args[p] = ir.render(v)
    if "training" in kind.params and not args.get("training"):
        rec.reason = f"F.{name} with training=False normalises with running statistics the file does not fix"
    return _finish(rec, "norm", name, args, [first], ctx.is_tensor(first), n)


def _reduction_call(n: Node, ctx: Ctx) -> Recognition | None:
    """torch.sum(x, dim=...), x.mean((2, 3)), torch.max(x, dim=d)[0], x.argmax(1), ..."""
    pick = None
    if n.kind == "index" and isinstance(n.value, int) and n.args[0].kind == "call":
        pick, n = ("values" if n.value == 0 else "indices"), n.args[0]
    elif n.kind == "attr" and n.name in ("values", "indices") and n.args[0].kind == "call":
        pick, n = n.name, n.args[0]
    if n.kind != "call" or n.name not in REDUCTIONS or not n.args:
        return None
    rec = Recognition("reduction", n.name)
    b = _bound(n)
    x = n.args[0]
    kind = by_spelling(n.name)
    returns = kind.returns if kind is not None else ()
    part = element_of(kind, returns.index(pick)) if kind is not None and pick in returns else None
    if part is not None and part is not kind:  # torch.topk(...)[1]: the kind that computes the indices
        rec.op = part.name
    elif returns and pick != returns[0]:  # torch.topk: (values, indices), the kind computes the values
        rec.op_args["returns"] = "+".join(returns)
        rec.reason = (f"torch.{n.name}(...) returns ({', '.join(returns)}); index it with [0] or .{returns[0]}"
                      if pick is None else f"the {pick} of torch.{n.name} are not scaffolded (its {returns[0]} are)")
    if n.name in ("max", "min"):
        other = b.get("dim")
        if isinstance(other, Node) and not other.is_const and ctx.is_tensor(other):  # torch.max(a, b)
            return _finish(Recognition("unknown", None), "elementwise",
                           "maximum" if n.name == "max" else "minimum", {}, [x, other], ctx.is_tensor(x), n)
        has_dim = not (isinstance(other, Node) and other.is_const and other.value is None) and other is not None
        if has_dim:
            if pick == "indices":
                rec.op = "argmax" if n.name == "max" else "argmin"
            elif pick is None:
                rec.op_args["returns"] = "values+indices"
                rec.reason = f"torch.{n.name}(x, dim) returns (values, indices); index it with [0] or .values"
    args = _params(n, ("dim", "keepdim", "unbiased", "correction", *(kind.params if returns and kind else ())), rec)
    if n.name in ("amax", "amin") and args.get("dim") == ():
        args["dim"] = None
    rec.op_args.update(args)
    if "dim" in rec.op_args and isinstance(rec.op_args["dim"], list):
        rec.op_args["dim"] = tuple(rec.op_args["dim"])
    if ctx.is_tensor(x):
        rec.op_args["operands"] = (x.name,)
        return rec
    rec.op_args["operands"] = tuple(ir.inputs_of(x))
    rec.op_args["operand_expr"] = ir.to_data(x)
    rec.op_args["fused"] = True
    rec.reason = f"the reduced value is an expression ({ir.brief(x)}): fused reductions have no scaffold"
    return rec


def _written_out(n: Node, ctx: Ctx) -> Recognition | None:
    """An anchor written out by hand (`x * rsqrt(mean(x ** 2, -1) + eps)`, `mean((a - b) ** 2)`): the
    idioms of its registry entry."""
    found = idiom.find(_WRITTEN_ANCHORS, n, ctx)
    if found is None:
        return None
    return Recognition(found.family, found.kind, found.op_args, unknown=found.unknown)


def _matmul(n: Node, ctx: Ctx) -> Recognition | None:
    einsum = _einsum_matmul(n, ctx)
    if einsum is not None:
        return einsum
    post = None
    if _is_call(n, "tril", "triu") and n.args:
        post = n.name
        b = _bound(n)
        diag = b.get("diagonal", 0)
        if isinstance(diag, Node):
            diag = diag.value if diag.is_const else None
        inner = n.args[0]
    else:
        inner = n
        diag = 0
    if inner.kind == "bin" and inner.name == "matmul":
        a, b_ = inner.args
        name = "matmul"
    elif _is_call(inner, "matmul", "mm", "bmm", "mv") and len(inner.args) >= 2:
        a, b_ = inner.args[:2]
        name = inner.name
    else:
        return None
    rec = Recognition("matmul", "bmm" if name == "bmm" else "matmul")
    ops: list[str] = []
    flags = {}
    for key, side in (("a", a), ("b", b_)):
        base, transposed, diag_of = _matmul_operand(side, ctx)
        if base is None:
            rec.reason = (f"operand '{ir.brief(side)}' of the matmul is an expression: fused pre-processing "
                          "has no scaffold")
            rec.op_args["fused"] = True
            ops.extend(ir.inputs_of(side))
            continue
        ops.append(base.name)
        flags[f"transpose_{key}"] = transposed
        if diag_of:
            flags[f"diag_{key}"] = True
    rec.op_args.update({"transpose_a": False, "transpose_b": False, **flags, "operands": tuple(ops)})
    if flags.get("diag_a") or flags.get("diag_b"):
        rec.op = "diag_matmul"
    if post:
        rec.op_args["post"] = post
        rec.op_args["post_diagonal"] = diag
    if name == "mv":
        rec.op_args["variant"] = "matvec"
    return rec


PRODUCT = "__product__"
"""The name a matmul epilogue's tree gives the product (op_args['epilogue'])."""


def _is_product(n: Node) -> bool:
    return (n.kind == "bin" and n.name == "matmul") or (_is_call(n, "matmul", "mm") and len(n.args) == 2)


def _swap_product(n: Node, product: Node) -> Node:
    if n == product:
        return Node("in", name=PRODUCT)
    if not n.args and not n.kwargs:
        return n
    return Node(n.kind, n.name, tuple(_swap_product(a, product) for a in n.args),
                tuple((k, _swap_product(v, product)) for k, v in n.kwargs), n.value)


def _matmul_epilogue(n: Node, ctx: Ctx) -> Recognition | None:
    """A plain 2-D matmul with an elementwise epilogue on its product (`relu((x @ w.t() + b) * 0.5)`, a
    kernel group of a GEMM chain, FUSE.matmul-epilogue): the matmul's contract, the epilogue as data
    (op_args['epilogue'], the tree over the product `__product__` and the other operands, which
    `epilogue_operands` lists)."""
    if _is_product(n) or views.has_views(n):
        return None
    products: list[Node] = []
    for sub in n.walk():
        if _is_product(sub) and sub not in products:
            products.append(sub)
    if len(products) != 1:
        return None
    product = products[0]
    rec = _matmul(product, ctx)
    if (rec is None or rec.op != "matmul" or rec.reason or rec.op_args.get("fused") or rec.op_args.get("post")
            or rec.op_args.get("variant") or rec.op_args.get("einsum") or rec.op_args.get("transpose_a")):
        return None
    tree = _swap_product(n, product)
    for sub in tree.walk():
        if sub.kind == "in":
            if sub.name != PRODUCT and sub.name not in ctx.inputs:
                return None
            continue
        if sub.kind in ("const", "neg") or (sub.kind == "bin" and sub.name in ("add", "sub", "mul", "div")):
            continue
        if sub.kind == "call" and sub.name in ELEMENTWISE_FUNCS and sub.name != "rotate_half":
            continue
        return None
    others = [x for x in ir.inputs_of(tree) if x != PRODUCT and ctx.is_tensor(Node("in", name=x))]
    if set(others) & set(rec.op_args["operands"]):
        return None  # an operand of the product read again by the epilogue: not written
    rec.op_args["epilogue"] = ir.to_data(tree)
    rec.op_args["epilogue_operands"] = tuple(others)
    return rec


def _matmul_operand(n: Node, ctx: Ctx) -> tuple[Node | None, bool, bool]:
    if ctx.is_tensor(n):
        return n, False, False
    if n.kind == "attr" and n.name in ("T", "mT") and ctx.is_tensor(n.args[0]):
        return n.args[0], True, False
    if _is_call(n, "t") and ctx.is_tensor(n.args[0]):
        return n.args[0], True, False
    if _is_call(n, "transpose") and len(n.args) == 3 and ctx.is_tensor(n.args[0]):
        try:
            d0, d1 = _val(n.args[1]), _val(n.args[2])
        except _NotConst:
            return None, False, False
        rank = ctx.rank(n.args[0]) or 2
        if sorted(((d0 % rank), (d1 % rank))) == [rank - 2, rank - 1]:
            return n.args[0], True, False
        return None, False, False
    if _is_call(n, "diag") and n.args and ctx.is_tensor(n.args[0]) and ctx.rank(n.args[0]) == 1:
        return n.args[0], False, True
    return None, False, False


def _scan(n: Node, ctx: Ctx) -> Recognition | None:
    rec = Recognition("scan", None)
    exclusive = _exclusive_scan(n, ctx)
    if exclusive is not None:
        return exclusive
    target = n
    flipped = False
    if _is_call(n, "flip") and n.args and _is_call(n.args[0], *SCANS):
        target, flipped = n.args[0], True
    if _is_call(target, *SCANS) and target.args:
        x = target.args[0]
        args = _params(target, ("dim",), rec)
        if flipped and _is_call(x, "flip") and x.args and ctx.is_tensor(x.args[0]):
            rec.op = "reverse_" + target.name
            rec.op_args = {**args, "operands": (x.args[0].name,)}
            return rec
        if ctx.is_tensor(x) and not flipped:
            rec.op = target.name
            rec.op_args = {**args, "operands": (x.name,)}
            return rec
        if x.kind == "bin" and x.name == "mul" and all(ctx.is_tensor(a) for a in x.args) and not flipped:
            rec.op = "masked_" + target.name
            rec.op_args = {**args, "operands": tuple(a.name for a in x.args)}
            return rec
    # a scan somewhere inside a bigger expression
    for sub in n.walk():
        if _is_call(sub, *SCANS):
            rec.op = sub.name
            rec.op_args = {"operands": tuple(ir.inputs_of(n)), "composite": True}
            rec.reason = f"a {sub.name} inside a larger expression ({ir.brief(n)})"
            rec.unknown["formula"] = "the scan is part of a larger expression"
            return rec
    return None


def _nested_unsupported(n: Node, ctx: Ctx) -> Recognition | None:
    """A conv, pool or attention anywhere in the tree decides the family."""
    for sub in n.walk():
        fam = None
        if sub.kind == "module" and sub.name.startswith(("Conv", "ConvTranspose")):
            fam = "conv"
        elif sub.kind == "module" and "Pool" in sub.name:
            fam = "pool"
        elif sub.kind == "module" and sub.name == "MultiheadAttention":
            fam = "attention"
        elif sub.kind == "call" and sub.name in CONV_NAMES:
            fam = "conv"
        elif sub.kind == "call" and sub.name in POOL_NAMES:
            fam = "pool"
        elif sub.kind == "call" and sub.name in ATTENTION_NAMES:
            fam = "attention"
        if fam:
            rec = Recognition(fam, sub.name if sub.kind == "call" else sub.name.lower())
            rec.op_args = {"operands": tuple(ir.inputs_of(n)), "composite": True}
            rec.reason = f"{fam} inside a larger expression ({ir.brief(n)})"
            rec.unknown["formula"] = f"the {fam} is part of a larger expression"
            return rec
    return None


def _elementwise(n: Node, ctx: Ctx) -> Recognition | None:
    if views.has_views(n):
        return _elementwise_views(n, ctx)
    for sub in n.walk():
        if sub.kind == "in":
            if sub.name not in ctx.inputs:
                return None
            continue
        if sub.kind == "const":
            continue
        if sub.kind == "bin" and sub.name != "matmul":
            continue
        if sub.kind == "neg":
            continue
        if sub.kind == "call" and sub.name in ELEMENTWISE_FUNCS:
            continue
        return None
    tensors = [name for name in ir.inputs_of(n) if ctx.inputs[name].is_tensor]
    if not tensors:
        return None
    rec = Recognition("elementwise", "expression")
    rec.op_args["operands"] = tuple(tensors)
    # named shapes of small expressions
    if n.kind == "bin" and n.name in ("add", "sub", "mul", "div", "pow"):
        a, b = n.args
        if ctx.is_tensor(a) and (b.is_const or ctx.is_scalar(b)):
            rec.op = n.name
            rec.op_args.update({"scalar": b.value if b.is_const else None,
                                "scalar_input": b.name if ctx.is_scalar(b) else None, "scalar_side": "right"})
            return rec
        if ctx.is_tensor(b) and (a.is_const or ctx.is_scalar(a)) and n.name != "pow":
            rec.op = n.name
            rec.op_args.update({"scalar": a.value if a.is_const else None,
                                "scalar_input": a.name if ctx.is_scalar(a) else None, "scalar_side": "left"})
            return rec
        if ctx.is_tensor(a) and ctx.is_tensor(b) and a.name != b.name:  # `x + x` stays an expression of one input
            rec.op = n.name
            rec.op_args["operands"] = (a.name, b.name)
            return rec
    found = idiom.find(_WRITTEN_ELEMENTWISE, n, ctx)  # `x * sigmoid(x)`: a swish
    if found is not None:
        rec.op = found.kind
        return rec
    if n.kind == "call" and n.name in BINARY_FUNCS and len(n.args) == 2 and all(ctx.is_tensor(a) for a in n.args):
        rec.op = n.name
        rec.op_args["operands"] = tuple(a.name for a in n.args)
        return rec
    rec.op_args["expr"] = ir.to_data(n)
    return rec


def _elementwise_views(n: Node, ctx: Ctx) -> Recognition | None:
    """An elementwise expression over views of the inputs (`A.unsqueeze(1) * B`, `x[:, None] + y`):
    each view chain is a leaf the kernel reads as one operand (contract/views.py); `views` lists the
    leaves that take a view, with the shapes they broadcast from."""
    shapes = {k: tuple(v.shape) for k, v in ctx.inputs.items() if v.is_tensor and v.shape is not None}
    try:
        tree, found = views.leaves(n, shapes)
    except views.NotAView:
        return None
    ids = {leaf.id for leaf in found}
    for sub in tree.walk():
        if sub.kind == "in":
            if sub.name not in ctx.inputs and sub.name not in ids:
                return None
            continue
        if sub.kind == "const" or sub.kind == "neg" or (sub.kind == "bin" and sub.name != "matmul"):
            continue
        if sub.kind == "call" and sub.name in ELEMENTWISE_FUNCS:
            continue
        return None
    bare = [x for x in ir.inputs_of(tree) if x in shapes]
    try:
        views.output_shape([leaf.broadcast_shape for leaf in found] + [shapes[x] for x in bare])
    except views.NotAView:
        return None
    tensors = [name for name in ir.inputs_of(n) if ctx.inputs[name].is_tensor]
    if not tensors:
        return None
    rec = Recognition("elementwise", "expression")
    rec.op_args["operands"] = tuple(tensors)
    rec.op_args["expr"] = ir.to_data(n)
    rec.op_args["views"] = tuple(leaf.to_data() for leaf in found)
    return rec


# ================================================================================ scans, matmul forms
def _exclusive_scan(n: Node, ctx: Ctx) -> Recognition | None:
    """KernelBench's exclusive scan: `cumsum(cat((zeros_like(x.select(d, 0).unsqueeze(d)), x), dim=d)[:-1], d)`.

    A zero slice is put before x along d and the scan runs over the result, so position t holds the
    sum of the positions before t. The optional `[:-1]` trims the last index of axis 0 (not of axis
    d, unless d is 0): `trim_last_row` records it, and the output shape follows from both.
    """
    narrowed = _narrowed_exclusive_scan(n, ctx)
    if narrowed is not None:
        return narrowed
    if not (_is_call(n, "cumsum", "cumprod") and n.args):
        return None
    inner = n.args[0]
    trim = False
    if inner.kind == "index" and inner.value == {"slice": (None, -1, None)} and inner.args:
        trim, inner = True, inner.args[0]
    if not (_is_call(inner, "cat", "concat", "concatenate") and inner.args and inner.args[0].kind == "tuple"):
        return None
    parts = inner.args[0].args
    if len(parts) != 2 or not ctx.is_tensor(parts[1]):
        return None
    x = parts[1]
    zero = parts[0]
    rec = Recognition("scan", None)
    try:
        scan_dim = _val(_bound(n).get("dim"))
        cat_dim = _val(inner.kw().get("dim", inner.args[1] if len(inner.args) > 1 else ir.const(0)))
    except _NotConst:
        return None
    if not (_is_call(zero, "zeros_like") and zero.args and _is_call(zero.args[0], "unsqueeze")):
        return None
    unsq = zero.args[0]
    sel = unsq.args[0] if unsq.args else None
    if sel is None or not _is_call(sel, "select") or len(sel.args) != 3 or sel.args[0] != x:
        return None
    try:
        dims = {_val(unsq.args[1]) if len(unsq.args) > 1 else None, _val(sel.args[1]), cat_dim, scan_dim}
        first = _val(sel.args[2])
    except _NotConst:
        return None
    rank = ctx.rank(x)
    norm = {d % rank if isinstance(d, int) and rank else d for d in dims}
    if len(norm) != 1 or first != 0:
        return None
    rec.op = "exclusive_" + n.name
    rec.op_args = {"dim": scan_dim, "trim_last_row": trim, "operands": (x.name,)}
    return rec


def _narrowed_exclusive_scan(n: Node, ctx: Ctx) -> Recognition | None:
    """KernelBench's current exclusive scan: `cat((zeros_like(x.select(d, 0).unsqueeze(d)),
    cumsum(x.narrow(d, 0, x.size(d) - 1), d)), d)`.

    The scan runs over x without its last position along d and a zero slice goes before it, so
    the output has x's shape and position t holds the sum of the positions before t (`narrow`
    records this form: nothing grows, nothing is trimmed).
    """
    if not (_is_call(n, "cat", "concat", "concatenate") and n.args and n.args[0].kind == "tuple"):
        return None
    parts = n.args[0].args
    if len(parts) != 2 or not _is_call(parts[1], "cumsum", "cumprod") or not parts[1].args:
        return None
    zero, scan = parts
    part = scan.args[0]
    if not (_is_call(part, "narrow") and part.args and ctx.is_tensor(part.args[0])):
        return None
    x = part.args[0]
    rank = ctx.rank(x)
    if rank is None:
        return None
    nb = _bound(part)
    try:
        cat_dim = _val(n.kw().get("dim", n.args[1] if len(n.args) > 1 else ir.const(0)))
        scan_dim = _val(_bound(scan).get("dim"))
        narrow_dim, start = _val(nb.get("dim")), _val(nb.get("start"))
    except _NotConst:
        return None
    length = nb.get("length")
    size = (ctx.inputs[x.name].shape or ())[narrow_dim % rank] if isinstance(narrow_dim, int) else None
    symbolic = (isinstance(length, Node) and length.kind == "bin" and length.name == "sub"
                and length.args[1].is_const and length.args[1].value == 1
                and _is_size_of(length.args[0], x, narrow_dim, rank))
    folded = isinstance(length, Node) and length.is_const and size is not None and length.value == size - 1
    if not (symbolic or folded) or start != 0:  # `x.size(d) - 1`, read as the size get_inputs gives or not
        return None
    if not (_is_call(zero, "zeros_like") and zero.args and _is_call(zero.args[0], "unsqueeze")):
        return None
    unsq = zero.args[0]
    sel = unsq.args[0] if unsq.args else None
    if sel is None or not _is_call(sel, "select") or len(sel.args) != 3 or sel.args[0] != x:
        return None
    try:
        dims = {_val(unsq.args[1]) if len(unsq.args) > 1 else None, _val(sel.args[1]), cat_dim, scan_dim,
                narrow_dim}
        first = _val(sel.args[2])
    except _NotConst:
        return None
    norm = {d % rank if isinstance(d, int) else d for d in dims}
    if len(norm) != 1 or first != 0:
        return None
    rec = Recognition("scan", "exclusive_" + scan.name)
    rec.op_args = {"dim": scan_dim, "trim_last_row": False, "narrow": True, "operands": (x.name,)}
    return rec


def _is_size_of(n: Node, x: Node, dim: Any, rank: int) -> bool:
    """`x.size(dim)` or `x.shape[dim]` (dim the same axis, negative or not)."""
    if _is_call(n, "size") and len(n.args) == 2 and n.args[0] == x and n.args[1].is_const:
        d = n.args[1].value
    elif n.kind == "index" and n.args and n.args[0].kind == "attr" and n.args[0].name == "shape" \
            and n.args[0].args[0] == x and isinstance(n.value, int):
        d = n.value
    else:
        return False
    return isinstance(d, int) and isinstance(dim, int) and d % rank == dim % rank


def _sdpa(n: Node, ctx: Ctx, rec: Recognition) -> Recognition:
    """F.scaled_dot_product_attention(q, k, v, ...): the three tensors by position or keyword, the
    options as constants (a mask tensor is recorded by its expression: the contract says it is not
    scaffolded)."""
    b = _bound(n)
    tensors = [b.get(p) for p in ("query", "key", "value")]
    args = _params(n, ("dropout_p", "is_causal", "scale"), rec)
    mask = b.get("attn_mask")
    if isinstance(mask, Node) and not (mask.is_const and mask.value is None):
        args["attn_mask"] = ir.render(mask)
    direct = all(isinstance(t, Node) and ctx.is_tensor(t) for t in tensors)
    return _finish(rec, "attention", "scaled_dot_product_attention", args,
                   [t for t in tensors if isinstance(t, Node)], direct, n)


def _einsum_matmul(n: Node, ctx: Ctx) -> Recognition | None:
    """`torch.einsum` equations that are matmuls: a tensor times a matrix ("bijl,lk->bijk", or with
    the matrix stored transposed, "bijl,kl->bijk"), and the same-batch product ("bij,bjk->bik").
    Other equations stay unknown (with the equation in the reason)."""
    if not (_is_call(n, "einsum") and len(n.args) == 3 and n.args[0].is_const and isinstance(n.args[0].value, str)):
        return None
    a, b = n.args[1], n.args[2]
    if not (ctx.is_tensor(a) and ctx.is_tensor(b)):
        return None
    eq = n.args[0].value.replace(" ", "")
    if "->" not in eq or eq.count(",") != 1 or "." in eq:
        return None
    lhs, out = eq.split("->")
    ia, ib = lhs.split(",")
    if len(set(ia)) != len(ia) or len(set(ib)) != len(ib) or ctx.rank(a) not in (None, len(ia)) or \
            ctx.rank(b) not in (None, len(ib)):
        return None
    op, trans_b = None, False
    if len(ib) == 2 and ia[-1] in ib and ib[0] not in ia[:-1] and ib[1] not in ia[:-1]:
        k = ia[-1]
        n_ = ib[1] if ib[0] == k else ib[0]
        if out == ia[:-1] + n_ and n_ not in ia:
            op, trans_b = "matmul", ib[1] == k
    elif len(ia) == 3 and len(ib) == 3 and ia[0] == ib[0] and ia[2] == ib[1] and out == ia[:2] + ib[2]:
        op = "bmm"
    if op is None:
        return None
    rec = Recognition("matmul", op)
    rec.op_args.update({"transpose_a": False, "transpose_b": trans_b, "operands": (a.name, b.name),
                        "einsum": eq})
    return rec


def _concat(n: Node, ctx: Ctx) -> Recognition | None:
    """`torch.cat((a, b, ...), dim)` of task inputs: a layout kernel copies each part to its offset. A cat
    of expressions is the graph's to split (each part's kernel, then the copy); here it is no pattern."""
    if not (_is_call(n, "cat", "concat", "concatenate") and n.args and n.args[0].kind == "tuple"):
        return None
    parts = n.args[0].args
    if len(parts) < 2 or not all(ctx.is_tensor(p) for p in parts):
        return None
    rec = Recognition("layout", "cat")
    args = _params(n, ("dim",), rec)
    rec.op_args = {"dim": args.get("dim", 0), "operands": tuple(p.name for p in parts)}
    return rec


def _swap_axes(n: Node, ctx: Ctx) -> Recognition | None:
    """`x.transpose(d0, d1)` (or a permute that swaps two axes) of a task input: a layout kernel copies
    blocks of the trailing axes to their new places. Any other permutation is no pattern here."""
    if not (n.kind == "call" and n.name in ("transpose", "permute") and n.args and ctx.is_tensor(n.args[0])):
        return None
    rank = ctx.rank(n.args[0])
    if rank is None:
        return None
    rec = Recognition("layout", "transpose")
    if n.name == "transpose":
        if len(n.args) != 3:
            return None
        d0, d1 = _val(n.args[1]), _val(n.args[2])
    else:
        dims = [_val(a) for a in n.args[1:]]
        if len(dims) == 1 and isinstance(dims[0], tuple | list):
            dims = list(dims[0])
        if sorted(d % rank for d in dims) != list(range(rank)):
            return None
        moved = [i for i, d in enumerate(dims) if d % rank != i]
        if len(moved) != 2:
            return None
        d0, d1 = moved
    if not (isinstance(d0, int) and isinstance(d1, int)) or d0 % rank == d1 % rank:
        return None
    rec.op_args = {"dim0": min(d0 % rank, d1 % rank), "dim1": max(d0 % rank, d1 % rank),
                   "operands": (n.args[0].name,)}
    return rec


def _slice_copy(n: Node, ctx: Ctx) -> Recognition | None:
    """`x.narrow(dim, start, length)` of a task input (the graph writes a narrow or select view a kernel
    must read contiguous so): a layout kernel copies the part out (SLICE.rows-copy)."""
    if not (_is_call(n, "narrow") and n.args and ctx.is_tensor(n.args[0])):
        return None
    b = _bound(n)
    if any(k not in b for k in ("dim", "start", "length")):
        return None
    dim, start, length = (_val(b[k]) for k in ("dim", "start", "length"))
    rec = Recognition("layout", "narrow")
    rec.op_args = {"dim": dim, "start": start, "length": length, "operands": (n.args[0].name,)}
    return rec


def _pad_copy(n: Node, ctx: Ctx) -> Recognition | None:
    """`F.pad(x, pad, value=v)` of a task input, constant mode: a layout kernel copies each row of x into
    the middle of the wider output row and fills the borders (PAD.rows-copy). A pad of several axes
    reaches the dimension step whole and is split by the graph, one kernel per axis."""
    if not (_is_call(n, "pad") and n.args and ctx.is_tensor(n.args[0])):
        return None
    b = _bound(n)
    pad, mode, value = (_val(b.get(k)) for k in ("pad", "mode", "value"))
    if mode != "constant":
        return Recognition("unknown", None, reason=f"F.pad mode {mode!r}: only a constant fill is a copy kernel")
    rec = Recognition("layout", "pad")
    rec.op_args = {"pad": tuple(pad) if isinstance(pad, tuple | list) else pad,
                   "value": float(value) if isinstance(value, int | float) else value, "operands": (n.args[0].name,)}
    return rec


def _recurrent(n: Node, ctx: Ctx) -> Recognition | None:
    """A recurrent layer over task inputs (the graph's `lstm` node: the sequence, the weights and the
    initial states, the options as keywords): one kernel loops over the time steps (RNN.time-loop)."""
    kind = REGISTRY.get(n.name) if n.kind == "call" else None
    if kind is None or kind.role != "recurrent":
        return None
    rec = Recognition("unknown", None)
    args = _params(n, kind.params, rec)
    return _finish(rec, "recurrent", kind.name, {**dict(kind.defaults), **args}, list(n.args),
                   all(ctx.is_tensor(a) for a in n.args) and len(n.args) == kind.arity, n)


def _indexed(n: Node, ctx: Ctx) -> Recognition | None:
    """An operator that reads integer positions (`torch.gather(x, dim, index)`, the registry's
    `index_inputs`) of task inputs: its values and its index are the kernel's two operands."""
    kind = REGISTRY.get(n.name) if n.kind == "call" else None
    if kind is None or not kind.index_inputs:
        return None
    b = _bound(n)
    tensors = [v for v in (n.args[0] if n.args else None, *(b.get(p) for p in kind.params)) if
               isinstance(v, Node) and not v.is_const]
    rec = Recognition("unknown", None)
    args = _params(n, tuple(p for p in kind.params if not isinstance(b.get(p), Node) or b[p].is_const), rec)
    # the values and the positions (an embedding's table is a parameter, not one of its arity's inputs)
    return _finish(rec, kind.role, kind.name, {**dict(kind.defaults), **args}, list(tensors),
                   len(tensors) == 2 and all(ctx.is_tensor(t) for t in tensors), n)


MATCHERS: tuple[Callable[[Node, Ctx], Recognition | None], ...] = (
    _module, _written_out, _functional, _reduction_call, _matmul, _scan,
    _nested_unsupported, _matmul_epilogue, _concat, _swap_axes, _slice_copy, _pad_copy, _recurrent, _indexed,
    _elementwise,
)


def recognise(root: Node, inputs: Mapping[str, Input]) -> Recognition:
    if root.kind == "unknown":
        return Recognition("unknown", None, reason=f"forward could not be read: {root.value}")
    ctx = Ctx(inputs)
    for matcher in MATCHERS:
        try:
            rec = matcher(root, ctx)
        except _NotConst as exc:
            rec = Recognition("unknown", None, reason=f"a non-constant argument ({exc})")
        if rec is not None:
            return rec
    bad = next((s for s in root.walk() if s.kind == "unknown"), None)
    detail = f" ({bad.value})" if bad is not None else ""
    return Recognition("unknown", None, reason=f"forward returns `{ir.brief(root)}`, which matches no "
                                                f"operator pattern pypto-tui knows{detail}")
