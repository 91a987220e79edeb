"""What every registry entry says about an operator kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pypto_tui.ops.idiom import Idiom

Shape = tuple[int, ...]
ShapeFn = Callable[[Sequence[Shape], Mapping[str, Any]], Shape]
Reference = Callable[..., Any]
Render = Callable[..., Any]
"""(x, bound parameters, the code generator's operations) -> the kind's expression in the kernel."""


class KernelOps(Protocol):
    """What an elementwise `render` writes with. The code generator hands one in, so a registry entry
    can say how the kernel computes its kind without the ops layer importing code generation; the
    values it returns take Python's arithmetic operators (`x * 2.0 - 1.0`)."""

    def call(self, fn: str, *args: Any) -> Any:
        """`pypto.<fn>(args...)` over kernel values and numbers."""

    def cast(self, x: Any, dtype: str, mode: str | None = None) -> Any:
        """`pypto.cast(x, <dtype>, mode=CastMode.<mode>)`: `dtype` one of the contract's names (fp32, int8,
        int32), `mode` a `pypto.CastMode` member (CAST_TRUNC, CAST_RINT) or None for the default."""

    def literal(self, value: Any) -> float | int | None:
        """The number a bound parameter is written as, or None when it is a named scalar of the kernel
        (so a render can drop work a literal makes useless, softplus's `* 1.0`)."""


REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
"""Marks a constructor parameter with no default in `OpKind.module_signature`."""

ROLES = ("elementwise", "view", "layout", "matmul", "conv", "pool", "reduction", "norm", "softmax", "scan", "loss",
         "attention", "argreduce", "recurrent", "other")


class OpError(ValueError):
    """The operator cannot take these shapes or attributes (the message says why)."""


@dataclass(frozen=True)
class Decomposition:
    """A node as its composition: the parts (graph nodes made from the node with `part`, the last one
    keeping its id, so its readers are unchanged) and the constants they read ((id, value, source))."""

    nodes: tuple[Any, ...]
    consts: tuple[tuple[str, float, str], ...] = ()


ShapeOf = Callable[[str], "Shape | None"]
Decomposer = Callable[[Any, ShapeOf], "Decomposition | None"]
"""(node, the graph's shape of a value id) -> its composition, or None when the node stays whole."""


def part(node: Any, suffix: str, op: str, role: str, inputs: tuple[str, ...], attrs: Mapping[str, Any],
         shape: Shape | None) -> Any:
    """One part of a node's composition: the node with another op, role, inputs and attributes, and
    the id `<node id><suffix>` ("" keeps the node's own id)."""
    from dataclasses import replace

    return replace(node, id=f"{node.id}{suffix}", op=op, role=role, inputs=inputs, attrs=dict(attrs), shape=shape)


@dataclass(frozen=True)
class OpKind:
    """One operator kind.

    - `functions`: names under `torch.` / `torch.nn.functional.` (the reader folds both to one name);
      `methods`: tensor methods; `modules`: `nn.Module` types (with the attributes the module's
      arguments become, `module_attrs`).
    - `params`: the call's parameters after the tensor inputs, in torch's order (for binding).
    - `shape(in_shapes, attrs)`: the output shape; `reference(arrays, attrs)`: numpy.
    - `role`: `elementwise` (fusable around an anchor), `view` (no arithmetic), or the anchor kind.
    - `pattern`: the codegen pattern id that writes an anchor's kernel (None: no kernel of its own).
    - `weights`: parameters a module creates in `__init__` (name -> shape function of its args).
    - `row_local`: an elementwise kind that mixes positions along the last axis (rotate_half): its
      kernel keeps that axis whole instead of flattening.
    - `decompose(node, shape_of)`: the node as its composition of other kinds before the graph is split
      into kernels (a biased linear: the product and an add), or None when it stays whole.
    - `aten`: the ATen operators (`aten.<name>.<overload>`, as torch.export prints them) that compute this
      kind; the traced front end (contract/aten.py) maps an exported graph's nodes through them.
    - `identity`: the kind computes nothing (a copy, a view's contiguous copy): a kernel passes it on.
    - `spelled_as`: the kind a kernel's contract reads it as, when not its own (`torch.max(x, d)[0]`,
      max_dim, is amax over d).
    - `formula`: the text the app and `contract` show for the kind (`{x}`, `{y}` for a second operand,
      and the parameters as placeholders; a layout kind's also `{parts}`, every operand, and `{shape}`,
      the result's), "" when the role's own wording says it (a layout kind without one has no contract).
    - `direction`: for a kind whose operands play different parts (gather's values and positions), the
      words that say which is which, with the formula's placeholders.
    - `idioms`: the forms a task writes the kind out in by hand (`x * sigmoid(x)` is a swish), each a row
      the static reader matches (ops/idiom.py).
    - `statistic(operands, args)`: what a norm divides by or a loss sums (`Statistic`): the contract's
      reduction and formula.
    - `input_transforms`: the kinds whose result the kind may take as its first input and still have a
      kernel, the transform recorded in its contract (kl_div of `log(p)` or `log_softmax(p, dim)`).
    - `spelled`: how a kernel's contract spells a graph node of the kind as a call the reader reads back:
      (where: "torch", "F" or "method"; how its parameters are passed: "keywords", "positional" in `params`'
      order, or "spread", the one parameter's items as arguments: `x.permute(2, 0, 1)`); ("", "") when
      the role's own spelling serves.
    - `refuses`: (parameter, why) for each parameter that, when the call sets it, keeps the kind from a
      kernel (an embedding's max_norm rewrites its table on every call).
    - `defaults`: torch's default for each parameter in `params` that has one (bound when the call
      leaves it out).
    - `module_signature`: the `nn.Module` constructor's parameters with defaults, in torch's order
      (`REQUIRED` marks a required one): how a module call binds without asking torch.
    - `render(x, params, ops)`: the kind's elementwise form in the kernel, written with the operations
      the compiler has (`ops` builds calls and constants, so the registry needs no code generator; a
      kind of arity 2 takes both operands first, `render(a, b, params, ops)`);
      None when the kernel cannot compute it, `unsupported` saying why (for an anchor: why its pattern
      does not take the kind, "" when it does).
    - `kernel_params`: the leading `params` the render reads, each a scalar of the kernel (bound to the
      call's value or its default); the kernel's form needs no other (softplus's threshold: past it torch
      returns x, which its overflow-safe form already gives to float precision).
    - `inputs`: the names torch's function gives its tensor arguments before `params` ("input", "target";
      a keyword call binds by them): the function's signature is `(*inputs, *params)`.
    - `scaling`: what a reduction divides its sum by, as the contract's `Reduction.scaling` says it
      ("sum": nothing, "mean": the count of the reduced values, as var and std do too; "none": not a sum).
    - `index_inputs`: the positions of the inputs that hold integer positions, not values (gather's index):
      a kernel takes them as int64 tensors, and a test draws them within the axis they index.
    - `dtype`: the dtype an elementwise kind's result has whatever its input's (a conversion, `x.char()`:
      int8), None when it keeps its input's.
    - `returns`: the names of the tuple torch returns (topk's values and indices), () for one tensor; the
      kind computes the first, and the readers take a call picked by `[0]` or `.<first>` as the kind.
    """

    name: str
    role: str
    shape: ShapeFn
    reference: Reference | None = None
    functions: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    arity: int = 1
    pattern: str | None = None
    weights: Callable[[Mapping[str, Any]], dict[str, Shape]] | None = None
    note: str = ""
    row_local: bool = False
    decompose: Decomposer | None = None
    identity: bool = False
    spelled_as: str | None = None
    aten: tuple[str, ...] = ()
    formula: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    module_signature: tuple[tuple[str, Any], ...] = ()
    render: Render | None = None
    unsupported: str = ""
    kernel_params: tuple[str, ...] = ()
    scaling: str = "none"
    inputs: tuple[str, ...] = ("input",)
    returns: tuple[str, ...] = ()
    dtype: str | None = None
    direction: str = ""
    idioms: tuple[Idiom, ...] = ()
    statistic: StatisticOf | None = None
    input_transforms: tuple[str, ...] = ()
    spelled: tuple[str, str] = ("", "")
    refuses: tuple[tuple[str, str], ...] = ()
    index_inputs: tuple[int, ...] = ()
    size_ties: tuple[tuple[tuple[int, int], tuple[int, int], int], ...] = ()
    """((operand, axis), (operand, axis), k): the first axis is k times the second (an LSTM's weights
    stack 4 gates of the hidden size), so a test that shrinks the one shrinks the other with it."""
    positions_along: tuple[int, int | None] = (0, None)
    """Where an `index_inputs` operand's positions point: (the operand holding the values, its axis; None:
    the node's `dim`). gather indexes its input along dim; an embedding's indices pick rows of its table
    (operand 1, axis 0). A test draws the positions within that axis."""
    whole_axes: tuple[tuple[int, int], ...] = ()
    """(operand, axis) pairs the kernel holds whole in one tile (a recurrent layer's input features, in its
    input projection's cube K tile): a test keeps their size, while other axes of that size shrink."""

    @property
    def is_elementwise(self) -> bool:
        return self.role == "elementwise"

    @property
    def is_anchor(self) -> bool:
        return self.role not in ("elementwise", "view")


def same_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    """Unary elementwise: the input's shape."""
    return tuple(shapes[0])


def broadcast(shapes: Sequence[Shape], attrs: Mapping[str, Any] | None = None) -> Shape:
    """numpy/torch broadcasting of any number of shapes; OpError when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        pad = (1,) * (rank - len(s)) + tuple(s)
        for i, d in enumerate(pad):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
                continue
            raise OpError(f"shapes {[tuple(x) for x in shapes]} do not broadcast (axis {i}: {out[i]} vs {d})")
    return tuple(out)


def axes_of(dim: Any, rank: int) -> tuple[int, ...] | None:
    """Non-negative, sorted axes for a torch dim (an int, a tuple of them, or None: every axis); None when
    one is not an axis of a rank-`rank` tensor."""
    if dim is None:
        return tuple(range(rank))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or not -rank <= d < max(rank, 1):
            return None
        out.append(d % rank if rank else 0)
    return tuple(sorted(set(out)))


def index_letters(rank: int) -> list[str]:
    """The index letters a formula writes a rank-`rank` tensor's axes with (i, j, k, ...)."""
    return list("ijklmnopq"[:rank])


def commutes(kind: OpKind) -> bool | None:
    """Whether swapping a two-operand kind's operands leaves its value unchanged (its numpy reference on
    fixed random data: add, maximum, mse_loss do; sub, pow, kl_div do not); None without a reference."""
    if kind.arity != 2 or kind.reference is None:
        return None
    import numpy as np

    a, b = np.random.default_rng(1).uniform(0.5, 2.0, size=(2, 3, 5))
    return bool(np.allclose(kind.reference(a, b), kind.reference(b, a), rtol=1e-9, atol=1e-12, equal_nan=True))


def shown(v: Any) -> str:
    """A parameter as a formula shows it: a float in its shortest form, a sequence in parentheses."""
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, tuple | list):
        return "(" + ", ".join(shown(x) for x in v) + ")"
    return str(v)


@dataclass(frozen=True)
class Operand:
    """A tensor a kind reads, as its contract knows it."""

    name: str
    shape: Shape
    dtype: str | None = None


@dataclass(frozen=True)
class Statistic:
    """What an anchor reduces its input to, from its operands and its arguments (a norm: what it divides
    by; a loss: what it sums): the contract's reduction (`kind`, `axes`, `keepdim`, `scaling`, `count`, and
    for a loss per sample first, `inner` (op, axes)) and formula, the output's shape (None: the first
    operand's), whether the operands' order matters and which plays which part (`asymmetric`,
    `direction`), what the user must confirm (`unknown`: contract field -> why) and why no kernel takes it
    (`refused`, "" when one does)."""

    kind: str
    axes: tuple[int, ...]
    keepdim: bool
    scaling: str
    count: int | None
    formula: str
    unknown: Mapping[str, str] = field(default_factory=dict)
    refused: str = ""
    inner: tuple[str, tuple[int, ...]] | None = None
    output_shape: Shape | None = None
    asymmetric: bool = False
    direction: str | None = None


StatisticOf = Callable[[Sequence[Operand], Mapping[str, Any]], "Statistic | None"]
"""(the operands, the call's arguments) -> the statistic, None when the arguments do not say it (a layer
norm without its normalized_shape); OpError when they contradict the shapes."""


def axis(dim: Any, rank: int) -> int:
    """A torch dim (negative counts from the end) as a non-negative axis; OpError when out of range."""
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < max(rank, 1):
        raise OpError(f"dim {dim!r} is not an axis of a rank-{rank} tensor")
    return dim % rank if rank else 0
