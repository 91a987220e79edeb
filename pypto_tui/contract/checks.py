"""The contract step's checks (rules P0 and P1.fixed-params), each citing its rule id.

Each check reads a finished contract and returns findings; none changes it. A check reports at
the rule's own severity when the contract breaks the rule (an unknown reduction is an error:
P0.reduction-contract is hard), and at `info` when it is only telling the user what it found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pypto_tui.findings import Finding, cites

Check = Callable[[Any, Any], list[Finding]]


def _kb(kb: Any) -> Any:
    if kb is None:
        from pypto_tui.kb import get_kb

        return get_kb()
    return kb


def _f(kb: Any, rule: str, level: str | None, message: str) -> Finding:
    """A finding at `level`, or at the rule's own severity when `level` is None."""
    r = kb.rule(rule) if kb is not None else None
    lvl = level or (r.severity if r is not None else "warn")
    return Finding(rule, lvl, message, kb.authority_of(rule) if kb is not None else "rule-docs")  # type: ignore[arg-type]


@cites("P0.api-semantics")
def check_operator(contract: Any, kb: Any = None) -> list[Finding]:
    """What the call computes, read from the call itself (not from the argument names)."""
    kb = _kb(kb)
    c = contract
    if c.family == "unknown" or c.op is None:
        return [_f(kb, "P0.api-semantics", None, f"operator not recognised: {c.reason or 'no pattern matched'}; "
                                                 "set family and op by hand")]
    roles = ", ".join(c.op_args.get("operands", ()))
    msg = f"{c.family} / {c.op}" + (f" on ({roles})" if roles else "")
    if c.op == "kl_div":
        tf = c.op_args.get("input_transform")
        first = (c.op_args.get("operands") or ("input",))[0]
        msg += (f": the first argument is {'log(' + first + ')' if tf == 'log' else tf or 'already log-probabilities'}"
                f", so the op is {c.direction}, whatever the names say")
    elif c.family == "matmul" and c.op_args.get("transpose_b"):
        msg += ": the right operand is used transposed (b_trans)"
    elif c.family == "matmul" and c.op_args.get("transpose_a"):
        msg += ": the left operand is used transposed"
    out = [_f(kb, "P0.api-semantics", "info", msg)]
    if not c.supported:
        out.append(_f(kb, "P0.api-semantics", "info", f"recognised but not scaffolded: {c.reason}"))
    return out


@cites("P0.formula")
def check_formula(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    if not contract.formula or "formula" in contract.unknown:
        why = contract.unknown.get("formula", "no formula could be derived")
        return [_f(kb, "P0.formula", None, f"formula unknown ({why}): write it down before any kernel")]
    return [_f(kb, "P0.formula", "info", contract.formula)]


@cites("P0.reduction-contract", "CL.has-reduce-axis")
def check_reduction(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    c = contract
    if "reduction" in c.unknown or any(k.startswith("reduction.") for k in c.unknown):
        why = c.unknown.get("reduction") or next(v for k, v in c.unknown.items() if k.startswith("reduction."))
        return [_f(kb, "P0.reduction-contract", None, f"reduction contract not pinned down: {why}")]
    r = c.reduction
    if r is None:
        return [_f(kb, "CL.has-reduce-axis", "info", f"no reduction: {c.family} / {c.op} keeps every element")]
    parts = [f"{r.op} over axes {list(r.axes)}", f"keepdim={r.keepdim}", f"scaling={r.scaling}"]
    if r.count is not None and r.scaling in ("mean", "batchmean"):
        parts.append(f"divided by {r.count}")
    if r.inner_axes:
        parts.insert(0, f"per sample {r.inner_op} over axes {list(r.inner_axes)}, then")
    out = [_f(kb, "P0.reduction-contract", "info", ", ".join(parts) + f"; output shape {c.output_shape}")]
    if len(r.axes) > 1 and c.family == "reduction":
        out.append(_f(kb, "CL.has-reduce-axis", "info",
                      f"{len(r.axes)} reduce axes: PyPTO reduces one axis at a time (see the dimension plan, O3)"))
    return out


@cites("P0.asymmetry")
def check_asymmetry(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    c = contract
    if c.asymmetric is None:
        why = c.unknown.get("asymmetric", "not determined")
        return [_f(kb, "P0.asymmetry", None, f"asymmetry unknown ({why}): decide whether swapping inputs matters")]
    if len(c.tensor_inputs) < 2 and not c.asymmetric:
        return [_f(kb, "P0.asymmetry", "info", "one tensor input: nothing to swap")]
    if c.asymmetric:
        msg = "asymmetric: swapping the inputs changes the result"
        if c.direction:
            msg += f"; {c.direction}"
        return [_f(kb, "P0.asymmetry", "info", msg)]
    return [_f(kb, "P0.asymmetry", "info", "symmetric: swapping the tensor inputs gives the same result")]


@cites("P0.contract-first")
def check_unknown_fields(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    if not contract.unknown:
        return []
    items = "; ".join(f"{k}: {v}" for k, v in sorted(contract.unknown.items()))
    return [_f(kb, "P0.contract-first", "warn",
               f"{len(contract.unknown)} field(s) unknown, fill them in before tiles and loops: {items}")]


@cites("P1.fixed-params")
def check_init_params(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    params = dict(contract.init_params)
    out: list[Finding] = []
    if params:
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        out.append(_f(kb, "P1.fixed-params", "info", f"fixed for this task (get_init_inputs): {shown}"))
    missing = [k for k in contract.unknown if k.startswith("init_params.")]
    if missing:
        out.append(_f(kb, "P1.fixed-params", "warn",
                      "init parameters not fixed: " + "; ".join(f"{k[12:]}: {contract.unknown[k]}" for k in missing)))
    for comment in contract.noise_comments:
        out.append(_f(kb, "P1.fixed-params", "info",
                      f"comment '{comment}' is dataset noise: the value returned is this task's constant"))
    return out


CONTRACT_CHECKS: tuple[Check, ...] = (
    check_operator, check_formula, check_reduction, check_asymmetry, check_init_params, check_unknown_fields,
)


def run_checks(contract: Any, kb: Any = None) -> list[Finding]:
    kb = _kb(kb)
    out: list[Finding] = []
    for check in CONTRACT_CHECKS:
        out.extend(check(contract, kb))
    return out


def with_findings(contract: Any, kb: Any = None) -> Any:
    """The contract with its findings recomputed (self-check findings, if any, are kept)."""
    kept = tuple(f for f in contract.findings if f.rule == "P0.self-check")
    return replace(contract, findings=tuple(run_checks(contract, kb)) + kept)
