"""The contract as a graph of operators: what `forward` computes, node by node.

`build_graph` turns the expression tree the reader builds (locals inlined, `self.` resolved) into
an `OpGraph`: the task's tensor inputs, the parameters the model creates in `__init__` (an
`nn.Linear`'s weight and bias, a conv's, a norm's affine weight and bias and running statistics,
an `nn.Parameter`), constants, and operator nodes looked up in the registry (`pypto_tui.ops`),
each with its attributes and the output shape and dtype its own shape function gives, so shapes
flow through the chain. A level-1 task is a graph of one node (plus views). What the registry
does not know, or a shape that does not follow, is a `problem` with the reason; the rest of the
graph is still built. Pure data, JSON-able: no libcst.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto_tui.contract import ir
from pypto_tui.contract.ir import Node
from pypto_tui.contract.model import Input
from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, bind
from pypto_tui.ops import registry
from pypto_tui.ops import views as V
from pypto_tui.ops.base import OpError, OpKind, Shape

BOOL_OPS = ("lt", "gt", "le", "ge", "eq", "ne")


@dataclass(frozen=True)
class Value:
    """A tensor or scalar a node reads: a task input, a parameter created in __init__, a constant."""

    id: str
    kind: str  # input | scalar | param | const
    shape: Shape | None
    dtype: str | None
    value: Any = None  # a constant's or scalar input's value
    source: str = ""  # where it comes from: `nn.Linear self.gemm`, `nn.Parameter self.bias`, `self.scale`

    def to_data(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind,
                             "shape": list(self.shape) if self.shape is not None else None, "dtype": self.dtype}
        if self.kind in ("const", "scalar"):
            d["value"] = _plain(self.value)
        if self.source:
            d["source"] = self.source
        return d


@dataclass(frozen=True)
class OpNode:
    """One operator: its registry kind and role, what it reads (value or node ids, in order), its
    constant attributes, and the shape and dtype of its output (None when they do not follow)."""

    id: str
    op: str
    role: str
    inputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    shape: Shape | None
    dtype: str | None
    spelling: str

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "op": self.op, "role": self.role, "inputs": list(self.inputs),
                "attrs": {k: _plain(v) for k, v in self.attrs.items()},
                "shape": list(self.shape) if self.shape is not None else None, "dtype": self.dtype,
                "spelling": self.spelling}


@dataclass(frozen=True)
class OpGraph:
    values: tuple[Value, ...]
    nodes: tuple[OpNode, ...]
    output: str | None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # A module's path in the task's module tree (`layer1.0.conv1`) under the one attribute name the ids
    # and spellings use for it (`layer1_0_conv1`), where the two differ (a traced nested model): the
    # composed module reaches the task's own submodule by its path.
    paths: Mapping[str, str] = field(default_factory=dict)
    # Every tensor forward returns, in order, when it returns a tuple (`return y, y.mean(1)`); () when it
    # returns one, `output`. `output` is the first of them either way.
    outputs: tuple[str, ...] = ()

    @property
    def results(self) -> tuple[str, ...]:
        """The tensors forward returns, in order (one or several)."""
        return self.outputs or ((self.output,) if self.output else ())

    @property
    def ops(self) -> tuple[OpNode, ...]:
        """The operator nodes that compute (views left out)."""
        return tuple(n for n in self.nodes if n.role != "view")

    @property
    def anchors(self) -> tuple[OpNode, ...]:
        return tuple(n for n in self.nodes if n.role not in ("elementwise", "view"))

    def node(self, nid: str) -> OpNode | None:
        return next((n for n in self.nodes if n.id == nid), None)

    def value(self, vid: str) -> Value | None:
        return next((v for v in self.values if v.id == vid), None)

    def shape_of(self, vid: str) -> Shape | None:
        n = self.node(vid)
        if n is not None:
            return n.shape
        v = self.value(vid)
        return v.shape if v is not None else None

    def edges(self) -> list[tuple[str, str, int]]:
        """(from, to, port): every value or node a node reads, at its argument position."""
        return [(src, n.id, i) for n in self.nodes for i, src in enumerate(n.inputs)]

    def consumers(self, vid: str) -> list[OpNode]:
        return [n for n in self.nodes if vid in n.inputs]

    def to_data(self) -> dict[str, Any]:
        return {
            "values": [v.to_data() for v in self.values], "nodes": [n.to_data() for n in self.nodes],
            "edges": [{"from": a, "to": b, "port": p} for a, b, p in self.edges()],
            "output": self.output, "output_shape": _list(self.shape_of(self.output) if self.output else None),
            "problems": list(self.problems), "notes": list(self.notes),
            **({"paths": dict(self.paths)} if self.paths else {}),
            **({"outputs": list(self.outputs), "output_shapes": [_list(self.shape_of(o)) for o in self.outputs]}
               if self.outputs else {}),
        }

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> OpGraph:
        values = tuple(Value(v["id"], v["kind"], _tuple(v.get("shape")), v.get("dtype"), _frozen(v.get("value")),
                             v.get("source", "")) for v in d.get("values", ()))
        nodes = tuple(OpNode(n["id"], n["op"], n["role"], tuple(n.get("inputs", ())),
                             {k: _frozen(x) for k, x in dict(n.get("attrs") or {}).items()},
                             _tuple(n.get("shape")), n.get("dtype"), n.get("spelling", ""))
                      for n in d.get("nodes", ()))
        return cls(values, nodes, d.get("output"), tuple(d.get("problems", ())), tuple(d.get("notes", ())),
                   dict(d.get("paths") or {}), tuple(d.get("outputs") or ()))

    def describe(self) -> list[str]:
        """One line per node: `n2 = relu(n1) -> (128, 32) fp32`."""
        lines = []
        for n in self.nodes:
            args = ", ".join(n.inputs)
            attrs = ", ".join(f"{k}={_short(v)}" for k, v in n.attrs.items())
            shape = "?" if n.shape is None else str(tuple(n.shape))
            lines.append(f"{n.id} = {n.op}({args}{', ' + attrs if attrs and args else attrs}) -> {shape} "
                         f"{n.dtype or '?'}  [{n.role}]")
        return lines


def _short(v: Any) -> str:
    text = repr(_plain(v))
    return text if len(text) <= 40 else text[:37] + "..."


def _list(s: Shape | None) -> list[int] | None:
    return list(s) if s is not None else None


def _tuple(s: Any) -> Shape | None:
    return tuple(int(x) for x in s) if s is not None else None


def _frozen(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return {k: _frozen(x) for k, x in v.items()}
    return v


def _plain(v: Any) -> Any:
    if isinstance(v, V.Step):
        return v.to_data()
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    return repr(v)


# ====================================================================================== building
class _Builder:
    def __init__(self, inputs: Sequence[Input]) -> None:
        self.values: dict[str, Value] = {}
        self.nodes: list[OpNode] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.memo: dict[Any, str] = {}
        self.inputs = {i.name: i for i in inputs}
        for i in inputs:
            if i.is_tensor:
                self.values[i.name] = Value(i.name, "input", i.shape, i.dtype or "fp32")
            else:
                self.values[i.name] = Value(i.name, "scalar", (), None, i.value)

    # -------------------------------------------------------------- values
    def shape(self, vid: str) -> Shape | None:
        if vid in self.values:
            return self.values[vid].shape
        n = next((n for n in self.nodes if n.id == vid), None)
        return n.shape if n is not None else None

    def dtype(self, vid: str) -> str | None:
        if vid in self.values:
            return self.values[vid].dtype
        n = next((n for n in self.nodes if n.id == vid), None)
        return n.dtype if n is not None else None

    def const(self, value: Any, origin: str = "") -> str:
        key = ("const", repr(value), origin)
        if key not in self.memo:
            cid = f"c{sum(1 for v in self.values.values() if v.kind == 'const')}"
            self.values[cid] = Value(cid, "const", (), None, value, origin)
            self.memo[key] = cid
        return self.memo[key]

    def param(self, pid: str, shape: Shape | None, dtype: str | None, source: str) -> str:
        if pid not in self.values:
            self.values[pid] = Value(pid, "param", shape, dtype or "fp32", None, source)
        return pid

    def add(self, op: str, role: str, inputs: Sequence[str], attrs: Mapping[str, Any], spelling: str,
            kind: OpKind | None = None, dtype: str | None = None) -> str:
        shapes = [self.shape(i) for i in inputs]
        shape: Shape | None = None
        if kind is not None and all(s is not None for s in shapes):
            try:
                shape = tuple(int(x) for x in kind.shape([s for s in shapes if s is not None], attrs))
            except (OpError, TypeError, ValueError, KeyError, IndexError) as exc:
                self.problems.append(f"{spelling}: {exc}")
        elif kind is not None:
            self.problems.append(f"{spelling}: the shape of an input is unknown")
        if dtype is None:
            positions = kind.index_inputs if kind is not None else ()  # an index's dtype is not the result's
            tensor_dtypes = [self.dtype(i) for k, i in enumerate(inputs)
                             if self.dtype(i) is not None and k not in positions]
            dtype = "bool" if op in BOOL_OPS else "int64" if kind is not None and kind.role == "argreduce" else (
                kind.dtype if kind is not None and kind.dtype else tensor_dtypes[0] if tensor_dtypes else None)
        k = len(self.nodes)
        while f"n{k}" in self.values:  # a kernel's forward names its inputs by the module graph's ids (n0, ...)
            k += 1
        nid = f"n{k}"
        self.nodes.append(OpNode(nid, op, role, tuple(inputs), dict(attrs), shape, dtype, spelling))
        return nid

    def unknown(self, what: str, inputs: Sequence[str] = ()) -> str:
        self.problems.append(what)
        return self.add("unknown", "other", inputs, {"why": what}, what)

    # -------------------------------------------------------------- the tree
    def value(self, n: Node) -> str:
        key = _key(n)
        if key in self.memo:
            return self.memo[key]
        vid = self._value(n)
        self.memo[key] = vid
        return vid

    def _value(self, n: Node) -> str:
        if n.kind == "in":
            if n.name not in self.values:
                return self.unknown(f"'{n.name}' is not an input of forward")
            return n.name
        if n.kind == "const":
            return self.const(n.value, n.name)
        if n.kind == "param":
            info = n.value or {}
            shape = info.get("shape")
            return self.param(n.name, tuple(shape) if shape is not None else None, info.get("dtype"),
                              f"nn.Parameter self.{n.name}")
        if n.kind == "neg":
            return self.add("neg", "elementwise", [self.value(n.args[0])], {}, "-x", registry.kind("neg"))
        if n.kind == "bin":
            return self._bin(n)
        if n.kind == "module":
            return self._module(n)
        if n.kind == "call":
            return self._call(n)
        if n.kind == "index":
            return self._index(n)
        if n.kind == "attr":
            return self._attr(n)
        if n.kind == "unknown":
            return self.unknown(f"forward could not be read here: {n.value}")
        return self.unknown(f"'{ir.brief(n)}' is not an operator the graph knows")

    def _bin(self, n: Node) -> str:
        a, b = (self.value(x) for x in n.args)
        if n.name == "matmul":
            return self.add("matmul", "matmul", [a, b], {}, "@", registry.kind("matmul"))
        kind = registry.kind(n.name)
        if kind is None:
            return self.unknown(f"the operator '{n.name}' is not in the registry", [a, b])
        return self.add(n.name, kind.role, [a, b], {}, ir._INFIX.get(n.name, n.name), kind)

    def _module(self, n: Node) -> str:
        spec = n.value
        t = n.name
        attr = getattr(spec, "attr", None) or t.lower()
        kind = registry.by_module(t)
        params = {k: _plain_value(v) for k, v in dict(getattr(spec, "params", {}) or {}).items()
                  if k not in ("inplace", "device", "dtype")}
        if t[-2:] in ("1d", "2d", "3d"):
            params["nd"] = int(t[-2])
        ins = [self.value(a) for a in n.args]
        spelling = f"nn.{t} self.{attr}"
        if kind is None:
            return self.unknown(f"nn.{t} is not in the operator registry", ins)
        if kind.name == "dropout":
            self.notes.append(f"{spelling}: the module is in training mode unless the harness calls eval(), where "
                              "dropout zeroes random elements (the baseline is random and cannot be compared); in "
                              "eval mode it is the identity")
        weights: dict[str, Shape] = {}
        if kind.weights is not None:
            try:
                weights = kind.weights(params)
            except OpError as exc:
                self.problems.append(f"{spelling}: {exc}")
        like = None if not ins or 0 in kind.index_inputs else self.dtype(ins[0])  # an index's dtype is no weight's
        for w, shape in weights.items():
            ins.append(self.param(f"{attr}.{w}", shape, like, spelling))
        return self.add(kind.name, kind.role, ins, params, spelling, kind)

    def _call(self, n: Node, picked: bool = False, kind: OpKind | None = None) -> str:
        """A call's node; `kind` (an element of a tuple-returning call, `_picked`) overrides the spelling's."""
        name = n.name
        if name in V.VIEW_NAMES or name == "expand_as":
            return self._view(n)
        if name in ("max", "min"):
            return self._max_min(n, None)
        if name in ("cat", "concat", "concatenate") and n.args and n.args[0].kind == "tuple":
            parts = [self.value(a) for a in n.args[0].args]
            dim = _consts(n, ("tensors", "dim")).get("dim", 0)
            return self.add("cat", "layout", parts, {"dim": dim}, "torch.cat", registry.kind("cat"))
        if name == "einsum" and n.args and n.args[0].is_const:
            return self.add("einsum", "matmul", [self.value(a) for a in n.args[1:]], {"equation": n.args[0].value},
                            "torch.einsum", registry.kind("einsum"))
        if name in ("tensor", "as_tensor", "scalar_tensor") and n.args and n.args[0].is_const:
            return self.const(n.args[0].value, f"torch.{name}")
        if name in ("zeros_like", "ones_like", "full_like", "empty_like"):
            return self.add(name, "other", [self.value(n.args[0])], {}, f"torch.{name}", _SAME)
        spelled = registry.by_spelling(name, str(n.value or "torch"))
        kind = kind or spelled
        if kind is None or spelled is None:
            return self.unknown(f"{name}(...) is not in the operator registry",
                                [self.value(a) for a in n.args if not a.is_const])
        if spelled.returns and not picked:
            self.problems.append(f"torch.{name}(...) returns ({', '.join(spelled.returns)}): pick one with [0] or "
                                 f".{spelled.returns[0]}")
        how = {"torch": "torch.", "F": "F.", "method": "."}.get(str(n.value), "")
        if name == "permute" and len(n.args) > 2 and all(a.is_const for a in n.args[1:]):  # x.permute(2, 0, 1)
            return self.add(kind.name, kind.role, [self.value(n.args[0])],
                            {"dims": tuple(a.value for a in n.args[1:])}, f"{how}{name}", kind)
        params = FUNC_SIGS.get(name) or ("input", *spelled.params)
        bound, _ = bind(params, n.args, n.kw(), FUNC_DEFAULTS.get(name))
        ins: list[str] = []
        attrs: dict[str, Any] = {}
        for p in params:
            if p not in bound:
                continue
            v = bound[p]
            if isinstance(v, Node) and not v.is_const and v.kind != "tuple":
                ins.append(self.value(v))
            elif isinstance(v, Node) and v.kind == "tuple":
                try:
                    attrs[p] = tuple(_const_of(x) for x in v.args)
                except ValueError:
                    ins.extend(self.value(x) for x in v.args)
            elif isinstance(v, Node):
                if v.value is not None or p in ("dim",):
                    attrs[p] = v.value
            elif v is not None:
                attrs[p] = v
        attrs.pop("inplace", None)
        return self.add(kind.name, kind.role, ins, attrs, f"{how}{name}", kind)

    def _max_min(self, n: Node, pick: str | None) -> str:
        bound, _ = bind(FUNC_SIGS.get(n.name, ("input", "dim", "keepdim")), n.args, n.kw(), None)
        other = bound.get("dim")
        x = self.value(n.args[0])
        if isinstance(other, Node) and not other.is_const:
            op = "maximum" if n.name == "max" else "minimum"
            return self.add(op, "elementwise", [x, self.value(other)], {}, f"torch.{n.name}", registry.kind(op))
        if other is None or (isinstance(other, Node) and other.value is None):
            op = "amax" if n.name == "max" else "amin"
            return self.add(op, "reduction", [x], {}, f"torch.{n.name}", registry.kind(op))
        keep = bound.get("keepdim")
        attrs = {"dim": other.value if isinstance(other, Node) else other,
                 "keepdim": bool(keep.value) if isinstance(keep, Node) else False}
        if pick == "indices":
            op = "argmax" if n.name == "max" else "argmin"
        else:
            op = "max_dim" if n.name == "max" else "min_dim"
            if pick is None:
                self.problems.append(f"torch.{n.name}(x, dim) returns (values, indices): pick one with [0] or .values")
        kind = registry.kind(op)
        return self.add(op, kind.role if kind else "reduction", [x], attrs, f"torch.{n.name}", kind)

    def _index(self, n: Node) -> str:
        base = n.args[0]
        if isinstance(n.value, int) and base.kind == "call" and base.name in ("max", "min"):
            return self._max_min(base, "values" if n.value == 0 else "indices")
        if isinstance(n.value, int) and self._returns(base):
            return self._picked(base, n.value)
        if isinstance(n.value, int) and base.kind == "call" and base.name in V.SPLITTERS and base.args:
            return self._split_part(base, n.value)
        return self._view(n)

    def _split_part(self, call: Node, i: int) -> str:
        """Element i of `x.chunk(...)`, `x.split(...)` or `x.unbind(...)`: the view of x it is."""
        x = self.value(call.args[0])
        shape = self.shape(x)
        if shape is None:
            return self.unknown(f"'{ir.brief(call)}': the split tensor's shape is unknown", [x])
        known = {vid: s for vid, s in ((v.id, v.shape) for v in self.values.values()) if s is not None}
        try:
            parts = V.read_split(call.name, shape, [_size(a, known, self) for a in call.args[1:]],
                                 {k: _size(v, known, self) for k, v in call.kwargs})
            step = parts[i]
        except (OpError, ValueError) as exc:
            return self.unknown(f"'{ir.brief(call)}': {exc}", [x])
        except IndexError:
            return self.unknown(f"'{ir.brief(call)}' has {len(parts)} parts, not an element {i}", [x])
        return self.add("view", "view", [x], {"steps": (step,)}, f"{call.name}[{i}]", registry.kind("view"))

    def _attr(self, n: Node) -> str:
        base = n.args[0]
        if n.name in ("values", "indices") and base.kind == "call" and base.name in ("max", "min"):
            return self._max_min(base, n.name)
        if n.name in self._returns(base):
            return self._picked(base, self._returns(base).index(n.name))
        if n.name in ("T", "mT"):
            x = self.value(base)
            return self.add("transpose", "layout", [x], {"dim0": -2, "dim1": -1}, f".{n.name}",
                            registry.kind("transpose"))
        return self.unknown(f"the attribute .{n.name} is not an operator", [self.value(base)])

    @staticmethod
    def _returns(n: Node) -> tuple[str, ...]:
        """The names of the tuple a call returns (its registry entry's `returns`: topk's values and indices)."""
        kind = registry.by_spelling(n.name, str(n.value or "torch")) if n.kind == "call" else None
        return kind.returns if kind is not None else ()

    def _picked(self, base: Node, i: int) -> str:
        """One element of the tuple a call returns: the first is the kind's node, another the node of the kind
        that computes it (`registry.element_of`: topk's indices), if one does."""
        names = self._returns(base)
        i = i + len(names) if -len(names) <= i < 0 else i
        kind = registry.by_spelling(base.name, str(base.value or "torch"))
        part = registry.element_of(kind, i) if kind is not None else None
        if part is None:
            what = names[i] if 0 <= i < len(names) else f"element {i}"
            return self.unknown(f"the {what} of torch.{base.name}(...) are computed by no operator of the registry",
                                [self.value(base.args[0])])
        return self._call(base, picked=True, kind=part)

    def _view(self, n: Node) -> str:
        """A view of a computed value or an input: its steps read on the producer's shape."""
        x = self.value(n.args[0])
        shape = self.shape(x)
        kind = registry.kind("view")
        if shape is None:
            return self.unknown(f"'{ir.brief(n)}': the viewed tensor's shape is unknown", [x])
        known = {vid: s for vid, s in ((v.id, v.shape) for v in self.values.values()) if s is not None}
        try:
            if n.kind == "index":
                steps = V.read_index(shape, n.value)
            elif n.name == "expand_as":
                other = self.value(n.args[1])
                oshape = self.shape(other)
                if oshape is None:
                    raise OpError("expand_as of a tensor of unknown shape")
                steps = [V.Step("expand", shape=oshape)]
            else:
                args = [_size(a, known, self) for a in n.args[1:]]
                kwargs = {k: _size(v, known, self) for k, v in n.kwargs}
                steps = V.read_view(n.name, shape, args, kwargs)
        except (OpError, ValueError) as exc:
            return self.unknown(f"'{ir.brief(n)}': {exc}", [x])
        if not steps:  # a full slice: the tensor itself
            return x
        return self.add("view", "view", [x], {"steps": tuple(steps)}, ir.render(n).split("(")[0], kind)


_SAME = OpKind("same", "other", lambda shapes, attrs: tuple(shapes[0]))


def _key(n: Node) -> Any:
    value = n.value
    if n.kind == "module":
        value = (getattr(value, "type", None), getattr(value, "attr", None), repr(getattr(value, "params", None)))
    else:
        try:
            hash(value)
        except TypeError:
            value = repr(value)
    return (n.kind, n.name, value, tuple(_key(a) for a in n.args), tuple((k, _key(v)) for k, v in n.kwargs))


def _plain_value(v: Any) -> Any:
    from pypto_tui.contract.values import plain

    return _frozen(plain(v))


def _const_of(n: Node) -> Any:
    if n.is_const:
        return n.value
    raise ValueError("not a constant")


def _consts(n: Node, params: tuple[str, ...]) -> dict[str, Any]:
    bound, _ = bind(params, n.args, n.kw(), None)
    return {k: v.value for k, v in bound.items() if isinstance(v, Node) and v.is_const}


def _size(n: Node, known: Mapping[str, Shape], b: _Builder) -> Any:
    """A view's argument: a constant, a tuple of them, or a size read from a known shape."""
    if n.is_const:
        return n.value
    if n.kind == "tuple":
        return tuple(_size(a, known, b) for a in n.args)
    if (n.kind == "index" and isinstance(n.value, int) and n.args and n.args[0].kind == "attr"
            and n.args[0].name == "shape"):  # x.shape[d] of a computed value
        shape = b.shape(b.value(n.args[0].args[0]))
        if shape is not None and -len(shape) <= n.value < len(shape):
            return shape[n.value]
    if n.kind == "call" and n.name == "size" and len(n.args) == 2 and n.args[1].is_const:
        shape = b.shape(b.value(n.args[0]))
        d = n.args[1].value
        if shape is not None and isinstance(d, int) and -len(shape) <= d < len(shape):
            return shape[d]
    from pypto_tui.contract.views import NotAView, fold_int

    shapes = dict(known)
    for node in b.nodes:
        if node.shape is not None:
            shapes[node.id] = node.shape
    try:
        return fold_int(n, shapes)
    except NotAView as exc:
        raise ValueError(str(exc)) from None


def build_graph(root: Node, inputs: Sequence[Input]) -> OpGraph:
    """The graph of `forward`'s expression tree over the task's inputs."""
    b = _Builder(inputs)
    if root.kind == "tuple" and not root.args:
        root = ir.unknown("forward returns an empty tuple")
    outs = tuple(b.value(r) for r in (root.args if root.kind == "tuple" else (root,)))
    used = {i for node in b.nodes for i in node.inputs} | set(outs)
    values = tuple(v for v in b.values.values() if v.id in used or v.kind == "input")
    return OpGraph(values, tuple(b.nodes), outs[0], tuple(dict.fromkeys(b.problems)), tuple(dict.fromkeys(b.notes)),
                   outputs=outs if len(outs) > 1 else ())


__all__ = ["OpGraph", "OpNode", "Value", "build_graph", "field"]
