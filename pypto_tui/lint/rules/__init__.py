"""Every lint rule, in the order findings on the same position are listed."""

from __future__ import annotations

from pypto_tui.lint.base import LintRule
from pypto_tui.lint.rules.api import ApiNames, JitDecorator, KnownModules
from pypto_tui.lint.rules.control import BuiltinMinMax, KernelLoops, LoopOptions, UnrollInnermost
from pypto_tui.lint.rules.cube import CubeTiles
from pypto_tui.lint.rules.forward import ForwardTorch, InitSignatureRule
from pypto_tui.lint.rules.kernel import Cond, DimBranch, KernelReshape, ReduceApi
from pypto_tui.lint.rules.loops import LoopAxis, LoopTail, NestedLoop, ViewConstant
from pypto_tui.lint.rules.operators import ScalarFirstArg, ScalarLeft, UnaryMinus
from pypto_tui.lint.rules.order import TileOrder
from pypto_tui.lint.rules.tiles import LiteralTiles, TileExtraDims, TileWaste
from pypto_tui.lint.rules.ub import UbEstimate
from pypto_tui.lint.rules.v020 import MoveAfterLoop, OutRebind, ReturnInKernel
from pypto_tui.lint.rules.views import ReshapeShape, ViewRank

ALL_RULES: tuple[type[LintRule], ...] = (
    ApiNames, JitDecorator, KnownModules,
    ScalarLeft, UnaryMinus, ScalarFirstArg,
    NestedLoop, LoopAxis, ViewConstant, LoopTail, UnrollInnermost, KernelLoops, BuiltinMinMax, LoopOptions,
    ForwardTorch, KernelReshape, DimBranch, ReduceApi,
    TileOrder, LiteralTiles, TileWaste, TileExtraDims, CubeTiles, UbEstimate,
    ViewRank, ReshapeShape,
    OutRebind, MoveAfterLoop, Cond, ReturnInKernel,
    InitSignatureRule,
)

__all__ = ["ALL_RULES"]
