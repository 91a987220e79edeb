"""The pieces a generated module is assembled from, before any template is filled.

A pattern does not write a module: it describes one or more kernels (`KernelSpec`: the factory's
shape and scalar parameters, the jit kernel's tensors and body) and the `forward` that calls them
(`ForwardSpec`), and registers the named constants it chose (`Constant`: the tile, the loop count,
the cube tiles, each with the rule ids and the numbers behind it). `module.py` turns these into
syntax trees through the pack's templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst


@dataclass
class Constant:
    """A module-level named constant: the choice, the rules that made it, the numbers behind it."""

    name: str
    value: Any
    comment: list[str]
    rules: tuple[str, ...] = ()
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        v = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"value": v, "rules": list(self.rules), "numbers": dict(self.numbers), "comment": list(self.comment)}


@dataclass
class Scalar:
    """A scalar the factory closes over (eps, alpha, margin, the scalar of a scalar-multiply).

    `source` is the forward expression that supplies it (`float(self.alpha)`, `float(s)`, a
    literal); `value` is its value for this task, for the constants report.
    """

    name: str
    source: cst.BaseExpression
    value: Any = None


@dataclass
class TensorParam:
    """A kernel tensor: its name, its shape as factory-parameter names, literal ints or expressions
    over them (a conv's `n * c`), dtype."""

    name: str
    shape: tuple[str | int | cst.BaseExpression, ...]  # factory names, literal ints or expressions (d1 + 1)
    dtype: str


@dataclass
class KernelSpec:
    factory: str
    kernel: str
    dims: list[str]
    scalars: list[Scalar]
    inputs: list[TensorParam]
    output: TensorParam
    prelude: list[cst.BaseStatement]
    body: list[cst.BaseStatement]
    doc: str

    @property
    def factory_params(self) -> list[str]:
        return [*self.dims, *(s.name for s in self.scalars)]


@dataclass
class ForwardSpec:
    """ModelNew.forward: asserts, reshapes, the kernel calls, the value returned."""

    asserts: list[cst.BaseStatement] = field(default_factory=list)
    prepare: list[cst.BaseStatement] = field(default_factory=list)
    calls: list[cst.BaseStatement] = field(default_factory=list)
    result: cst.BaseExpression | None = None
    # extra ModelNew.__init__ statements after the parameters are kept (a conv's own nn.Conv*d)
    init: list[cst.BaseStatement] = field(default_factory=list)
