"""A user's edits to a contract: applied, then everything that follows from them re-derived.

Keys are field names (`family`, `op`, `formula`, `reduction`, ...) or dotted paths into them:
`reduction.axes`, `op_args.dim`, `init_params.eps`, `inputs.x.shape`. This sits above the
contract's data model, its derivations (semantics) and its checks, which it re-runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pypto_tui.contract import checks, semantics
from pypto_tui.contract.model import DERIVED, EDITABLE, Contract, Input, Reduction, thaw
from pypto_tui.errors import InputError
from pypto_tui.vocabulary import FAMILIES

if TYPE_CHECKING:
    from pypto_tui.kb import KnowledgeBase


def apply_edits(contract: Contract, edits: Mapping[str, Any], kb: KnowledgeBase | None = None) -> Contract:
    """A new contract with the user's values; edited fields leave `unknown` and stay put. Fields the
    user did not touch are re-derived from the edited facts (an edited `op_args.dim`
    recomputes the reduction axes and the output shape), then the checks run again.
    """
    base = contract.to_dict()
    for key, value in edits.items():
        _apply_edit(base, key, value)
    _reduction_to_args(base, edits)
    edited = tuple(dict.fromkeys([*contract.edited, *edits]))
    facts = Contract.from_dict({**base, "findings": [], "edited": list(edited)})
    derived = semantics.derive(facts)
    # Derived fields the user set explicitly win over re-derivation; for a reduction edited
    # field by field, only those sub-fields win (the count follows the new axes).
    explicit = {k: getattr(facts, k) for k in DERIVED if k in edited}
    red_fields = {e.split(".", 1)[1] for e in edited if e.startswith("reduction.")}
    if red_fields and "reduction" not in edited and facts.reduction is not None:
        if derived.reduction is None:
            explicit["reduction"] = facts.reduction
        else:
            explicit["reduction"] = replace(
                derived.reduction, **{f: getattr(facts.reduction, f) for f in red_fields})
    out = replace(derived, **explicit)
    unknown = {k: v for k, v in out.unknown.items() if not _covers(k, edited)}
    out = replace(out, unknown=unknown, edited=edited)
    return checks.with_findings(out, kb)


# Ops whose reduction axes and keepdim are their own `dim` / `keepdim` arguments.
_DIM_FAMILIES = ("reduction", "softmax", "scan")
_DIM_NORMS = ("rms_norm", "l1_norm", "l2_norm")


def _reduction_to_args(d: dict[str, Any], edits: Mapping[str, Any]) -> None:
    """An edited reduction axis/keepdim is the op's own dim/keepdim: write it back to op_args, so
    re-derivation (output shape, formula) follows the edit instead of contradicting it."""
    if not (d.get("family") in _DIM_FAMILIES or d.get("op") in _DIM_NORMS):
        return
    red = d.get("reduction") or {}
    touched = {k for k in edits if k == "reduction" or k.startswith("reduction.")}
    if not touched:
        return
    args = dict(d.get("op_args") or {})
    if "reduction" in touched or "reduction.axes" in touched:
        axes = red.get("axes")
        if axes is not None:
            args["dim"] = axes[0] if len(axes) == 1 else list(axes)
    if ("reduction" in touched or "reduction.keepdim" in touched) and d.get("family") != "softmax":
        args["keepdim"] = bool(red.get("keepdim", False))
    d["op_args"] = args


def _covers(unknown_key: str, edited: tuple[str, ...]) -> bool:
    """An edit of `reduction` covers `reduction.axes`; an edit of `inputs.x.shape` covers it."""
    return any(unknown_key == e or unknown_key.startswith(e + ".") or e.startswith(unknown_key + ".")
               for e in edited)


def _apply_edit(d: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition(".")
    if head not in EDITABLE:
        raise InputError(f"cannot edit '{key}': editable fields are {', '.join(EDITABLE)}")
    if head == "family" and value not in FAMILIES:
        raise InputError(f"family must be one of {', '.join(FAMILIES)}, got {value!r}")
    if not rest:
        if head == "reduction" and isinstance(value, Reduction):
            value = value.to_dict()
        if head == "inputs":
            value = [i.to_dict() if isinstance(i, Input) else dict(i) for i in value]
        d[head] = thaw(value) if head in ("output_shape",) else value
        return
    if head == "inputs":
        name, _, attr = rest.partition(".")
        for item in d["inputs"]:
            if item["name"] == name or (name.isdigit() and d["inputs"].index(item) == int(name)):
                if attr not in ("shape", "dtype", "value", "kind"):
                    raise InputError(f"cannot edit '{key}': an input has shape, dtype, value and kind")
                item[attr] = thaw(value)
                return
        raise InputError(f"cannot edit '{key}': no input named '{name}'")
    if head == "reduction":
        red = d.get("reduction") or {"op": "sum", "axes": [], "keepdim": False, "scaling": "sum"}
        if rest not in ("op", "axes", "keepdim", "scaling", "count", "inner_op", "inner_axes"):
            raise InputError(f"cannot edit '{key}': a reduction has op, axes, keepdim, scaling, count")
        red[rest] = thaw(value)
        d["reduction"] = red
        return
    if head in ("op_args", "init_params", "attributes"):
        target = dict(d.get(head) or {})
        target[rest] = thaw(value)
        d[head] = target
        return
    raise InputError(f"cannot edit '{key}': '{head}' has no sub-fields")
