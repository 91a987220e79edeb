"""The traced front end's converter: an exported ATen graph (as the tracer describes it) to an OpGraph.

The tracer (`pypto_tui/trace`) runs the task's Model through `torch.export` in the task runner and
hands back plain JSON: the placeholders (the user's inputs; parameters and buffers with their path in
the model, `layer1.0.conv1.weight`), the `call_function` nodes (ATen name, arguments as node references
or constants, output shape and dtype, the innermost module it ran in) and the output. This module maps
each node to its registry kind through the kind's `aten` names (`pypto_tui.ops`) and builds the same
`OpGraph` the static reader builds for the same operators: the same kinds, inputs in the same order,
the attributes a module's constructor gives (a conv's in/out channels and kernel size read back from
its weight), the module anchors spelled `nn.<Type> self.<path>` so the partition, `group_facts` and the
patterns treat both graphs alike. An ATen operator the registry does not know is a problem naming it
and the submodule it ran in; the rest of the graph is still built. Pure: no torch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pypto_tui.contract.graph import OpGraph, Value, _Builder
from pypto_tui.ops import registry
from pypto_tui.ops import views as V
from pypto_tui.ops.base import OpError, OpKind, Shape
from pypto_tui.ops.layout import pad_widths, per_axis

PROBLEM_CHARS = 200
NO_VALUE = ("aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range.default",
            "aten.sym_constrain_range_for_size.default", "aten._assert_async.msg")
"""Checks torch.export leaves in a graph: they compute nothing any node reads."""
FILLS = {"aten.scalar_tensor.default": 0, "aten.full.default": 1, "aten.full_like.default": 1}
"""Tensors of one value (`masked_fill`'s -inf, `torch.full`): a constant of the graph, broadcast where it is
read (the argument position of the value)."""
RANDOM = ("aten.randn.default", "aten.rand.default", "aten.randint.low", "aten.randint.default",
          "aten.normal.float_float", "aten.bernoulli.p", "aten.randn_like.default", "aten.rand_like.default")
"""Random draws inside forward: no kernel can draw the numbers torch draws, so the task has to hand the
tensor in (get_inputs) instead."""
FRONT_END = "traced"


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= PROBLEM_CHARS else text[:PROBLEM_CHARS - 3] + "..."


def _uniform(v: Any) -> Any:
    """[3, 3] -> 3 (a module's argument as people write it); a list of differing sizes -> a tuple."""
    if isinstance(v, list | tuple):
        if len(v) >= 1 and all(x == v[0] for x in v):
            return v[0]
        return tuple(v)
    return v


def _const_value(a: Any) -> Any:
    """A constant argument as the tracer wrote it: a float that JSON cannot hold comes as {'float': 'inf'}."""
    if isinstance(a, dict) and "float" in a:
        return float(a["float"])
    if isinstance(a, dict) and "dtype" in a:
        return a["dtype"]
    if isinstance(a, dict) and "repr" in a:
        return a["repr"]
    if isinstance(a, list):
        return tuple(_const_value(x) for x in a)
    return a


def attr_of(path: str) -> str:
    """A module path (`layer1.0.conv1`) as the one attribute name a kernel's contract calls it by
    (`layer1_0_conv1`): the static reader's module anchors are attributes of the model itself."""
    name = re.sub(r"\W", "_", path)
    return name if name.isidentifier() else f"m_{name}"


def _is_ref(a: Any) -> bool:
    return isinstance(a, dict) and "node" in a


class _Converter:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.b = _Builder(())
        self.ref: dict[str, str] = {}  # fx name -> value or node id
        self.multi: dict[str, dict[int, Callable[[], str]]] = {}  # a tuple-valued node's elements
        self.pending: dict[str, Mapping[str, Any]] = {}  # parameters and buffers, made when first read
        # elements of a tuple of computed tensors (topk's values and indices, `_Computed`), made when first
        # read: the graph's nodes come in the order forward reads them, as the static reader builds them
        self.lazy: dict[str, Callable[[], str]] = {}
        self.modes: set[str] = set()
        self.paths: dict[str, str] = {}  # attribute name -> module path, where they differ
        modes = [m for m in data.get("modes") or () if isinstance(m, Mapping)]
        # the BatchNorm and Dropout modules the task builds in training mode (the tracer exports in eval mode)
        self.training = {str(m.get("path")) for m in modes if m.get("training")}
        self.random = [m for m in modes if m.get("training") and m.get("p")]
        self.unknowns: set[str] = set()  # nodes the graph could not read (each one problem)
        placeholders = list(data.get("placeholders") or ())
        for p in sorted((p for p in placeholders if p.get("kind") == "input"),
                        key=lambda p: p.get("index") if isinstance(p.get("index"), int) else 0):
            shape = p.get("shape")
            if shape is None:
                self.b.problems.append(_one_line(f"input {p['name']} is not a tensor: the traced graph takes "
                                                 "tensor inputs only"))
                continue
            self.b.values[p["name"]] = Value(p["name"], "input", tuple(int(s) for s in shape), p.get("dtype"))
            self.ref[p["name"]] = p["name"]
        for p in placeholders:
            if p.get("kind") != "input":
                self.pending[p["name"]] = p

    # ------------------------------------------------------------------ reading arguments
    def tensor(self, a: Any, node: Mapping[str, Any]) -> str:
        """The value or node id an argument refers to (a parameter is made the first time it is read)."""
        name = a["node"]
        if name in self.ref:
            return self.ref[name]
        if name in self.lazy:
            self.ref[name] = self.lazy.pop(name)()
            return self.ref[name]
        if name in self.pending:
            p = self.pending.pop(name)
            target = str(p.get("target") or name)
            owner = target.rsplit(".", 1)[0] if "." in target else ""
            path, mtype = str(node.get("module") or ""), str(node.get("module_type") or "")
            if owner and path == owner and mtype:
                source = f"nn.{mtype} self.{owner}"
            elif p.get("kind") == "constant":
                source = f"a tensor constant self.{target}"
            else:
                source = f"nn.Parameter self.{target}" if not owner else f"{p.get('kind')} self.{target}"
            shape = p.get("shape")
            pid = f"{self.attr(owner)}.{target.rsplit('.', 1)[-1]}" if owner else target
            self.ref[name] = self.b.param(pid, tuple(int(s) for s in shape) if shape is not None else None,
                                          p.get("dtype"), source)
            return self.ref[name]
        raise OpError(f"{name} is read before it is computed")

    def operand(self, a: Any, node: Mapping[str, Any]) -> str:
        """A tensor argument, or a scalar one as a constant of the graph."""
        if _is_ref(a):
            return self.tensor(a, node)
        return self.b.const(_const_value(a), "a constant of forward")

    def attr(self, path: str) -> str:
        """`attr_of(path)`, remembering the path the composed module reaches the submodule by."""
        name = attr_of(path)
        if name != path:
            self.paths[name] = path
        return name

    # ------------------------------------------------------------------ the graph
    def where(self, node: Mapping[str, Any]) -> str:
        """The submodule a node ran in and the task file's line it was traced from."""
        path, mtype = node.get("module") or "", node.get("module_type") or ""
        line = node.get("line")
        return (f"self.{path} ({mtype})" if path else "forward") + (f", line {line}" if isinstance(line, int) else "")

    def spelling(self, node: Mapping[str, Any], kind: OpKind) -> str:
        """`nn.Conv2d self.layer1.0.conv1` for a module's own operator, else the ATen name and where it ran."""
        path, mtype = str(node.get("module") or ""), str(node.get("module_type") or "")
        same_rank = mtype[-2:] not in ("1d", "2d", "3d") or not any(f"{d}d" in str(node["target"]) for d in (1, 2, 3)) \
            or f"{mtype[-2]}d" in str(node["target"])  # MaxPool1d may run as max_pool2d on an unsqueezed input
        if path and mtype and registry.by_module(mtype) is kind and same_rank:
            return f"nn.{mtype} self.{self.attr(path)}"
        if kind.role == "pool" and kind.functions:
            nd = self.nd(node, 0)
            fn = next((f for f in kind.functions if f.endswith(f"{nd}d")), kind.functions[0])
            return f"F.{fn}"
        return f"{node['target']} in self.{path}" if path else str(node["target"])

    def nd(self, node: Mapping[str, Any], x_rank: int) -> int:
        """The operator's spatial rank: the ATen operator's own (`max_pool2d...`), else the module's."""
        target = str(node.get("target") or "")
        for d in (1, 2, 3):
            if f"{d}d" in target:
                return d
        mtype = str(node.get("module_type") or "")
        if mtype[-2:] in ("1d", "2d", "3d"):
            return int(mtype[-2])
        return max(1, x_rank - 2)

    def add(self, node: Mapping[str, Any], kind: OpKind, inputs: Sequence[str], attrs: Mapping[str, Any],
            op: str | None = None) -> str:
        spelling = self.spelling(node, kind)
        nid = self.b.add(op or kind.name, kind.role, inputs, attrs, spelling, kind,
                         dtype=node.get("dtype") if op is None or op == kind.name else None)
        made = self.b.nodes[-1]
        traced = node.get("shape")
        if made.shape is not None and traced is not None and tuple(made.shape) != tuple(traced):
            self.b.problems.append(_one_line(f"{spelling}: the registry's shape {tuple(made.shape)} is not the "
                                             f"traced {tuple(traced)}"))
        return nid

    def node(self, nid: str) -> Any:
        return next((n for n in reversed(self.b.nodes) if n.id == nid), None)

    def unknown(self, node: Mapping[str, Any], why: str) -> str:
        """A node the graph cannot read: a problem (one line naming the operator and its submodule), and a
        node of kind `unknown` with the traced shape, so the shapes after it still follow."""
        ins = [self.tensor(a, node) for a in _flat(node.get("args") or ()) if _is_ref(a) and self._known(a)]
        nid = self.b.unknown(_one_line(f"{node['target']} in {self.where(node)}: {why}"), ins)
        self.unknowns.add(nid)
        self.b.nodes[-1] = replace(self.b.nodes[-1], shape=_shape(node.get("shape")), dtype=node.get("dtype"))
        return nid

    def _known(self, a: Any) -> bool:
        return a["node"] in self.ref or a["node"] in self.pending or a["node"] in self.lazy

    def convert(self, node: Mapping[str, Any]) -> None:
        name, target = str(node["name"]), str(node["target"])
        args = list(node.get("args") or ())
        if target in NO_VALUE:
            return
        if target in FILLS and len(args) > FILLS[target] and not _is_ref(args[FILLS[target]]):
            shape = _shape(node.get("shape")) or ()
            cid = self.b.const(_const_value(args[FILLS[target]]), f"{target} {list(shape)}" if shape else target)
            self.b.values[cid] = replace(self.b.values[cid], shape=shape)  # zeros_like(bias): a tensor of one value
            self.ref[name] = cid
            return
        if target in ("getitem", "<built-in function getitem>"):
            src, index = [*args, None, None][:2]
            made = self.ref.get(src["node"]) if _is_ref(src) else None
            if made is not None and made in self.unknowns:  # an element of an operator already reported
                nid = self.b.add("unknown", "other", [made], {"why": f"element {index} of {made}"}, "getitem")
                self.b.nodes[-1] = replace(self.b.nodes[-1], shape=_shape(node.get("shape")), dtype=node.get("dtype"))
                self.unknowns.add(nid)
                self.ref[name] = nid
                return
            elements = self.multi.get(src["node"]) if _is_ref(src) else None
            make = elements.get(index) if elements is not None and isinstance(index, int) else None
            if make is None:
                self.ref[name] = self.unknown(node, f"element {index} of a tuple the graph does not keep")
            elif isinstance(elements, _Computed):
                self.lazy[name] = make
            else:
                self.ref[name] = make()
            return
        kind = registry.by_aten(target)
        if kind is None:
            self.ref[name] = self.unknown(node, _no_kind_why(target))
            return
        handler: Handler = _HANDLERS.get(kind.name, _generic)
        try:
            out = handler(self, node, kind, args, dict(node.get("kwargs") or {}))
        except (OpError, ValueError, KeyError, IndexError, TypeError) as exc:
            self.ref[name] = self.unknown(node, str(exc) or type(exc).__name__)
            return
        if isinstance(out, dict):
            self.multi[name] = out
        else:
            self.ref[name] = out

    def outputs(self, out: Any) -> tuple[str, ...]:
        """The graph's values forward returns, in order (a tuple's elements each): a constant or None
        among them is a problem, since a kernel writes tensors only."""
        outs = out if isinstance(out, list) else [out]
        if not any(_is_ref(o) for o in outs):
            self.b.problems.append("forward returns no tensor")
            return ()
        if not all(_is_ref(o) for o in outs):
            self.b.problems.append("forward returns a tuple with an element that is not a tensor: return the "
                                   "tensors alone")
        return tuple(self.tensor(o, {}) for o in outs if _is_ref(o) and self._known(o))


def _no_kind_why(target: str) -> str:
    """Why an ATen operator without a registry entry stops the graph, and what the user can do."""
    if target in RANDOM:
        return ("forward draws random numbers, which no kernel can reproduce: "
                "pass the tensor from get_inputs() instead")
    return "not in the operator registry (`pypto-tui kb ops` lists the operators it reads)"


def _shape(s: Any) -> Shape | None:
    return tuple(int(x) for x in s) if isinstance(s, list | tuple) else None


def _flat(args: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for a in args:
        out.extend(_flat(a) if isinstance(a, list) else [a])
    return out


Handler = Callable[[_Converter, Mapping[str, Any], OpKind, list[Any], dict[str, Any]], Any]


def _arg(args: list[Any], kwargs: Mapping[str, Any], i: int, key: str, default: Any = None) -> Any:
    if key in kwargs:
        return _const_value(kwargs[key])
    return _const_value(args[i]) if len(args) > i else default


# ====================================================================== per kind
def _generic(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    """Tensor arguments are the inputs (a scalar one of an arithmetic operator is a constant); the other
    positional arguments bind to the kind's parameters in torch's order, keywords by name."""
    ins: list[str] = []
    attrs: dict[str, Any] = {}
    rest: list[Any] = []
    for a in args:
        if _is_ref(a):
            ins.append(c.tensor(a, node))
        else:
            rest.append(a)
    if len(rest) > len(kind.params):
        raise OpError(f"takes {len(rest)} constant arguments; the registry's '{kind.name}' reads {len(kind.params)}")
    for p, a in zip(kind.params, rest, strict=False):
        attrs[p] = _uniform(_const_value(a)) if isinstance(a, list) else _const_value(a)
    for k, v in kwargs.items():
        if k in kind.params:
            attrs[k] = _const_value(v)
    return c.add(node, kind, ins, attrs)


def _identity(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    """A copy or an alias computes nothing: its readers read the tensor itself."""
    return c.tensor(args[0], node)


def _to_copy(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    x = c.tensor(args[0], node)
    want = node.get("dtype")
    if want is None or want == c.b.dtype(x):
        return x
    to = registry.conversion_to(str(want))
    if to is None:
        raise OpError(f"a conversion to {want}")
    return c.add(node, to, [x], {}, to.name)


def _binary(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    target = str(node["target"])
    a, b = c.operand(args[0], node), c.operand(args[1], node)
    alpha = _arg(args, kwargs, 2, "alpha", 1)
    if target.startswith("aten.rsub"):
        a, b = b, a
    if alpha not in (1, 1.0, None):
        mul = registry.kind("mul")
        assert mul is not None
        b = c.b.add("mul", "elementwise", [b, c.b.const(alpha, "alpha")], {}, f"{target} alpha", mul)
    if target == "aten.div.Tensor_mode":
        mode = _arg(args, kwargs, 2, "rounding_mode")
        if mode == "floor":
            fd = registry.kind("floordiv")
            assert fd is not None
            return c.add(node, fd, [a, b], {}, "floordiv")
        if mode is not None:
            raise OpError(f"division with rounding_mode={mode!r}")
    return c.add(node, kind, [a, b], {})


def _where(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    return c.add(node, kind, [c.operand(a, node) for a in args[:3]], {})


def _elu(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    alpha, scale, input_scale = (_arg(args, kwargs, i, k, 1.0) for i, k in
                                 ((1, "alpha"), (2, "scale"), (3, "input_scale")))
    if scale != 1 or input_scale != 1:
        raise OpError(f"elu with scale={scale} and input_scale={input_scale}")
    return c.add(node, kind, [c.tensor(args[0], node)], {"alpha": alpha})


def _conv(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    x, w = c.tensor(args[0], node), c.tensor(args[1], node)
    bias = c.tensor(args[2], node) if _is_ref(args[2]) else None
    stride, padding, dilation, transposed, output_padding, groups = (_const_value(a) for a in args[3:9])
    ws = c.b.shape(w)
    if ws is None:
        raise OpError("the conv's weight has no shape")
    nd = len(ws) - 2
    g = int(groups)
    in_ch, out_ch = (ws[0], ws[1] * g) if transposed else (ws[1] * g, ws[0])
    attrs: dict[str, Any] = {"bias": bias is not None, "dilation": _uniform(dilation), "groups": g,
                             "in_channels": in_ch, "kernel_size": _uniform(ws[2:]), "nd": nd, "out_channels": out_ch}
    if transposed:
        attrs["output_padding"] = _uniform(output_padding)
    attrs.update(padding=_uniform(padding), padding_mode="zeros", stride=_uniform(stride))
    use = registry.kind("conv_transpose" if transposed else "conv")
    assert use is not None
    return c.add(node, use, [x, w, *([bias] if bias else [])], attrs)


def _first_of_tuple(c: _Converter, node: Mapping[str, Any], make: Callable[[], str],
                    what: str) -> dict[int, Callable[[], str]]:
    """A tuple-valued operator (values and indices, output and statistics): element 0 is the node; any
    other element read is a problem naming it."""
    memo: dict[int, str] = {}

    def first() -> str:
        if 0 not in memo:
            memo[0] = make()
        return memo[0]

    def other() -> str:
        return c.unknown(node, f"its {what} are read; the graph keeps the first output only")

    return {0: first, 1: other, 2: other}


def _max_pool(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    xs = c.b.shape(x) or ()
    kernel = _uniform(_arg(args, kwargs, 1, "kernel_size"))
    stride = _arg(args, kwargs, 2, "stride", ())
    attrs = {"ceil_mode": bool(_arg(args, kwargs, 5, "ceil_mode", False)),
             "dilation": _uniform(_arg(args, kwargs, 4, "dilation", 1)), "kernel_size": kernel,
             "nd": c.nd(node, len(xs)), "padding": _uniform(_arg(args, kwargs, 3, "padding", 0)),
             "return_indices": False, "stride": _uniform(stride) if stride not in ((), [], None) else None}
    if "with_indices" not in str(node["target"]):
        return c.add(node, kind, [x], attrs)
    return _first_of_tuple(c, node, lambda: c.add(node, kind, [x], attrs), "indices")


def _avg_pool(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    x = c.tensor(args[0], node)
    stride = _arg(args, kwargs, 2, "stride", ())
    attrs = {"ceil_mode": bool(_arg(args, kwargs, 4, "ceil_mode", False)),
             "count_include_pad": bool(_arg(args, kwargs, 5, "count_include_pad", True)),
             "divisor_override": _arg(args, kwargs, 6, "divisor_override"),
             "kernel_size": _uniform(_arg(args, kwargs, 1, "kernel_size")), "nd": c.nd(node, len(c.b.shape(x) or ())),
             "padding": _uniform(_arg(args, kwargs, 3, "padding", 0)),
             "stride": _uniform(stride) if stride not in ((), [], None) else None}
    return c.add(node, kind, [x], attrs)


def _adaptive(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    size = _const_value(args[1])
    attrs = {"nd": c.nd(node, len(c.b.shape(x) or ())), "output_size": list(size) if isinstance(size, tuple) else size}
    if kind.name == "adaptive_max_pool":
        return _first_of_tuple(c, node, lambda: c.add(node, kind, [x], attrs), "indices")
    return c.add(node, kind, [x], attrs)


def _batch_norm(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
                kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    parts = [c.tensor(a, node) if _is_ref(a) else None for a in args[1:5]]
    w, b, rm, rv = parts
    xs = c.b.shape(x) or ()
    attrs: dict[str, Any] = {"affine": w is not None, "eps": _const_value(args[6]),
                             "momentum": _const_value(args[5]), "nd": c.nd(node, len(xs)),
                             "num_features": xs[1] if len(xs) > 1 else None, "track_running_stats": rm is not None}
    if str(node.get("module") or "") in c.training:  # built in training mode: verify's baseline takes the batch's
        c.modes.add("batch_norm training")
    elif rm is not None:  # eval mode: the running statistics (the static reader's `training: False`)
        c.modes.add("batch_norm eval")
        attrs["training"] = False
    ins = [x, *(p for p in (w, b, rm, rv) if p is not None)]
    return _first_of_tuple(c, node, lambda: c.add(node, kind, ins, attrs), "saved statistics")


def _layer_norm(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
                kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    shape = _const_value(args[1])
    w = c.tensor(args[2], node) if len(args) > 2 and _is_ref(args[2]) else None
    b = c.tensor(args[3], node) if len(args) > 3 and _is_ref(args[3]) else None
    eps = _arg(args, kwargs, 4, "eps", 1e-5)
    normalized = shape[0] if isinstance(shape, tuple) and len(shape) == 1 else shape
    attrs = {"bias": b is not None, "elementwise_affine": w is not None, "eps": eps, "normalized_shape": normalized}
    ins = [x, *(p for p in (w, b) if p is not None)]
    if str(node["target"]).startswith("aten.native_layer_norm"):
        return _first_of_tuple(c, node, lambda: c.add(node, kind, ins, attrs), "statistics")
    return c.add(node, kind, ins, attrs)


def _group_norm(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
                kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    xs = c.b.shape(x) or ()
    native = str(node["target"]).startswith("aten.native_group_norm")
    if native:  # (input, weight, bias, N, C, HxW, group, eps)
        w, b, groups, eps = args[1], args[2], _const_value(args[6]), _const_value(args[7])
    else:  # (input, num_groups, weight, bias, eps, cudnn_enabled)
        groups = _const_value(args[1])
        w, b = (args[2] if len(args) > 2 else None), (args[3] if len(args) > 3 else None)
        eps = _arg(args, kwargs, 4, "eps", 1e-5)
    wid = c.tensor(w, node) if _is_ref(w) else None
    bid = c.tensor(b, node) if _is_ref(b) else None
    attrs = {"affine": wid is not None, "eps": eps, "num_channels": xs[1] if len(xs) > 1 else None,
             "num_groups": groups}
    ins = [x, *(p for p in (wid, bid) if p is not None)]
    if native:
        return _first_of_tuple(c, node, lambda: c.add(node, kind, ins, attrs), "statistics")
    return c.add(node, kind, ins, attrs)


def _instance_norm(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
                   kwargs: dict[str, Any]) -> str:
    """instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn)."""
    x = c.tensor(args[0], node)
    w, b, rm = (c.tensor(a, node) if _is_ref(a) else None for a in args[1:4])
    xs = c.b.shape(x) or ()
    attrs = {"affine": w is not None, "eps": _const_value(args[7]), "momentum": _const_value(args[6]),
             "nd": c.nd(node, len(xs)), "num_features": xs[1] if len(xs) > 1 else None,
             "track_running_stats": rm is not None}
    return c.add(node, kind, [x, *(p for p in (w, b) if p is not None)], attrs)


def _linear(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    x, w = c.tensor(args[0], node), c.tensor(args[1], node)
    b = c.tensor(args[2], node) if len(args) > 2 and _is_ref(args[2]) else None
    ws = c.b.shape(w) or (None, None)
    attrs = {"bias": b is not None, "in_features": ws[-1], "out_features": ws[0]}
    return c.add(node, kind, [x, w, *([b] if b else [])], attrs)


def _matmul(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    if str(node["target"]) != "aten.addmm.default":
        return c.add(node, kind, [c.tensor(a, node) for a in args[:2]], {})
    # addmm(bias, m1, m2, beta, alpha) = beta * bias + alpha * m1 @ m2: the product, then the bias added
    beta, alpha = _arg(args, kwargs, 3, "beta", 1), _arg(args, kwargs, 4, "alpha", 1)
    if beta != 1 or alpha != 1:
        raise OpError(f"addmm with beta={beta} and alpha={alpha}")
    bias, m1, m2 = (c.tensor(a, node) for a in args[:3])
    add = registry.kind("add")
    assert add is not None
    product = c.b.add("matmul", "matmul", [m1, m2], {}, c.spelling(node, kind), kind)
    return c.add(node, add, [product, bias], {}, "add")


def _sdpa(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    ins = [c.tensor(a, node) for a in args[:3]]
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    if _is_ref(mask):
        ins.append(c.tensor(mask, node))
    attrs = {"dropout_p": _arg(args, kwargs, 4, "dropout_p", 0.0),
             "is_causal": _arg(args, kwargs, 5, "is_causal", False), "scale": _arg(args, kwargs, 6, "scale")}
    return c.add(node, kind, ins, attrs)


def _softmax(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    return c.add(node, kind, [c.tensor(args[0], node)], {"dim": _arg(args, kwargs, 1, "dim")})


def _dims(v: Any) -> Any:
    if isinstance(v, tuple | list):
        if len(v) == 0:
            return None
        return v[0] if len(v) == 1 else tuple(v)
    return v


def _reduce(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    target = str(node["target"])
    if kind.name in ("var", "std"):
        attrs = {"dim": _dims(_arg(args, kwargs, 1, "dim")), "correction": _arg(args, kwargs, 9, "correction", 1),
                 "keepdim": bool(_arg(args, kwargs, 9, "keepdim", False))}
        if target.endswith(".dim"):
            attrs["correction"] = 1 if _arg(args, kwargs, 2, "unbiased", True) else 0
            attrs["keepdim"] = bool(_arg(args, kwargs, 3, "keepdim", False))
        return c.add(node, kind, [x], attrs)
    if kind.name == "norm":  # linalg_vector_norm(x, ord, dim, keepdim)
        attrs = {"p": _arg(args, kwargs, 1, "ord", 2), "dim": _dims(_arg(args, kwargs, 2, "dim")),
                 "keepdim": bool(_arg(args, kwargs, 3, "keepdim", False))}
        return c.add(node, kind, [x], attrs)
    attrs = {"dim": _dims(_arg(args, kwargs, 1, "dim")), "keepdim": bool(_arg(args, kwargs, 2, "keepdim", False))}
    if target.endswith(".default") and kind.name in ("sum", "mean", "prod") and len(args) == 1:
        attrs = {}
    if kind.name in ("max_dim", "min_dim"):
        arg = registry.kind("argmax" if kind.name == "max_dim" else "argmin")
        assert arg is not None
        memo: dict[int, str] = {}

        def element(i: int) -> Callable[[], str]:
            def make() -> str:
                if i not in memo:
                    memo[i] = c.add(node, kind, [x], attrs) if i == 0 else c.add(node, arg, [x], attrs, arg.name)
                return memo[i]
            return make

        return {0: element(0), 1: element(1)}
    return c.add(node, kind, [x], attrs)


class _Computed(dict[int, Callable[[], str]]):
    """A tuple whose elements are each a computation of its own (topk's values and indices), not views of one
    tensor (split's parts, which stay in the order the trace takes them)."""


def _elements(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """A kind that returns a tuple (`aten.topk`: values, indices): each element a node of the kind that
    computes it (`registry.element_of`: topk, topk_indices), made when the graph reads it."""

    def element(part: OpKind) -> Callable[[], str]:
        return functools.cache(lambda: _generic(c, node, part, args, kwargs))

    parts = {i: registry.element_of(kind, i) for i in range(len(kind.returns))}
    return _Computed({i: element(part) for i, part in parts.items() if part is not None})


def _cat(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    parts = [c.tensor(a, node) for a in args[0]]
    dim = _arg(args, kwargs, 1, "dim", 0)
    parts = _fills_as_pads(c, node, parts, dim)
    if len(parts) == 1:
        return parts[0]
    x = _rotated_half(c, parts, dim)
    if x is not None:  # cat((-x[..., h:], x[..., :h]), -1): the static reader's rotate_half (contract/rope.py)
        rot = registry.kind("rotate_half")
        assert rot is not None
        return c.add(node, rot, [x], {}, "rotate_half")
    return c.add(node, kind, parts, {"dim": dim})


def _embedding(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    """`embedding(weight, indices)`, or `table[index]` (`index.Tensor` with one index tensor, on the first
    axis: Swin's relative-position bias table): the index's positions pick rows of the table. The graph
    keeps torch's functional order, index first, as the static reader builds it."""
    if str(node["target"]) == "aten.index.Tensor":
        table, indices = args[0], args[1] if len(args) > 1 else kwargs.get("indices")
        if not isinstance(indices, list) or len(indices) != 1 or not _is_ref(indices[0]):
            raise OpError("indexing by several index tensors (or past the first axis) is no row pick: only "
                          "table[index] with one integer index tensor is read")
        index = indices[0]
    else:
        table, index = args[0], args[1]
    t, i = c.tensor(table, node), c.tensor(index, node)
    shape = c.b.shape(t) or (None, None)
    attrs = {"num_embeddings": shape[0], "embedding_dim": shape[-1]} if len(shape) == 2 else {}
    return c.add(node, kind, [i, t], attrs)


def _roll(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    """torch.roll: its shifts and dims stay one entry per axis (two equal shifts are not one)."""
    shifts, dims = per_axis(_arg(args, kwargs, 1, "shifts", ())), per_axis(_arg(args, kwargs, 2, "dims", ()))
    return c.add(node, kind, [c.tensor(args[0], node)], {"shifts": shifts, "dims": dims})


def _fills_as_pads(c: _Converter, node: Mapping[str, Any], parts: list[str], dim: Any) -> list[str]:
    """A block of one value among a concatenation's parts (`cat((q_bias, zeros_like(v_bias), v_bias))`, Swin
    V2's qkv bias) is a border of the part before it (of the part after it, when it comes first): a constant
    pad (PAD.rows-copy), since a kernel's inputs are tensors the task hands in, never a fill."""
    pad = registry.kind("pad")
    assert pad is not None
    out: list[str] = []
    pending = 0  # a leading fill's size, padded onto the next part
    fill_value: Any = 0.0
    for vid in parts:
        v = c.b.values.get(vid)
        if v is None or v.kind != "const" or not v.shape:
            if pending:
                out.append(_padded(c, node, pad, vid, dim, pending, 0, fill_value))
                pending = 0
            else:
                out.append(vid)
            continue
        rank = len(v.shape)
        d = int(dim) % rank
        if out:
            out[-1] = _padded(c, node, pad, out[-1], d, 0, v.shape[d], v.value)
        else:
            pending, fill_value = pending + v.shape[d], v.value
    if pending:
        raise OpError("a concatenation of fills alone: no tensor to pad")
    return out


def _padded(c: _Converter, node: Mapping[str, Any], pad: OpKind, vid: str, d: int, lo: int, hi: int,
            value: Any) -> str:
    shape = c.b.shape(vid)
    if shape is None:
        raise OpError("a fill beside a part of unknown shape")
    return c.b.add("pad", pad.role, [vid], {"pad": pad_widths(len(shape), d, lo, hi), "mode": "constant",
                                            "value": float(value)},
                   f"{node['target']} (a fill block as a pad)", pad)


def _rotated_half(c: _Converter, parts: list[str], dim: Any) -> str | None:
    """x when `parts` are -x's upper half and x's lower half along x's last axis, else None."""
    if len(parts) != 2:
        return None
    neg, low = c.node(parts[0]), c.node(parts[1])
    upper = c.node(neg.inputs[0]) if neg is not None and neg.op == "neg" else None
    if upper is None or low is None or any(h.op != "view" or len(h.attrs.get("steps", ())) != 1
                                           for h in (upper, low)):
        return None
    (up,), (lo,) = (V.step_of(s) for s in upper.attrs["steps"]), (V.step_of(s) for s in low.attrs["steps"])
    x = upper.inputs[0]
    shape = c.b.shape(x)
    if shape is None or low.inputs[0] != x or not isinstance(dim, int) or dim % len(shape) != len(shape) - 1:
        return None
    h = shape[-1] // 2
    want = (up.kind, up.dim, up.start, up.length, lo.kind, lo.dim, lo.start, lo.length)
    ok = want == ("narrow", len(shape) - 1, h, h, "narrow", len(shape) - 1, 0, h) and shape[-1] == 2 * h
    return x if ok else None


def _permute(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> str:
    """A permutation that swaps two axes is the transpose it was written as (core ATen has no transpose):
    the partition reads a transpose that only a matmul reads as that matmul's operand layout."""
    x = c.tensor(args[0], node)
    dims = tuple(_const_value(args[1]))
    rank = len(dims)
    moved = [i for i, d in enumerate(dims) if d % rank != i] if rank else []
    tr = registry.kind("transpose")
    if len(moved) == 2 and tr is not None and dims[moved[0]] % rank == moved[1]:
        return c.add(node, tr, [x], {"dim0": moved[0], "dim1": moved[1]}, "transpose")
    return c.add(node, kind, [x], {"dims": dims})


def _transpose(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
               kwargs: dict[str, Any]) -> str:
    x = c.tensor(args[0], node)
    if str(node["target"]) == "aten.t.default":
        if len(c.b.shape(x) or ()) < 2:
            return x
        return c.add(node, kind, [x], {"dim0": 0, "dim1": 1})
    return c.add(node, kind, [x], {"dim0": _const_value(args[1]), "dim1": _const_value(args[2])})


def _constant_pad(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any],
                  kwargs: dict[str, Any]) -> str:
    """constant_pad_nd(x, pad, value=0): the pad list as torch writes it, the fill value."""
    x = c.tensor(args[0], node)
    pad = tuple(_const_value(args[1])) if len(args) > 1 else ()
    value = _const_value(args[2]) if len(args) > 2 else _const_value(kwargs.get("value", 0.0))
    return c.add(node, kind, [x], {"pad": pad, "mode": "constant", "value": float(value)})


def _recurrent(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """lstm.input(x, [h0, c0], params, has_biases, num_layers, dropout, train, bidirectional, batch_first), and
    gru.input(x, h0, ...) likewise: one node per layer and direction, each reading the layer before's
    sequence (both directions' side by side, a cat), its four parameters and its slice of the initial
    states (RNN.time-loop); the backward direction runs the steps from the last. The tuple's elements: the
    last layer's sequence; h_n, each layer's and direction's final hidden state stacked; for an LSTM c_n,
    each one's final cell state (a node of its own, made only when read)."""
    name = kind.name.upper()
    x = c.tensor(args[0], node)
    hx = [c.tensor(a, node) for a in (args[1] if isinstance(args[1], list) else [args[1]])]
    params = [c.tensor(a, node) for a in args[2]]
    has_biases, layers, dropout, train, bidirectional, batch_first = (_const_value(a) for a in args[3:9])
    dirs = 2 if bidirectional else 1
    if train and dropout:
        raise OpError(f"an {name} in training mode with dropout={dropout} is random: put the model in eval mode")
    if not has_biases:
        raise OpError(f"an {name} without biases is not scaffolded yet (bias=True is)")
    states = len(kind.inputs) - 5
    if len(hx) != states or len(params) != 4 * layers * dirs:
        raise OpError(f"an {name} of {layers} layer(s) reads {states} initial state(s) and 4 parameters a layer "
                      "and direction")
    view = registry.kind("view")
    cat = registry.kind("cat")
    assert view is not None and cat is not None
    state, seq = c.b.shape(hx[0]), c.b.shape(x)
    if state is None or len(state) != 3:
        raise OpError(f"the {name}'s h0 is not a (layers x directions, batch, hidden) tensor")
    if seq is None or len(seq) != 3:
        raise OpError(f"the {name}'s input is not a (batch, steps, features) sequence of a known shape")
    last_step = (seq[1] if batch_first else seq[0]) - 1  # every layer's sequence has the input's steps
    taken: dict[tuple[str, int], str] = {}

    def part(op: OpKind, ins: list[str], attrs: dict[str, Any], as_op: str | None = None) -> str:
        return c.add({**node, "shape": None}, op, ins, attrs, as_op)

    def layer_state(which: str, index: int) -> str:
        if (which, index) not in taken:
            step = (V.Step("reshape", shape=tuple(state[1:])) if layers * dirs == 1 else
                    V.Step("select", dim=0, index=index))
            taken[which, index] = part(view, [which], {"steps": (step,)}, "view")
        return taken[which, index]

    def layer(src: str, k: int, d: int, emit: str) -> str:
        at = k * dirs + d
        ins = [src, *params[4 * at:4 * at + 4], *(layer_state(h, at) for h in hx)]
        return part(kind, ins, {"batch_first": bool(batch_first), "emit": emit, "reverse": d == 1})

    runs: list[list[str]] = []  # each layer's sequence per direction
    feeds: list[str] = []  # each layer's input sequence
    src = x
    for k in range(layers):
        feeds.append(src)
        runs.append([layer(src, k, d, "sequence") for d in range(dirs)])
        src = runs[-1][0] if dirs == 1 else part(cat, runs[-1], {"dim": -1})

    def stacked(parts: list[str]) -> str:
        one = [part(view, [p], {"steps": (V.Step("unsqueeze", dim=0),)}, "view") for p in parts]
        return one[0] if len(one) == 1 else part(cat, one, {"dim": 0})

    @functools.cache
    def h_n() -> str:
        axis = 1 if batch_first else 0
        return stacked([part(view, [run_seq], {"steps": (V.Step("select", dim=axis, index=0 if d else last_step),)},
                             "view") for run in runs for d, run_seq in enumerate(run)])

    @functools.cache
    def c_n() -> str:
        return stacked([layer(feeds[k], k, d, "cell") for k in range(layers) for d in range(dirs)])

    return {0: lambda: src, 1: h_n, **({2: c_n} if states == 2 else {})}


BIG = 2 ** 62


def _pieces(c: _Converter, node: Mapping[str, Any], kind: OpKind, x: str, shape: Shape, op: str,
            rest: list[Any]) -> dict[int, Callable[[], str]]:
    """split / unbind: a tuple of views of x (narrows along the dim, or selects), each made when read."""
    if op == "unbind":
        d = (rest[0] if rest else 0) % len(shape)
        steps = [V.Step("select", dim=d, index=i) for i in range(shape[d])]
    else:
        sizes, dim = rest[0], (rest[1] if len(rest) > 1 else 0)
        d = dim % len(shape)
        lengths = list(sizes) if isinstance(sizes, tuple | list) else (
            [sizes] * (shape[d] // sizes) + ([shape[d] % sizes] if shape[d] % sizes else []))
        starts = [sum(lengths[:i]) for i in range(len(lengths))]
        steps = [V.Step("narrow", dim=d, start=s, length=n) for s, n in zip(starts, lengths, strict=True)]
    memo: dict[int, str] = {}

    def piece(i: int) -> Callable[[], str]:
        def make() -> str:
            if i not in memo:
                memo[i] = c.add({**node, "shape": None}, kind, [x], {"steps": (steps[i],)})
            return memo[i]
        return make

    return {i: piece(i) for i in range(len(steps))}


def _view(c: _Converter, node: Mapping[str, Any], kind: OpKind, args: list[Any], kwargs: dict[str, Any]) -> Any:
    x = c.tensor(args[0], node)
    shape = c.b.shape(x)
    if shape is None:
        raise OpError("the viewed tensor's shape is unknown")
    op = str(node["target"]).split(".")[1]
    rest = [_const_value(a) for a in args[1:]]
    if op in ("split_with_sizes", "split", "unbind"):
        return _pieces(c, node, kind, x, shape, op, rest)
    steps: list[V.Step]
    if op in ("view", "_unsafe_view", "reshape"):
        steps = V.read_view("reshape", shape, [tuple(rest[0])], {})
    elif op == "expand":
        steps = V.read_view("expand", shape, [tuple(rest[0])], {})
    elif op == "squeeze":
        steps = V.read_view("squeeze", shape, rest[:1], {})
    elif op in ("unsqueeze", "select"):
        steps = V.read_view(op, shape, rest, {})
    elif op == "slice":  # slice(x, dim=0, start=None, end=None, step=1)
        dim, start, end, step = (rest + [0, None, None, 1][len(rest):])[:4]
        steps = V.strided(shape, dim % len(shape), start, None if end is None or end >= BIG else end,
                          1 if step is None else step)
    else:
        raise OpError(f"'{op}' is not a view")
    if not steps or (len(steps) == 1 and steps[0].kind == "reshape" and steps[0].shape == tuple(shape)):
        return x
    return c.add(node, kind, [x], {"steps": tuple(steps)})


_HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "pow", "floordiv", "mod", "lt", "gt", "le", "ge", "eq", "ne",
                     "maximum", "minimum"), _binary),
    "where": _where, "elu": _elu, "clone": _identity, "detach": _identity, "dropout": _identity,
    "float": _to_copy, "conv": _conv, "max_pool": _max_pool, "avg_pool": _avg_pool,
    "adaptive_avg_pool": _adaptive, "adaptive_max_pool": _adaptive, "batch_norm": _batch_norm,
    "layer_norm": _layer_norm, "group_norm": _group_norm, "instance_norm": _instance_norm, "linear": _linear,
    "matmul": _matmul, "bmm": _matmul, "embedding": _embedding, "roll": _roll,
    "scaled_dot_product_attention": _sdpa, "softmax": _softmax, "log_softmax": _softmax,
    **dict.fromkeys(("sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "max_dim", "min_dim", "norm",
                     "argmax", "argmin"), _reduce),
    "topk": _elements, "cat": _cat, "pad": _constant_pad, "lstm": _recurrent, "gru": _recurrent, "permute": _permute,
    "transpose": _transpose, "view": _view,
}
"""How each kind's ATen arguments become the node's inputs and attributes (the rest: `_generic`)."""


def graph_from_trace(data: Mapping[str, Any]) -> OpGraph:
    """The OpGraph of a traced model (the tracer's JSON, `pypto_tui.trace`)."""
    c = _Converter(data)
    for node in data.get("nodes") or ():
        c.convert(node)
    outs = c.outputs(data.get("output"))
    out = outs[0] if outs else None
    b = c.b
    notes = [f"read by tracing the model in eval mode with torch.export (torch {data.get('torch_version', '?')})"]
    if "batch_norm eval" in c.modes:
        notes.append("BatchNorm modules the task puts in eval mode normalise with their running statistics "
                     "(running_mean, running_var, weight, bias, eps): the kernels read them from the module")
    if "batch_norm training" in c.modes:
        notes.append("BatchNorm modules the task builds in training mode (verify's baseline runs Model as built) "
                     "normalise with the batch's statistics, as the static reader reads them")
    notes += [f"nn.{m.get('type')} self.{m.get('path')} is in training mode with p={m.get('p')}: it zeroes random "
              "elements, so the baseline is random and cannot be compared; in eval mode it is the identity"
              for m in c.random]
    nodes = _reaching(b.nodes, outs)
    used = {i for node in nodes for i in node.inputs} | set(outs)
    values = tuple(v for v in b.values.values() if v.id in used or v.kind == "input")
    problems = tuple(dict.fromkeys(_one_line(p) for p in b.problems))
    return OpGraph(values, nodes, out, problems, tuple(notes), dict(sorted(c.paths.items())),
                   outs if len(outs) > 1 else ())


def _reaching(nodes: Sequence[Any], outs: Sequence[str]) -> tuple[Any, ...]:
    """The nodes the outputs depend on, in order (what a fold left behind, an unread tuple element and a
    value forward computes and drops are no kernels); the static reader builds only these."""
    by_id = {n.id: n for n in nodes}
    keep: set[str] = set()
    todo = [o for o in outs if o in by_id]
    while todo:
        nid = todo.pop()
        if nid in keep:
            continue
        keep.add(nid)
        todo.extend(i for i in by_id[nid].inputs if i in by_id)
    return tuple(n for n in nodes if n.id in keep)


def shapes_of(graph: OpGraph) -> dict[str, Shape | None]:
    """Every node's and value's shape (a test's and a report's view of the graph)."""
    return {**{v.id: v.shape for v in graph.values}, **{n.id: n.shape for n in graph.nodes}}
