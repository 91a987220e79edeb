"""The semantic contract (rule P0) as plain data: what a task computes, before any kernel exists.

Everything here is a dataclass that survives a JSON round trip (`to_dict` / `from_dict`), so a
session can save a contract, the app can edit it field by field and the CLI can print it. The
contract separates *facts read from the file* (inputs, init parameters, the op and its
arguments) from *what follows from them* (the reduction, the output shape, the formula,
asymmetry); `edits.apply_edits` lets a user override either and re-derives the rest, so fixing one
unknown field (say the `dim` of a reduction) also fixes the fields that depend on it.

No libcst here: `pypto_tui.dims` and the one-shot CLI import this module on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pypto_tui.errors import InputError
from pypto_tui.findings import Finding
from pypto_tui.ops.base import axes_of
from pypto_tui.vocabulary import FAMILIES

Kind = Literal["tensor", "scalar"]
Scaling = Literal["sum", "mean", "batchmean", "none"]

SCALINGS = ("sum", "mean", "batchmean", "none")

# Locals the patterns' forward and kernel code bind (a matmul unpacks `batch, m, k = a.shape` and names
# its kernel's sizes m, k, n): a task input of that name would be overwritten before the kernel reads it
# (an attention score's `bmm(q, k.transpose(1, 2))` did: 'int' object has no attribute 'shape').
PATTERN_LOCALS = frozenset({"m", "k", "n", "k_b", "batch", "batch_b", "out", "out_rows", "kernel", "rows", "cols"})


def kernel_safe(name: str) -> str:
    """The name a forward input takes in the generated code: `k` -> `k_in`, any other name as it is."""
    return f"{name}_in" if name in PATTERN_LOCALS else name


def freeze(value: Any) -> Any:
    """Lists become tuples (recursively) so values compare equal after a JSON round trip."""
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return {k: freeze(v) for k, v in value.items()}
    return value


def thaw(value: Any) -> Any:
    """Tuples become lists (recursively): the JSON form."""
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    if isinstance(value, dict):
        return {str(k): thaw(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


def _shape(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    return tuple(int(v) for v in value)


@dataclass(frozen=True, slots=True)
class Input:
    """One argument of `forward`, in order. `recipe` records how get_inputs() built it.

    The recipe (base generator, its arguments and the chained calls after it) lets the
    self-check rebuild the same *kind* of data at a smaller size: `randn(...).softmax(-1)` must
    stay a probability distribution when it shrinks, or kl_div would be checked on garbage.
    """

    name: str
    kind: Kind
    shape: tuple[int, ...] | None
    dtype: str | None
    value: float | int | bool | None = None
    recipe: Mapping[str, Any] | None = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind,
            "shape": list(self.shape) if self.shape is not None else None,
            "dtype": self.dtype, "value": self.value,
            "recipe": thaw(dict(self.recipe)) if self.recipe is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Input:
        kind = d.get("kind", "tensor")
        if kind not in ("tensor", "scalar"):
            raise InputError(f"input '{d.get('name')}': kind must be tensor or scalar, got {kind!r}")
        recipe = d.get("recipe")
        return cls(
            name=str(d["name"]), kind=kind, shape=_shape(d.get("shape")), dtype=d.get("dtype"),
            value=d.get("value"), recipe=freeze(recipe) if recipe is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Reduction:
    """The reduction contract (P0.reduction-contract).

    `axes` are non-negative axes of the (first) operand; `scaling` says what the sum is divided
    by: nothing (`sum`), the element count over `axes` (`mean`), the batch size (`batchmean`),
    or it does not apply (`none`: max, argmax, softmax, scans). `count` is that divisor as a
    number. Per-sample losses reduce twice: first over `inner_axes` per sample (`inner_op`, e.g.
    the pairwise distance of a triplet loss), then over `axes`.
    """

    op: str
    axes: tuple[int, ...]
    keepdim: bool
    scaling: Scaling
    count: int | None = None
    inner_op: str | None = None
    inner_axes: tuple[int, ...] = ()

    @property
    def all_axes(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.axes) | set(self.inner_axes)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op, "axes": list(self.axes), "keepdim": self.keepdim,
            "scaling": self.scaling, "count": self.count, "inner_op": self.inner_op,
            "inner_axes": list(self.inner_axes),
        }

    def to_json_dict(self) -> dict[str, Any]:
        d = self.to_dict()
        if not self.inner_axes:
            d.pop("inner_op")
            d.pop("inner_axes")
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reduction:
        scaling = d.get("scaling", "none")
        if scaling not in SCALINGS:
            raise InputError(f"reduction scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
        axes = d.get("axes", ())
        if isinstance(axes, int):
            axes = (axes,)
        return cls(
            op=str(d.get("op", "sum")), axes=tuple(int(a) for a in axes),
            keepdim=bool(d.get("keepdim", False)), scaling=scaling,
            count=None if d.get("count") is None else int(d["count"]),
            inner_op=d.get("inner_op"), inner_axes=tuple(int(a) for a in d.get("inner_axes", ()) or ()),
        )


@dataclass(frozen=True, slots=True)
class InitParam:
    """One parameter of an `__init__` after `self`; `default` is its normalised source or None."""

    kind: str  # "posonly" | "arg" | "*args" | "kwonly" | "**kwargs"
    name: str
    default: str | None

    def render(self) -> str:
        prefix = {"*args": "*", "**kwargs": "**"}.get(self.kind, "")
        return f"{prefix}{self.name}" + (f"={self.default}" if self.default is not None else "")


@dataclass(frozen=True, slots=True)
class Signature:
    """`Model`'s call signatures as the task file spells them (read once, by the contract reader).

    `init_source` / `forward_source` are the parameter lists' source text, copied verbatim into a
    generated ModelNew; `init` is the same list as data, for comparing signatures. `provenance`
    maps a scalar (or `attr.key` of an nn module) to the init parameter that feeds it;
    `forward_args` lists (callee, keyword or position, self attribute) for `self.x` arguments in
    forward, so `F.leaky_relu(x, self.slope)` tells which parameter the slope comes from.
    """

    init: tuple[InitParam, ...] = ()
    init_source: str = "self"
    forward_source: str = "self"
    forward_returns: str | None = None
    param_names: tuple[str, ...] = ()
    forward_names: tuple[str, ...] = ()
    provenance: Mapping[str, str] = field(default_factory=dict)
    forward_args: tuple[tuple[str, str | int, str], ...] = ()
    doc: str | None = None
    # `self.<attr> = nn.<Module>(...)` in __init__, in order: (attr, module type, the call's argument
    # source, names it reads). A conv kernel's ModelNew repeats them so its weights are Model's.
    modules: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()

    def render(self) -> str:
        return "(" + ", ".join(["self", *(p.render() for p in self.init)]) + ")"

    def key(self) -> list[tuple[str, str, str | None]]:
        return [(p.kind, p.name, p.default) for p in self.init]

    def op_arg_source(self, op: str, key: str, positional: tuple[str, ...] = ()) -> str:
        """The provenance key of an op argument: `F.leaky_relu(x, negative_slope=self.slope)` (or
        `F.leaky_relu(x, self.slope)`) in forward gives `slope`; otherwise the argument's own name
        (`self.alpha = alpha` / `nn.ELU(alpha=alpha)` are found under `alpha`)."""
        found = {(f, k): attr for f, k, attr in self.forward_args}
        attr = found.get((op, key))
        if attr is None and key in positional:
            attr = found.get((op, positional.index(key) + 1))
        return attr if attr is not None else key

    def to_dict(self) -> dict[str, Any]:
        return {
            "init": [[p.kind, p.name, p.default] for p in self.init], "init_source": self.init_source,
            "forward_source": self.forward_source, "forward_returns": self.forward_returns,
            "param_names": list(self.param_names), "forward_names": list(self.forward_names),
            "provenance": dict(self.provenance), "forward_args": [list(a) for a in self.forward_args],
            "doc": self.doc, "modules": [[a, t, src, list(names)] for a, t, src, names in self.modules],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Signature:
        try:
            return cls(
                init=tuple(InitParam(str(k), str(n), None if v is None else str(v)) for k, n, v in d.get("init", ())),
                init_source=str(d.get("init_source", "self")), forward_source=str(d.get("forward_source", "self")),
                forward_returns=d.get("forward_returns"),
                param_names=tuple(str(x) for x in d.get("param_names", ())),
                forward_names=tuple(str(x) for x in d.get("forward_names", ())),
                provenance={str(k): str(v) for k, v in dict(d.get("provenance") or {}).items()},
                forward_args=tuple((str(f), k if isinstance(k, int) else str(k), str(a))
                                   for f, k, a in d.get("forward_args", ())),
                doc=d.get("doc"),
                modules=tuple((str(a), str(t), str(src), tuple(str(n) for n in names))
                              for a, t, src, names in d.get("modules", ())),
            )
        except (TypeError, ValueError) as exc:
            raise InputError(f"the contract's signature record is malformed ({exc}): re-open the task file") from None


# Fields a user may edit directly (the rest are bookkeeping).
EDITABLE = (
    "family", "op", "supported", "reason", "inputs", "init_params", "attributes", "op_args",
    "reduction", "asymmetric", "direction", "formula", "output_shape", "output_dtype",
)
# Fields computed from the facts (family, op, op_args, inputs); re-derived after an edit.
DERIVED = (
    "supported", "reason", "reduction", "asymmetric", "direction", "formula", "output_shape",
    "output_dtype",
)


@dataclass(frozen=True)
class Contract:
    """What the task computes. `unknown` maps a field name to why it could not be determined."""

    task_path: str | None
    family: str
    op: str | None
    supported: bool
    reason: str
    inputs: tuple[Input, ...]
    init_params: Mapping[str, Any] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    op_args: Mapping[str, Any] = field(default_factory=dict)
    reduction: Reduction | None = None
    asymmetric: bool | None = None
    direction: str | None = None
    formula: str | None = None
    output_shape: tuple[int, ...] | None = None
    output_dtype: str | None = None
    unknown: Mapping[str, str] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    edited: tuple[str, ...] = ()
    forward_source: str | None = None
    noise_comments: tuple[str, ...] = ()
    signature: Signature | None = None
    dynamic_axes: tuple[int, ...] = ()
    dynamic_problem: str = ""
    # forward as a graph of operators (contract/graph.py's OpGraph.to_data): read from the file, like
    # the inputs; None for a contract built by hand
    graph: Mapping[str, Any] | None = None

    # ------------------------------------------------------------------ convenience
    @property
    def tensor_inputs(self) -> tuple[Input, ...]:
        return tuple(i for i in self.inputs if i.is_tensor)

    @property
    def scalar_inputs(self) -> tuple[Input, ...]:
        return tuple(i for i in self.inputs if not i.is_tensor)

    def input(self, name: str) -> Input | None:
        for i in self.inputs:
            if i.name == name:
                return i
        return None

    @property
    def operands(self) -> tuple[Input, ...]:
        """Tensor inputs in the order the op uses them (op_args['operands']), else input order."""
        names = self.op_args.get("operands")
        if names:
            found = [self.input(n) for n in names]
            if all(f is not None and f.is_tensor for f in found):
                return tuple(f for f in found if f is not None)
        return self.tensor_inputs

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """The full record (every field), for sessions. Inverse of `from_dict`."""
        return {
            "task_path": self.task_path, "family": self.family, "op": self.op,
            "supported": self.supported, "reason": self.reason,
            "inputs": [i.to_dict() for i in self.inputs],
            "init_params": thaw(dict(self.init_params)), "attributes": thaw(dict(self.attributes)),
            "op_args": thaw(dict(self.op_args)),
            "reduction": self.reduction.to_dict() if self.reduction else None,
            "asymmetric": self.asymmetric, "direction": self.direction, "formula": self.formula,
            "output_shape": list(self.output_shape) if self.output_shape is not None else None,
            "output_dtype": self.output_dtype, "unknown": dict(self.unknown),
            "findings": [f.to_dict() for f in self.findings], "edited": list(self.edited),
            "forward_source": self.forward_source, "noise_comments": list(self.noise_comments),
            "signature": self.signature.to_dict() if self.signature else None,
            "dynamic_axes": list(self.dynamic_axes), "dynamic_problem": self.dynamic_problem,
            "graph": thaw(dict(self.graph)) if self.graph is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Contract:
        family = d.get("family", "unknown")
        if family not in FAMILIES:
            raise InputError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
        red = d.get("reduction")
        return cls(
            task_path=d.get("task_path"), family=family, op=d.get("op"),
            supported=bool(d.get("supported", False)), reason=str(d.get("reason", "")),
            inputs=tuple(Input.from_dict(i) for i in d.get("inputs", ())),
            init_params=freeze(dict(d.get("init_params") or {})),
            attributes=freeze(dict(d.get("attributes") or {})),
            op_args=freeze(dict(d.get("op_args") or {})),
            reduction=Reduction.from_dict(red) if red else None,
            asymmetric=d.get("asymmetric"), direction=d.get("direction"), formula=d.get("formula"),
            output_shape=_shape(d.get("output_shape")), output_dtype=d.get("output_dtype"),
            unknown=dict(d.get("unknown") or {}),
            findings=tuple(Finding(**f) for f in d.get("findings", ())),
            edited=tuple(d.get("edited", ())), forward_source=d.get("forward_source"),
            noise_comments=tuple(d.get("noise_comments", ())),
            signature=Signature.from_dict(d["signature"]) if d.get("signature") else None,
            dynamic_axes=tuple(int(a) for a in d.get("dynamic_axes") or ()),
            dynamic_problem=str(d.get("dynamic_problem") or ""),
            graph=freeze(dict(d["graph"])) if isinstance(d.get("graph"), Mapping) else None,
        )

    def to_json_dict(self, dims: Any = None) -> dict[str, Any]:
        """The CLI's JSON (the public contract's keys, then extras). `dims` is a DimPlan or its dict."""
        if dims is not None and hasattr(dims, "to_json_dict"):
            dims = dims.to_json_dict()
        return {
            "family": self.family,
            "op": self.op,
            "supported": self.supported,
            "reason": self.reason,
            "inputs": [
                {"name": i.name, "kind": i.kind,
                 "shape": list(i.shape) if i.shape is not None else None,
                 "dtype": i.dtype, "value": i.value}
                for i in self.inputs
            ],
            "init_params": thaw(dict(self.init_params)),
            "reduction": self.reduction.to_json_dict() if self.reduction else None,
            "asymmetric": self.asymmetric,
            "direction": self.direction,
            "formula": self.formula,
            "output_shape": list(self.output_shape) if self.output_shape is not None else None,
            "unknown": sorted(self.unknown),
            "dims": dims,
            # extras
            "output_dtype": self.output_dtype,
            "op_args": {k: v for k, v in thaw(dict(self.op_args)).items() if k != "expr"},
            "attributes": thaw(dict(self.attributes)),
            "unknown_reasons": dict(sorted(self.unknown.items())),
            "edited": list(self.edited),
            "findings": [f.to_dict() for f in self.findings],
            "task_path": self.task_path,
            "graph": thaw(dict(self.graph)) if self.graph is not None else None,
        }


def norm_axes(dim: Any, rank: int) -> tuple[int, ...] | None:
    """Non-negative, sorted axes for dim=int | tuple | None (None: all axes)."""
    return axes_of(dim, rank)
