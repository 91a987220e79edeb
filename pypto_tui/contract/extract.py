"""`extract_contract`: a task file in, a checked Contract out, without running the file.

The steps are: read the file statically (reader), recognise the operator (recognise), derive
the reduction, output shape, formula and asymmetry (semantics), then run the P0/P1 checks.

Bad input policy (documented in the CLI help): a file that is not Python, has no `class Model`,
no `forward` or no `get_inputs()` raises `TaskFileError`. An input whose shape cannot be
resolved also raises it when `strict=True` (the CLI's default: exit 2 with the fix); with
`strict=False` (the app) it becomes a partial contract whose `unknown` names the missing
fields, so the user can fill them in.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pypto_tui.contract import checks, semantics
from pypto_tui.contract.graph import OpGraph, build_graph
from pypto_tui.contract.model import Contract, Input, freeze
from pypto_tui.contract.reader import TaskFacts, read_task
from pypto_tui.contract.recognise import recognise
from pypto_tui.contract.rope import fold_rotate_half
from pypto_tui.contract.values import TensorSpec, Unknown, find_unknown, plain
from pypto_tui.errors import InputError, TaskFileError
from pypto_tui.fileio import read_text
from pypto_tui.source_bounds import MAX_BYTES


def _load(path_or_source: str | os.PathLike[str]) -> tuple[str, str | None]:
    if isinstance(path_or_source, os.PathLike) or (
        isinstance(path_or_source, str) and "\n" not in path_or_source and len(path_or_source) < 4096
    ):
        path = os.fspath(path_or_source)
        if not os.path.lexists(path):
            raise TaskFileError(f"{path}: no such file; give the path of a KernelBench task file")
        if os.path.isdir(path):
            raise TaskFileError(f"{path} is a folder; give one task file (export takes folders)")
        try:
            return read_text(path, "task file", MAX_BYTES), path
        except InputError as exc:
            raise TaskFileError(str(exc)) from None
    return str(path_or_source), None


def _scalar_dtype(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    return "fp32"


def _inputs(facts: TaskFacts, strict: bool) -> tuple[list[Input], dict[str, str]]:
    where = facts.path or "the task file"
    unknown: dict[str, str] = {}
    if facts.inputs_problem is not None:
        if strict:
            raise TaskFileError(f"{where}: get_inputs() cannot be read statically ({facts.inputs_problem}); "
                                "return a list of torch.randn(...) built from literal sizes or module constants")
        unknown["inputs"] = facts.inputs_problem
        return [Input(name, "tensor", None, None) for name in facts.forward_params], unknown
    params = facts.forward_params
    items = facts.inputs
    if len(items) != len(params):
        unknown["inputs"] = (f"get_inputs() returns {len(items)} values but forward takes {len(params)} "
                             f"({', '.join(params)})")
    out: list[Input] = []
    for i, item in enumerate(items):
        name = params[i] if i < len(params) else f"input{i}"
        if isinstance(item, TensorSpec):
            out.append(Input(name, "tensor", item.shape, item.dtype, None, freeze(item.recipe)))
        elif isinstance(item, bool | int | float):
            out.append(Input(name, "scalar", None, _scalar_dtype(item), item))
        else:
            reason = item.reason if isinstance(item, Unknown) else f"get_inputs() item {i + 1} is {type(item).__name__}"
            if strict:
                raise TaskFileError(f"{where}: the shape of input '{name}' (get_inputs() item {i + 1}) cannot be "
                                    f"resolved: {reason}; use literal sizes or module constants")
            out.append(Input(name, "tensor", None, None))
            unknown[f"inputs.{name}.shape"] = reason
            unknown[f"inputs.{name}.dtype"] = reason
    for name in params[len(items):]:
        out.append(Input(name, "tensor", None, None))
        unknown[f"inputs.{name}.shape"] = "get_inputs() gives no value for it"
    return out, unknown


def declared_dynamic_axes(env: dict[str, Any], inputs: list[Input]) -> tuple[tuple[int, ...], str]:
    """The axes of the first tensor input a task declares dynamic (pypto-gym's convention): a
    module constant DYNAMIC_AXIS of axis numbers, or of index names that FORMULA's subscript of
    that input spells (`x[b, d]` with DYNAMIC_AXIS = ["B"] is axis 0). (axes, why not) ."""
    declared = env.get("DYNAMIC_AXIS")
    if declared is None:
        return (), ""
    items = list(declared) if isinstance(declared, list | tuple) else [declared]
    first = next((i for i in inputs if i.is_tensor), None)
    rank = len(first.shape) if first is not None and first.shape is not None else None
    axes: list[int] = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            axis = item
        elif isinstance(item, str) and first is not None:
            formula = env.get("FORMULA")
            match = re.search(rf"\b{re.escape(first.name)}\[([^\]]*)\]", formula) if isinstance(formula, str) else None
            names = [n.strip().lower() for n in match.group(1).split(",")] if match else []
            if item.lower() not in names:
                return (), (f"DYNAMIC_AXIS names {item!r}, which FORMULA's subscript of {first.name} does not "
                            "spell: give axis numbers instead")
            axis = names.index(item.lower())
        else:
            return (), f"DYNAMIC_AXIS holds {item!r}: give axis numbers or FORMULA's index names"
        if rank is None or not -rank <= axis < rank:
            return (), f"DYNAMIC_AXIS {item!r} is not an axis of the first input"
        axes.append(axis % rank)
    return tuple(dict.fromkeys(axes)), ""


def extract_contract(path_or_source: str | os.PathLike[str], kb: Any = None, *, strict: bool = True) -> Contract:
    """Read a task file (a path, or its source text) into a checked Contract. Never executes it."""
    source, path = _load(path_or_source)
    return contract_from_facts(read_task(source, path), kb, strict=strict)


def contract_from_facts(facts: TaskFacts, kb: Any = None, *, strict: bool = True) -> Contract:
    """The checked Contract of what a task computes, from the reader's facts: a task file's
    (`extract_contract`) or a kernel group's of an operator graph (`contract.group`), one path."""
    path = facts.path
    inputs, unknown = _inputs(facts, strict)

    init_params: dict[str, Any] = {}
    for k, v in facts.init_values.items():
        bad = find_unknown(v)
        if bad is not None:
            unknown[f"init_params.{k}"] = bad.reason
        init_params[k] = plain(v)
    for problem in facts.init_problems:
        if not any(k.startswith("init_params.") for k in unknown):
            unknown["init_params"] = problem
    attributes: dict[str, Any] = {}
    for k, v in facts.attributes.items():
        attributes[k] = ({"type": "unknown", "reason": v.reason} if isinstance(v, Unknown) else plain(v))

    dynamic_axes, dynamic_problem = declared_dynamic_axes(facts.env, inputs)
    root = fold_rotate_half(facts.root, {i.name: tuple(i.shape) for i in inputs if i.shape is not None})
    rec = recognise(root, {i.name: i for i in inputs})
    unknown.update(rec.unknown)
    if rec.family == "unknown":
        unknown["family"] = rec.reason
        unknown["op"] = rec.reason
    try:
        graph = build_graph(root, inputs)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError) as exc:  # OpError is a ValueError
        graph = OpGraph((), (), None, (f"forward's graph could not be built: {exc}",))
    contract = Contract(
        task_path=path, family=rec.family, op=rec.op, supported=not rec.reason, reason=rec.reason,
        inputs=tuple(inputs), init_params=freeze(init_params), attributes=freeze(attributes),
        op_args=freeze(rec.op_args), unknown=unknown, forward_source=facts.forward_source,
        noise_comments=tuple(facts.noise_comments), signature=facts.signature,
        dynamic_axes=dynamic_axes, dynamic_problem=dynamic_problem, graph=freeze(graph.to_data()),
    )
    contract = semantics.derive(contract)
    return checks.with_findings(contract, kb)
