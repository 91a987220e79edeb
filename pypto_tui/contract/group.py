"""One kernel's task, derived from its group of the operator graph: no source text in between.

A kernel group (plan.KernelGroup) of an `OpGraph` is planned with the same steps as a one-operator
task, so it needs what the contract reader gives for a task file: forward's inputs (the values the
group reads from outside: a task input, a parameter created in `__init__`, an earlier kernel's output,
each with its shape), the `nn` modules it calls (their constructor arguments as the task gave them),
and the expression forward returns, as the reader's tree (`contract.ir`). `group_facts` builds those
facts straight from the graph's nodes, in the canonical spelling the recogniser reads (a linear is
`matmul(x, w.t())`, a module anchor is a call of the task's own module), so a one-operator task and a
chain's kernel reach the recogniser through the same function (`extract.contract_from_facts`).
Pure data: no libcst, no text parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pypto_tui.contract import ir
from pypto_tui.contract.extract import contract_from_facts
from pypto_tui.contract.graph import OpGraph, OpNode
from pypto_tui.contract.ir import Node
from pypto_tui.contract.model import Signature, kernel_safe
from pypto_tui.contract.reader import TaskFacts
from pypto_tui.contract.signatures import bind_module
from pypto_tui.contract.values import ModuleSpec, TensorSpec
from pypto_tui.errors import Unsupported
from pypto_tui.ops import registry
from pypto_tui.ops import views as V

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract


class KernelGroupLike(Protocol):
    """What a kernel group (plan.KernelGroup, a layer above) tells: its nodes, reads and output."""

    @property
    def nodes(self) -> tuple[str, ...]: ...

    @property
    def reads(self) -> tuple[str, ...]: ...

    @property
    def writes(self) -> str: ...


FLOAT_DTYPES = ("fp32", "fp16", "bf16")


MODULE_ROLES = ("conv", "pool", "norm")
"""Roles of the anchors whose weights and settings live in the task's `nn` module: written as a module
call, the kernel calls the task's own module (its weights and constructor arguments), as `Model` does."""



@dataclass(frozen=True)
class GroupFacts:
    """A kernel group as a task: the reader's facts, the value ids forward takes (in order) and the
    `self.` modules the kernel calls (the composed module hands it the task's own ones)."""

    facts: TaskFacts
    reads: tuple[str, ...]
    modules: tuple[str, ...]


def arg_name(vid: str) -> str:
    """A forward parameter name for a value id (`gemm.weight` -> `gemm_weight`; `k` -> `k_in`)."""
    name = re.sub(r"\W", "_", vid)
    name = name if name.isidentifier() and not name[0].isdigit() else f"v_{name}"
    return kernel_safe(name)


def module_call(n: OpNode) -> tuple[str, str] | None:
    """(nn type, self attribute) of a conv, pool or norm node the task wrote as an `nn.<Type>` module call."""
    parts = n.spelling.split()
    if n.role in MODULE_ROLES and len(parts) == 2 and parts[0].startswith("nn.") and parts[1].startswith("self."):
        return parts[0][3:], parts[1][5:]
    return None


def _const(v: Any) -> Node:
    return ir.const(_tuples(v))


def _tuples(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return tuple(_tuples(x) for x in v)
    return v


def _call(name: str, args: tuple[Node, ...], how: str, **kwargs: Any) -> Node:
    kw = tuple((k, v if isinstance(v, Node) else _const(v)) for k, v in kwargs.items())
    return Node("call", name=name, args=args, kwargs=kw, value=how)


def _present(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: attrs[k] for k in keys if attrs.get(k) is not None}


def _module_args(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _tuples(v) for k, v in attrs.items() if k not in ("nd", "device", "dtype")}


def _lit(v: Any) -> str:
    if isinstance(v, tuple | list):
        return "(" + ", ".join(_lit(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def group_facts(graph: OpGraph, nodes: tuple[str, ...], reads: tuple[str, ...], writes: str,
                title: str) -> GroupFacts:
    """The facts the contract reader would give for a task whose forward computes `nodes` from `reads`.

    Raises `Unsupported` (with the reason) for a group no one-operator kernel can take: a constant
    with no kernel form, an unknown shape, a non-float tensor, an operator with no canonical call."""
    tree: dict[str, Node] = {}
    params: list[str] = []
    inputs: list[TensorSpec] = []
    attributes: dict[str, Any] = {}
    modules: list[str] = []
    module_rows: list[tuple[str, str, str, tuple[str, ...]]] = []
    owned: set[str] = set()
    group = [n for n in (graph.node(nid) for nid in nodes) if n is not None]
    if len(group) != len(nodes):
        raise Unsupported("the kernel names a node the graph does not hold")
    calls = {n.id: module_call(n) for n in group}
    for n in group:
        mod = calls[n.id]
        if mod is None:
            continue
        kind, attr = mod
        args = _module_args(n.attrs)
        bound, problems = bind_module(kind, (), args)
        attributes[attr] = ModuleSpec(kind, bound, problems, attr)
        modules.append(attr)
        module_rows.append((attr, kind, ", ".join(f"{k}={_lit(v)}" for k, v in args.items()), ()))
        owned.update(i for i in n.inputs if i.startswith(attr + "."))
    for vid in reads:
        if vid in owned:
            continue
        v = graph.value(vid)
        if v is not None and v.kind in ("const", "scalar"):
            if not isinstance(v.value, int | float) or isinstance(v.value, bool):
                raise Unsupported(f"the constant {v.value!r} ({v.source or vid}) has no kernel form")
            tree[vid] = _const(v.value)
            continue
        shape = graph.shape_of(vid)
        if shape is None:
            raise Unsupported(f"the shape of {vid} is unknown")
        node = graph.node(vid)
        dtype = (v.dtype if v is not None else (node.dtype if node is not None else None)) or "fp32"
        recipe: dict[str, Any] = {"fn": "randn", "shape": list(shape), "dtype": dtype, "post": [], "replayable": True}
        if dtype not in FLOAT_DTYPES:
            span = _positions(graph, group, vid)
            if span is None:
                raise Unsupported(f"{vid} is {dtype}: the kernels of a chain take floating-point tensors (or "
                                  "integer positions an operator such as gather reads)")
            recipe = {**recipe, "fn": "randint", "low": 0, "high": span}  # positions within the axis they index
        tree[vid] = Node("in", name=arg_name(vid), value=len(params))
        params.append(vid)
        inputs.append(TensorSpec(tuple(shape), dtype, recipe))
    for n in group:
        mod = calls[n.id]
        if mod is not None:  # the module holds its own weights: forward hands it the tensor alone
            spec = attributes[mod[1]]
            tree[n.id] = Node("module", name=spec.type, args=(tree[n.inputs[0]],), value=spec)
        else:
            tree[n.id] = _node(n, tuple(tree[i] for i in n.inputs))
    names = tuple(arg_name(p) for p in params)
    forward = ", ".join(("self", *names))
    signature = Signature(init_source="self", forward_source=forward, forward_names=names, doc=title,
                          modules=tuple(module_rows))
    ops = ", ".join(n.op for n in group)
    facts = TaskFacts(
        path=None, aliases={}, env={}, init_params=[], init_values={}, init_problems=[], attributes=attributes,
        forward_params=list(names), inputs=list(inputs), inputs_problem=None, root=tree[writes],
        forward_source=f"def forward({forward}):\n    # {title} ({ops})", signature=signature)
    return GroupFacts(facts, tuple(params), tuple(modules))


def _positions(graph: OpGraph, group: list[OpNode], vid: str) -> int | None:
    """The size of the axis an integer tensor indexes when every node of the group that reads it reads it
    as positions (an `index_inputs` operand: gather's index along its dim, an embedding's rows), else None."""
    spans: set[int] = set()
    for n in group:
        kind = registry.kind(n.op)
        for i, src in enumerate(n.inputs):
            if src != vid:
                continue
            if kind is None or i not in kind.index_inputs:
                return None
            operand, along = kind.positions_along
            values = graph.shape_of(n.inputs[operand]) if operand < len(n.inputs) else None
            if values is None:
                return None
            spans.add(values[(int(n.attrs.get("dim", 0)) if along is None else along) % len(values)])
    return min(spans) if spans else None


def _node(n: OpNode, a: tuple[Node, ...]) -> Node:
    """One graph node in the canonical form the recogniser reads, over its inputs' trees: what the node
    is comes from its registry entry (role, identity, the spelling a kernel reads it with), so no
    operator is listed here."""
    op, at = n.op, n.attrs
    kind = registry.kind(op)
    if op == "view":
        out = a[0]
        for step in at.get("steps", ()):
            out = _view(V.step_of(step), out)
        return out
    if kind is None:
        raise Unsupported(f"{n.spelling} ({op}) is not an operator of the registry")
    if kind.identity:
        return a[0]
    if op == "dropout":
        if not at.get("p"):
            return a[0]
        raise Unsupported(f"{n.spelling}: dropout(p={at.get('p')}) in training mode is random, so no kernel can "
                          "match it; in eval mode it is the identity")
    if kind.row_local and n.shape:  # rotate_half, written as PyTorch code does; the reader folds it back
        h = n.shape[-1] // 2
        upper = Node("index", args=(a[0],), value=("...", {"slice": (h, None, None)}))
        lower = Node("index", args=(a[0],), value=("...", {"slice": (None, h, None)}))
        halves = Node("tuple", args=(Node("neg", args=(upper,)), lower))
        return _call("cat", (halves,), "torch", dim=-1)
    where, how = kind.spelled
    if how == "keywords":  # torch.narrow(x, dim=..., ...), F.pad(x, pad=...), torch.lstm(x, h0, ..., batch_first=...)
        return _call(op, a, where, **_present(at, kind.params))
    if how == "positional":  # x.transpose(0, 1)
        return _call(op, (*a, *(_const(at.get(p)) for p in kind.params)), where)
    if how == "spread":  # x.permute(2, 0, 1)
        return _call(op, (*a, *(_const(d) for d in at.get(kind.params[0], ()))), where)
    if kind.role == "elementwise":
        if op in ir.INFIX:  # written with its operator: (a + b), a ** 2, a < b
            return Node("bin", name=op, args=a)
        return _call(op, a, "torch", **_present(at, tuple(k for k in at if k != "inplace")))
    if op == "linear":  # the weight is an input of the kernel: x @ W.T
        return _call("matmul", (a[0], _call("t", (a[1],), "method")), "torch")
    if kind.role == "matmul" and kind.arity == 2:
        return _call(op, a, "torch")
    if kind.role == "softmax":
        return _call(op, a, "torch", dim=at.get("dim"))
    if kind.role == "reduction" and kind.params[:2] == ("dim", "keepdim"):
        return _call(kind.spelled_as or op, a, "torch", **_present(at, ("dim",)), keepdim=bool(at.get("keepdim")))
    element_of = registry.tuple_of(kind)
    if element_of is not None:  # torch.topk(x, k, dim=...)[i]: element i of the tuple the call returns
        whole, element = element_of
        keys = tuple(k for k in whole.params if k != whole.params[0])
        call = _call(whole.name, (a[0], _const(at.get(whole.params[0]))), "torch", **_present(at, keys))
        return Node("index", args=(call,), value=element)
    if kind.index_inputs:  # torch.gather(x, dim, index): a parameter with no constant is the next tensor
        tensors = iter(a)
        args = [next(tensors)]
        for p in kind.params:  # a parameter the node leaves out (an embedding's padding_idx) keeps its default
            if p in at:
                args.append(_const(at[p]))
            elif (t := next(tensors, None)) is not None:
                args.append(t)
            else:
                break
        return _call(op, tuple(args), "torch")
    if kind.role == "layout" and kind.arity == -1:  # a concatenation of the group's inputs
        return _call(op, (Node("tuple", args=a),), "torch", **_present(at, kind.params))
    if kind.role == "attention":  # F.scaled_dot_product_attention(q, k, v, is_causal=..., scale=...)
        if len(a) != 3 or at.get("attn_mask") is not None or at.get("dropout_p"):
            raise Unsupported(f"{n.spelling}: attention with a mask tensor or dropout inside a chain is not "
                              "scaffolded yet")
        return _call(op, a, "F", **_present(at, ("is_causal", "scale")))
    if kind.role == "pool" and n.spelling.startswith("F."):
        keys = tuple(k for k in at if k not in ("nd", "return_indices"))
        return _call(n.spelling[2:], a, "F", **_present(at, keys))
    raise Unsupported(f"{n.spelling} ({op}, a {n.role}) inside a chain is not scaffolded yet")


def _view(s: V.Step, x: Node) -> Node:
    if s.kind == "expand":
        return _widened(x, s.shape)
    if s.kind == "unsqueeze":
        return _call("unsqueeze", (x, _const(s.dim)), "method")
    if s.kind == "reshape":
        return _call("reshape", (x, *(_const(d) for d in s.shape)) if s.shape else (x, _const(())), "method")
    if s.kind == "select":
        return _call("select", (x, _const(s.dim), _const(s.index)), "method")
    if s.kind == "narrow":
        return _call("narrow", (x, _const(s.dim), _const(s.start), _const(s.length)), "method")
    raise Unsupported(f"the view '{s.kind}' has no kernel form")


def _widened(x: Node, shape: tuple[int, ...]) -> Node:
    """`expand(f(a, b), shape)` for an elementwise f as `f(expand(a), expand(b))`: the kernel patterns read a
    broadcast at an operand (a leaf the kernel widens with expand_clone), not around a computed value, and a
    trace writes F.normalize's `x / clamp(norm).expand_as(x)` with the expand outside. Each operand is
    broadcastable to the target, since its result was; a constant broadcasts on its own."""
    if x.kind == "const":
        return x
    elementwise = (x.kind == "bin" and x.name != "matmul") or x.kind == "neg" or (
        x.kind == "call" and (k := registry.kind(x.name)) is not None and k.role == "elementwise")
    if not elementwise:
        return _call("expand", (x, *(_const(d) for d in shape)), "method")
    return Node(x.kind, name=x.name, args=tuple(_widened(a, shape) for a in x.args), kwargs=x.kwargs, value=x.value)


def contract_of(graph: OpGraph, group: KernelGroupLike, kb: Any, title: str) -> tuple[Contract, tuple[str, ...],
                                                                                     tuple[str, ...]]:
    """A kernel group's checked contract (the path a task file's contract takes after reading), the
    value ids forward hands the kernel, in order, and the task's modules it calls."""
    found = group_facts(graph, group.nodes, group.reads, group.writes, title)
    return contract_from_facts(found.facts, kb), found.reads, found.modules
