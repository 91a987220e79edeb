"""What `generate` returns: the module's source, or why there is none, with the choices behind it.

Kept free of libcst so the CLI and the screens can hold and render results cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pypto_tui.findings import Finding


@dataclass(eq=False)
class GeneratedKernel:
    """One generated module.

    `supported` is False when the design cannot be scaffolded; `reason` then says why and
    `source` is empty. `pattern` is "A".."E", "softmax" or "reduction"; `constants` maps each
    named constant (TILE_SHAPE, LOOP_COUNT, CUBE_M, ...) to its value, the rule ids behind it and
    the numbers (prod, auto_tiles, contiguous bytes, BASIC_BATCH, ...).

    `text` is the source, or None until `source` is first read: a kernel of a module of several kernels
    is composed from its syntax tree, so its own text (as long as the module's) is written only if asked.
    """

    text: str | None
    supported: bool
    reason: str
    pattern: str
    flavour: str
    constants: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    summary: str = ""
    # the module's syntax tree (a libcst Module): a module of several kernels is put together from
    # its kernels' trees, never by parsing their text; not part of equality or the JSON
    tree: Any = field(default=None, repr=False)

    @property
    def source(self) -> str:
        if self.text is None:
            from pypto_tui.codegen.rewrite import code_of  # libcst: only where a tree exists

            self.text = code_of(self.tree, self.tree) if self.tree is not None else ""
        return self.text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GeneratedKernel):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq is

    def _compared(self) -> tuple[Any, ...]:
        return (self.source, self.supported, self.reason, self.pattern, self.flavour, self.constants, self.findings,
                self.summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "supported": self.supported, "reason": self.reason, "pattern": self.pattern,
            "flavour": self.flavour, "summary": self.summary, "constants": self.constants,
            "findings": [f.to_dict() for f in self.findings], "source": self.source,
        }
