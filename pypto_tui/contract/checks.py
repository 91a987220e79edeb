"""The contract step's checks (rules P0 and P1.fixed-params), each citing its rule id.

Each check reads a finished contract and returns findings; none changes it. A check reports at
the rule's own severity when the contract breaks the rule (an unknown reduction is an error:
P0.reduction-contract is hard), and at `info` when it is only telling the user what it found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.contract.model import Contract
from pypto_tui.examples import Task, ex, examples
from pypto_tui.findings import Finding, cites, rule_finding
from pypto_tui.ops.roles import traits

if TYPE_CHECKING:
    from pypto_tui.kb import KnowledgeBase

# A task whose get_init_inputs() leaves Model.__init__'s `dim` without a value.
_MISSING_INIT = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
"""

Check = Callable[[Contract, "KnowledgeBase | None"], list[Finding]]


def _kb(kb: KnowledgeBase | None) -> KnowledgeBase:
    if kb is None:
        from pypto_tui.kb import get_kb

        return get_kb()
    return kb


@examples(valid=[ex(contract=Task("elu")), ex(contract=Task("kl_div_batchmean"))],
          invalid=[ex(contract=Task("elu", {"family": "unknown"}), message="operator not recognised")])
@cites("P0.api-semantics")
def check_operator(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    """What the call computes, read from the call itself (not from the argument names)."""
    kb = _kb(kb)
    c = contract
    if c.family == "unknown" or c.op is None:
        return [rule_finding(kb, "P0.api-semantics", f"operator not recognised: {c.reason or 'no pattern matched'}; "
                             "set family and op by hand")]
    roles = ", ".join(c.op_args.get("operands", ()))
    msg = f"{c.family} / {c.op}" + (f" on ({roles})" if roles else "")
    if c.op == "kl_div":
        tf = c.op_args.get("input_transform")
        first = (c.op_args.get("operands") or ("input",))[0]
        msg += (f": the first argument is {'log(' + first + ')' if tf == 'log' else tf or 'already log-probabilities'}"
                f", so the op is {c.direction}, whatever the names say")
    elif traits(c.family).operand_layout and c.op_args.get("transpose_b"):
        msg += ": the right operand is used transposed (b_trans)"
    elif traits(c.family).operand_layout and c.op_args.get("transpose_a"):
        msg += ": the left operand is used transposed"
    out = [rule_finding(kb, "P0.api-semantics", msg, "info")]
    if not c.supported:
        out.append(rule_finding(kb, "P0.api-semantics", f"recognised but not scaffolded: {c.reason}", "info"))
    return out


@examples(valid=[ex(contract=Task("softmax_rows"))],
          invalid=[ex(contract=Task("softmax_rows", {"formula": None}), message="formula unknown")])
@cites("P0.formula")
def check_formula(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    if not contract.formula or "formula" in contract.unknown:
        why = contract.unknown.get("formula", "no formula could be derived")
        return [rule_finding(kb, "P0.formula", f"formula unknown ({why}): write it down before any kernel")]
    return [rule_finding(kb, "P0.formula", contract.formula, "info")]


@examples(valid=[ex(contract=Task("sum_over_channels")), ex(contract=Task("elu"))],
          invalid=[ex(contract=Task("max_over_dim", {"op_args.dim": 7}), message="not an axis of a rank-3 input")])
@cites("P0.reduction-contract", "CL.has-reduce-axis")
def check_reduction(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    c = contract
    if "reduction" in c.unknown or any(k.startswith("reduction.") for k in c.unknown):
        why = c.unknown.get("reduction") or next(v for k, v in c.unknown.items() if k.startswith("reduction."))
        return [rule_finding(kb, "P0.reduction-contract", f"reduction contract not pinned down: {why}")]
    r = c.reduction
    if r is None:
        return [rule_finding(kb, "CL.has-reduce-axis", f"no reduction: {c.family} / {c.op} keeps every element",
                             "info")]
    parts = [f"{r.op} over axes {list(r.axes)}", f"keepdim={r.keepdim}", f"scaling={r.scaling}"]
    if r.count is not None and r.scaling in ("mean", "batchmean"):
        parts.append(f"divided by {r.count}")
    if r.inner_axes:
        parts.insert(0, f"per sample {r.inner_op} over axes {list(r.inner_axes)}, then")
    out = [rule_finding(kb, "P0.reduction-contract", ", ".join(parts) + f"; output shape {c.output_shape}", "info")]
    if len(r.axes) > 1 and traits(c.family).merges_reduce_axes:
        out.append(rule_finding(kb, "CL.has-reduce-axis", f"{len(r.axes)} reduce axes: PyPTO reduces one axis at a "
                                "time (see the dimension plan, O3)", "info"))
    return out


@examples(valid=[ex(contract=Task("mse_loss")), ex(contract=Task("kl_div_batchmean"))],
          invalid=[ex(contract=Task("mse_loss", {"asymmetric": None}), message="asymmetry unknown")])
@cites("P0.asymmetry")
def check_asymmetry(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    c = contract
    if c.asymmetric is None:
        why = c.unknown.get("asymmetric", "not determined")
        return [rule_finding(kb, "P0.asymmetry", f"asymmetry unknown ({why}): decide whether swapping inputs matters")]
    if len(c.tensor_inputs) < 2 and not c.asymmetric:
        return [rule_finding(kb, "P0.asymmetry", "one tensor input: nothing to swap", "info")]
    if c.asymmetric:
        msg = "asymmetric: swapping the inputs changes the result"
        if c.direction:
            msg += f"; {c.direction}"
        return [rule_finding(kb, "P0.asymmetry", msg, "info")]
    return [rule_finding(kb, "P0.asymmetry", "symmetric: swapping the tensor inputs gives the same result", "info")]


@examples(valid=[ex(contract=Task("max_over_dim"))],
          invalid=[ex(contract=Task("max_over_dim", {"op_args.dim": 7}), message="1 field(s) unknown")])
@cites("P0.contract-first")
def check_unknown_fields(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    if not contract.unknown:
        return []
    why = set(contract.unknown.values())
    if len(why) == 1 and len(contract.unknown) > 1:  # one refusal left every field open: say it once
        items = f"{', '.join(sorted(contract.unknown))}: {why.pop()}"
    else:
        items = "; ".join(f"{k}: {v}" for k, v in sorted(contract.unknown.items()))
    return [rule_finding(kb, "P0.contract-first", f"{len(contract.unknown)} field(s) unknown, fill them in before "
                         f"tiles and loops: {items}")]


@examples(valid=[ex(contract=Task("elu"))],
          invalid=[ex(contract=Task(source=_MISSING_INIT), message="init parameters not fixed")])
@cites("P1.fixed-params")
def check_init_params(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    params = dict(contract.init_params)
    out: list[Finding] = []
    if params:
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        out.append(rule_finding(kb, "P1.fixed-params", f"fixed for this task (get_init_inputs): {shown}", "info"))
    missing = [k for k in contract.unknown if k.startswith("init_params.")]
    if missing:
        out.append(rule_finding(kb, "P1.fixed-params", "init parameters not fixed: "
                                + "; ".join(f"{k[12:]}: {contract.unknown[k]}" for k in missing)))
    for comment in contract.noise_comments:
        out.append(rule_finding(kb, "P1.fixed-params", f"comment '{comment}' is dataset noise: the value returned is "
                                "this task's constant", "info"))
    return out


_BAD_DYNAMIC = _MISSING_INIT.replace("import torch.nn as nn\n", 'import torch.nn as nn\n\nDYNAMIC_AXIS = ["Q"]\n')


@cites("P1.dynamic-axis")
@examples(valid=[ex(contract=Task("elu"))],
          invalid=[ex(contract=Task(source=_BAD_DYNAMIC), message="DYNAMIC_AXIS")])
def check_dynamic_axes(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    """A task's DYNAMIC_AXIS declaration that cannot be read is reported, and the scaffold stays static."""
    kb = _kb(kb)
    if contract.dynamic_problem:
        return [rule_finding(kb, "P1.dynamic-axis", f"{contract.dynamic_problem}; the kernel keeps every axis "
                             "static")]
    if contract.dynamic_axes:
        return [rule_finding(kb, "P1.dynamic-axis", f"the task declares axis {list(contract.dynamic_axes)} of the "
                             "first input dynamic: the scaffold makes it pypto.DYNAMIC", "info")]
    return []


CONTRACT_CHECKS: tuple[Check, ...] = (
    check_operator, check_formula, check_reduction, check_asymmetry, check_init_params, check_unknown_fields,
    check_dynamic_axes,
)


def run_checks(contract: Contract, kb: KnowledgeBase | None = None) -> list[Finding]:
    kb = _kb(kb)
    out: list[Finding] = []
    for check in CONTRACT_CHECKS:
        out.extend(check(contract, kb))
    return out


def with_findings(contract: Contract, kb: KnowledgeBase | None = None) -> Contract:
    """The contract with its findings recomputed (self-check findings, if any, are kept)."""
    kept = tuple(f for f in contract.findings if f.rule == "P0.self-check")
    return replace(contract, findings=tuple(run_checks(contract, kb)) + kept)
