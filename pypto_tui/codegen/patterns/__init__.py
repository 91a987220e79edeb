"""Which pattern scaffolds a contract, and the builders for each.

One function per pattern, each decorated with the rules it implements. `select` maps the
contract's family and op (and the dimension plan's reshape) to a builder, or raises Unsupported
with the reason a user can act on.
"""

from __future__ import annotations

from collections.abc import Callable

from pypto_tui.codegen.builder import Builder
from pypto_tui.codegen.context import GenContext
from pypto_tui.codegen.spec import Unsupported

Build = Callable[[Builder], None]

_FAMILY_REASONS = {
    "scan": "scans (cumsum, cumprod, ...) have no pattern in the documents: no scaffold",
    "conv": "convolutions have no pattern in the documents: no scaffold",
    "pool": "pooling has no pattern in the documents: no scaffold",
    "attention": "attention has no pattern in the documents: no scaffold",
    "unknown": "the operator was not recognised",
}


def select(ctx: GenContext) -> tuple[str, Build]:
    """(pattern, builder) for the design, or Unsupported."""
    c = ctx.contract
    fam, op = c.family, c.op
    if fam == "elementwise":
        from pypto_tui.codegen.patterns.elementwise import build_elementwise

        return "A", build_elementwise
    if fam == "matmul":
        from pypto_tui.codegen.patterns.matmul import build_matmul

        return "B", build_matmul
    if fam == "norm":
        if op == "frobenius_norm":
            from pypto_tui.codegen.patterns.global_reduce import build_global_norm

            return "E", build_global_norm
        from pypto_tui.codegen.patterns.norm import build_norm

        return "C", build_norm
    if fam == "loss":
        from pypto_tui.codegen.patterns.loss import build_loss

        return "D", build_loss
    if fam == "softmax":
        from pypto_tui.codegen.patterns.reduce import build_softmax

        return "softmax", build_softmax
    if fam == "reduction":
        from pypto_tui.codegen.patterns.reduce import build_reduction

        return "reduction", build_reduction
    reason = _FAMILY_REASONS.get(fam, f"the {fam} family has no pattern")
    if c.reason:
        reason = f"{reason} ({c.reason})"
    raise Unsupported(reason)
