"""A tiny expression tree for what `forward` returns, independent of libcst.

The extractor turns the forward body into one `Node` (locals inlined, `self.x` resolved, module
constants folded); the recogniser pattern-matches it into a family and an op; an elementwise
expression that matches no named op is kept as a serialised tree in the contract
(`op_args["expr"]`) so the numpy reference can evaluate exactly that expression and the formula
can print it. Keeping this separate from libcst keeps the reference and `apply_edits` light.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    """kind: in | const | call | bin | neg | index | attr | module | param | tuple | unknown.

    - in:      name = forward parameter, value = its position
    - const:   value = a Python number/bool/str/None/tuple (name = where it came from, e.g. self.eps)
    - call:    name = canonical function (softmax, kl_div, linalg.norm), args, kwargs;
               value = how it was called: "torch" | "F" | "method" | "other"
    - bin:     name = add | sub | mul | div | pow | matmul | floordiv | mod | lt | gt | le | ge | eq | ne
    - neg:     args = (x,)
    - index:   args = (x,), value = the subscript (int, slice triple, tuple, None/Ellipsis as str)
    - attr:    name = attribute (T, mT, values, indices, shape), args = (x,)
    - module:  name = the nn module type, args = inputs, value = its parameters (dict)
    - param:   name = self attribute holding a tensor, value = {"shape": ..., "dtype": ...}
    - unknown: value = why
    """

    kind: str
    name: str = ""
    args: tuple[Node, ...] = ()
    kwargs: tuple[tuple[str, Node], ...] = ()
    value: Any = None

    def kw(self) -> dict[str, Node]:
        return dict(self.kwargs)

    def walk(self) -> Iterator[Node]:
        yield self
        for a in self.args:
            yield from a.walk()
        for _, v in self.kwargs:
            yield from v.walk()

    @property
    def is_const(self) -> bool:
        return self.kind == "const"


def const(value: Any, name: str = "") -> Node:
    return Node("const", name=name, value=value)


def unknown(reason: str) -> Node:
    return Node("unknown", value=reason)


def inputs_of(node: Node) -> list[str]:
    """Forward inputs the expression reads, in first-use order."""
    seen: dict[str, None] = {}
    for n in node.walk():
        if n.kind == "in":
            seen.setdefault(n.name, None)
    return list(seen)


# ------------------------------------------------------------------------------ serialisation
def to_data(node: Node) -> dict[str, Any]:
    """A JSON-able form (only used for elementwise expression trees)."""
    d: dict[str, Any] = {"k": node.kind}
    if node.name:
        d["n"] = node.name
    if node.args:
        d["a"] = [to_data(a) for a in node.args]
    if node.kwargs:
        d["kw"] = {k: to_data(v) for k, v in node.kwargs}
    if node.value is not None and node.kind in ("const", "in", "index", "unknown"):
        d["v"] = _plain(node.value)
    return d


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, slice):
        return {"slice": [v.start, v.stop, v.step]}
    return v


def from_data(d: Mapping[str, Any]) -> Node:
    value = d.get("v")
    if isinstance(value, list):
        value = tuple(value)
    return Node(
        kind=d["k"], name=d.get("n", ""),
        args=tuple(from_data(a) for a in d.get("a", ())),
        kwargs=tuple((k, from_data(v)) for k, v in (d.get("kw") or {}).items()),
        value=value,
    )


# ------------------------------------------------------------------------------ printing
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@",
          "floordiv": "//", "mod": "%", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
          "eq": "==", "ne": "!="}
_PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2, "floordiv": 2, "mod": 2, "matmul": 2, "pow": 4,
         "lt": 0, "gt": 0, "le": 0, "ge": 0, "eq": 0, "ne": 0}


def render(node: Node, names: Mapping[str, str] | None = None) -> str:
    """Readable infix text for a tree: `x * sigmoid(x)`, `(p - t) ** 2`."""
    return _render(node, names or {}, 0)


INFIX = tuple(_INFIX)
"""The binary operators a task writes with a symbol (`a + b`, `a ** 2`, `a < b`), by their node names."""

BRIEF = 60


def brief(node: Node, limit: int = BRIEF) -> str:
    """`render`, cut to `limit` characters for a message: a refusal names the construct, it does not
    print a whole inlined forward (a model's can run to thousands of characters)."""
    text = render(node)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _render(n: Node, names: Mapping[str, str], outer: int) -> str:
    if n.kind == "in":
        return names.get(n.name, n.name)
    if n.kind == "const":
        return _fmt(n.value)
    if n.kind == "bin":
        p = _PREC.get(n.name, 1)
        left = _render(n.args[0], names, p)
        right = _render(n.args[1], names, p + (0 if n.name == "pow" else 1))
        text = f"{left} {_INFIX.get(n.name, n.name)} {right}"
        return f"({text})" if p < outer else text
    if n.kind == "neg":
        return f"-{_render(n.args[0], names, 3)}"
    if n.kind == "call":
        parts = [_render(a, names, 0) for a in n.args]
        parts += [f"{k}={_render(v, names, 0)}" for k, v in n.kwargs]
        return f"{n.name}({', '.join(parts)})"
    if n.kind == "module":
        return f"{n.name}({', '.join(_render(a, names, 0) for a in n.args)})"
    if n.kind == "index":
        return f"{_render(n.args[0], names, 5)}[{_fmt(n.value)}]"
    if n.kind == "attr":
        return f"{_render(n.args[0], names, 5)}.{n.name}"
    if n.kind == "tuple":
        return "(" + ", ".join(_render(a, names, 0) for a in n.args) + ")"
    if n.kind == "param":
        return f"self.{n.name}"
    return "?"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, tuple):
        return ", ".join(_fmt(x) for x in v)
    if isinstance(v, dict) and "slice" in v:
        a, b, c = v["slice"]
        return f"{'' if a is None else a}:{'' if b is None else b}" + (f":{c}" if c is not None else "")
    return str(v)
