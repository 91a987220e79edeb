"""Every lint rule, in the order findings on the same position are listed."""

from __future__ import annotations

from pypto_tui.lint.base import LintRule
from pypto_tui.lint.rules.forward import ForwardTorch, InitSignatureRule
from pypto_tui.lint.rules.kernel import Cond, DimBranch, KernelReshape, ReduceApi
from pypto_tui.lint.rules.loops import LoopAxis, NestedLoop, ViewConstant
from pypto_tui.lint.rules.operators import ScalarFirstArg, ScalarLeft, UnaryMinus
from pypto_tui.lint.rules.tiles import LiteralTiles, TileExtraDims, TileWaste
from pypto_tui.lint.rules.v020 import MoveAfterLoop, OutRebind, ReturnInKernel

ALL_RULES: tuple[type[LintRule], ...] = (
    ScalarLeft, UnaryMinus, ScalarFirstArg,
    NestedLoop, LoopAxis, ViewConstant,
    ForwardTorch, KernelReshape, DimBranch, ReduceApi,
    LiteralTiles, TileWaste, TileExtraDims,
    OutRebind, MoveAfterLoop, Cond, ReturnInKernel,
    InitSignatureRule,
)

__all__ = ["ALL_RULES"]
