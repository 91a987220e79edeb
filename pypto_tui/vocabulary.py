"""The words every layer shares, defined once: the operator families and the loop vocabulary.

The contract reader produces these family names, the knowledge pack's strategy table refers to
them, the code generator's patterns declare which ones they scaffold and the app offers them in
the contract form. A new family is added here, and nowhere else in the code's vocabulary.
"""

from __future__ import annotations

from typing import Literal

INDEX_DTYPES: tuple[str, ...] = ("int64", "int32")
"""The dtypes a tensor of positions has (gather's index, an embedding's token ids, cross-entropy's targets):
it says where values are, so it never decides a kernel's value dtype."""

FAMILIES: tuple[str, ...] = (
    "elementwise", "softmax", "reduction", "norm", "loss", "matmul", "scan", "conv", "pool",
    "attention", "layout", "recurrent", "unknown",
)

# Why a loop exists (the loop planner's reason kinds, P6): auto_tiles over the limit, a matmul's M
# loop, or a reduce axis too long for one pass.
LoopWhy = Literal["auto", "matmul", "reduce", "slices"]
# How a loop's last chunk is handled (P6.loop-tail): no tail (one iteration or no loop), a count
# whose BASIC_BATCH divides the axis, or full chunks plus one constant-shape tail view.
TailStrategy = Literal["none", "divides", "main+tail"]
# What the user may ask for when a count leaves a tail: move to a dividing count, or keep a tail.
TailPreference = Literal["divisor", "main+tail"]
TAIL_PREFERENCES: tuple[str, ...] = ("divisor", "main+tail")

# The features of the cost estimate (pypto_tui.estimate): the names a pack's fitted coefficients use
# (knowledge/<pack>/estimate.toml). Each is the natural log of a count the design decides; see
# estimate.features for what each one counts.
ESTIMATE_FEATURES: tuple[str, ...] = (
    "tiles", "rows", "groups", "segments", "waves", "iterations", "serial", "big_split", "balance",
)
# How the recommendation is ranked: the documents' order, the fitted cost estimate, or "auto": the
# estimate for a family and sweep where its measured picks beat the documents' (estimate.toml
# [fit.X.picks]), the documents' order elsewhere.
RANKINGS: tuple[str, ...] = ("rules", "estimate", "auto")
