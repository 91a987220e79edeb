"""Step 5: the kernel module for a design, built with libcst from the knowledge pack's templates.

`generate(plan, kb)` returns a `GeneratedKernel` (source, or the reason there is none, plus the
named constants and the rules behind them). `APPLIES` maps the rule catalogue's `codegen.*` names
to the code that applies each rule while generating (code generation checks nothing itself).
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.generate import generate
from pypto_tui.codegen.model_new import build_model_new
from pypto_tui.codegen.module import build_factory
from pypto_tui.codegen.patterns import PATTERN_REGISTRY
from pypto_tui.codegen.result import GeneratedKernel

CHECKS: dict[str, object] = {}

APPLIES = {
    "codegen.factory": build_factory,
    "codegen.model_new": build_model_new,
    "codegen.operators": Ex,
    "codegen.loop_tail": Builder.loop_constant,
    "codegen.dynamic_axis": Builder.dynamic_block_constant,
    "codegen.patterns": PATTERN_REGISTRY,
}

__all__ = ["APPLIES", "CHECKS", "GeneratedKernel", "generate"]
