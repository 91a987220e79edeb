"""A pattern: how one operator family becomes a kernel, declared next to the code that writes it.

A pattern module (codegen/patterns/<family>.py) exports `PATTERNS`, a tuple of `Pattern`s. Each
names the families (and optionally the ops) it scaffolds, the pack rule it implements, the
function that writes the kernel from a Builder, and `needs`: what it asks the earlier steps to
decide (its tiles, a matmul for the cube, the loop axis). The pipeline asks `needs` before the
tile and loop steps run, so those steps decide exactly what the kernel will use; `build` then
only writes the plan down. No libcst here: the pipeline reads `needs` cheaply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypto_tui.ops.roles import traits
from pypto_tui.plan import Needs, TileRole

if TYPE_CHECKING:
    from pypto_tui.codegen.builder import Builder
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry

NeedsFn = Callable[["Contract", "DimPlan", "Geometry", "KnowledgeBase"], Needs]


SELECTING = frozenset({"gelu", "where"})  # ops the kernel writes with pypto.where (activations._gelu_exact)


def selects(c: Contract) -> bool:
    """Whether the kernel's op, or a call in its expression, is written with pypto.where."""
    from pypto_tui.contract import ir

    if c.op in SELECTING:
        return True
    data = c.op_args.get("expr")
    return data is not None and any(n.kind == "call" and n.name in SELECTING for n in ir.from_data(data).walk())


def main_tile_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The common case: one vec tile on the main kernel tensor, the loop along the axis the pack
    gives the op (ops.toml `loop_axis`, else the outermost), a matmul's M x K x N for the cube."""
    data = kb.op_data(c.op)
    role = TileRole("main", "TILE_SHAPE", g.shape, g.dtype, g.reduce_dim, live_buffers=data.live_buffers,
                    min_rows=data.min_rows, select_mask=selects(c))
    axis = data.loop_axis if data.loop_axis is not None and data.loop_axis < len(g.shape) else 0
    cube = g.matmul if traits(c.family).operand_layout else None
    batch = (dims.matmul or {}).get("batch") if cube is not None else None
    return Needs((role,), cube, axis, g.why, data.loop_note if axis else "",
                 cube_batch=batch if isinstance(batch, int) and batch > 0 else 1)


@dataclass(frozen=True)
class Pattern:
    """`rules` are the pack rules the pattern implements, the first being the one reported with the
    kernel's summary; the rule catalogue traces each of them to the `codegen.patterns` check.

    `when` narrows a pattern to the contracts of its families (and ops) that it takes, for forms
    the op name does not tell apart (a matmul whose right operand is a vector, or whose product is
    masked afterwards); a pattern with `ops` or `when` wins over one that takes the whole family."""

    id: str
    families: tuple[str, ...]
    build: Callable[[Builder], None]
    rules: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    needs: NeedsFn = main_tile_needs
    when: Callable[[Contract], bool] | None = None

    @property
    def rule(self) -> str | None:
        return self.rules[0] if self.rules else None

    @property
    def specific(self) -> bool:
        return bool(self.ops) or self.when is not None

    def matches(self, c: Contract) -> bool:
        return (c.family in self.families and (not self.ops or c.op in self.ops)
                and (self.when is None or self.when(c)))
