"""Forms written out by hand, as rows of the kind they compute: `x * rsqrt(mean(x ** 2, dim) + eps)` is
an rms_norm, `mean((a - b) ** 2)` an mse_loss, `x * sigmoid(x)` a swish.

A kind's entry lists its idioms (`OpKind.idioms`); the static reader tries every row against the
expression `forward` returns with the one matcher here, in the manner of a rewrite table (tinygrad's
`PatternMatcher`), so a new written-out form is a row of its kind, not a branch of the reader. The
matcher knows nothing of the reader's tree beyond what `Node` says, and asks the reader (`Reading`)
what it alone knows: which values are tensor inputs, and how a call's arguments bind to torch's
signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class Node(Protocol):
    """The reader's expression node, as far as a form reads it."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def args(self) -> tuple[Any, ...]: ...
    @property
    def value(self) -> Any: ...
    @property
    def is_const(self) -> bool: ...


class Reading(Protocol):
    """What only the reader knows about its tree."""

    def is_tensor(self, n: Any) -> bool:
        """The node is a tensor input of forward."""

    def constants(self, call: Any, names: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
        """The call's named parameters bound to torch's signature: (the constant ones' values, why each
        of the others is not a constant, keyed `op_args.<name>`)."""


class Form:
    """One position of a written-out form."""

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        """Each way the node matches, as the match extended with this position's captures."""
        raise NotImplementedError


@dataclass
class Match:
    """What a form captured: tensor inputs and constants by name, and each named call (its op name and
    node, so its parameters can be read)."""

    reading: Reading
    nodes: dict[str, Any] = field(default_factory=dict)
    consts: dict[str, Any] = field(default_factory=dict)
    calls: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)

    def fork(self) -> Match:
        return Match(self.reading, dict(self.nodes), dict(self.consts), dict(self.calls), dict(self.unknown))

    def name(self, call: str) -> str:
        """The op a named call is (`mean` or `sum`)."""
        return str(self.calls[call].name)

    def params(self, call: str, *names: str) -> dict[str, Any]:
        """The named call's constant parameters among `names` (the others are noted as unknown)."""
        values, unknown = self.reading.constants(self.calls[call], names)
        self.unknown.update(unknown)
        return values

    def whole(self, call: str) -> bool:
        """The named call reduces every axis: no `dim`, or `dim=None`."""
        values = self.params(call, "dim")
        return values.get("dim") is None and "op_args.dim" not in self.unknown

    def operands(self, *names: str) -> tuple[str, ...]:
        return tuple(str(self.nodes[n].name) for n in names)


@dataclass(frozen=True)
class Tensor(Form):
    """A tensor input of forward; the same name twice in a form is the same input."""

    capture: str

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        seen = m.nodes.get(self.capture)
        if seen is not None:
            if seen == n:
                yield m
            return
        if m.reading.is_tensor(n):
            out = m.fork()
            out.nodes[self.capture] = n
            yield out


@dataclass(frozen=True)
class Const(Form):
    """A constant: captured under `capture`, or equal to `equals`."""

    capture: str = ""
    equals: Any = None

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        if not n.is_const or (self.equals is not None and n.value != self.equals):
            return
        out = m.fork()
        if self.capture:
            out.consts[self.capture] = n.value
        yield out


@dataclass(frozen=True)
class Call(Form):
    """A call, method or infix operator named one of `ops` (`x ** 2` and `torch.pow(x, 2)` alike), whose
    leading arguments match `args`; `capture` names it, so its op and parameters can be read."""

    ops: tuple[str, ...]
    args: tuple[Form, ...] = ()
    capture: str = ""

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        if n.kind not in ("call", "bin") or n.name not in self.ops or len(n.args) < len(self.args):
            return
        start = m.fork()
        if self.capture:
            start.calls[self.capture] = n
        yield from _bind_all(self.args, n.args, start)


@dataclass(frozen=True)
class Either(Form):
    """The first of the alternatives that matches (each tried in turn)."""

    forms: tuple[Form, ...]

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        for f in self.forms:
            yield from f.bind(n, m)


@dataclass(frozen=True)
class PlusConst(Form):
    """`form + c` or `c + form`, the constant captured under `capture`; or `form` alone (no capture)."""

    form: Form
    capture: str

    def bind(self, n: Node, m: Match) -> Iterator[Match]:
        if n.kind == "bin" and n.name == "add":
            a, b = n.args
            if b.is_const or a.is_const:
                const, rest = (b, a) if b.is_const else (a, b)
                for out in self.form.bind(rest, m):
                    out.consts[self.capture] = const.value
                    yield out
                return
        yield from self.form.bind(n, m)


def _bind_all(forms: Sequence[Form], nodes: Sequence[Node], m: Match) -> Iterator[Match]:
    if not forms:
        yield m
        return
    for out in forms[0].bind(nodes[0], m):
        yield from _bind_all(forms[1:], nodes[1:], out)


def square(f: Form) -> Form:
    """`f ** 2`, `f * f`, `pow(f, 2)`, `square(f)`."""
    return Either((Call(("pow",), (f, Const(equals=2))), Call(("mul",), (f, f)), Call(("square",), (f,))))


Args = Callable[[Match], "Mapping[str, Any] | None"]
"""The contract's op_args from what a form captured (its tensor operands aside), or None when the
captures rule the form out (a norm of p = 3)."""


@dataclass(frozen=True)
class Idiom:
    """A written-out form of the kind whose entry lists it: the form, the op_args it gives (the tensor
    operands named by `operands`, in order) and, where it differs from the kind's role, the contract
    family (one minus a cosine similarity, averaged, is a loss)."""

    form: Form
    args: Args = lambda m: {}
    operands: tuple[str, ...] = ("x",)
    family: str | None = None


@dataclass(frozen=True)
class Found:
    """A form that matched: the kind it computes, its family, its op_args and what was not constant."""

    kind: str
    family: str
    op_args: dict[str, Any]
    unknown: dict[str, str]


def find(kinds: Sequence[Any], n: Node, reading: Reading) -> Found | None:
    """The first idiom of `kinds` (registry entries, in order) that `n` is written as."""
    for kind in kinds:
        for idiom in kind.idioms:
            for m in idiom.form.bind(n, Match(reading)):
                args = idiom.args(m)
                if args is not None:
                    return Found(kind.name, idiom.family or kind.role,
                                 {**args, "operands": m.operands(*idiom.operands)}, m.unknown)
    return None
