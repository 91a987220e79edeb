"""`contract TASK.py [--run]`: the semantic contract and the dimension plan of a task file.

The task file is read statically (libcst); `--run` is the only thing that executes it, and then
only in a subprocess of its own process group with a timeout, after a note on stderr saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pypto_tui.cli.common import (
    Exit,
    FrontEndOption,
    JsonOption,
    KbOption,
    TraceTimeoutOption,
    emit_json,
    handles_input_errors,
    load_kb,
    note,
    use_front_end,
)
from pypto_tui.findings import Finding, has_error

if TYPE_CHECKING:
    from pypto_tui.design import TaskKernel


@handles_input_errors
def contract(
    task: Annotated[Path, typer.Argument(help="A KernelBench task file (read statically, never imported).")],
    run: Annotated[bool, typer.Option("--run", help="Self-check: run the baseline on small asymmetric inputs "
                                      "and compare it with the contract. This EXECUTES the task file (a task "
                                      "file is code): in a subprocess of its own process group, killed whole "
                                      "at --timeout.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds the --run subprocess may take.",
                                           min=1)] = 60.0,
    strategy: Annotated[str | None, typer.Option("--strategy", help="Pick another rank strategy (see dims "
                                                 "alternatives).", show_default=False)] = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Print the contract (formula, inputs, reduction, asymmetry), the operator graph, the kernels it is
    split into with each kernel's contract, and the dimension plan (rules P0-P3, O3)."""
    from pypto_tui.design import Design, Pipeline, task_kernels
    from pypto_tui.fileio import require_file

    pack = load_kb(kb)
    require_file(task, "task file")
    front_end = use_front_end(task, pack, front_end, trace_timeout)
    pipeline = Pipeline(pack, Design(task=str(task), strategy=strategy, front_end=front_end))
    c = pipeline.contract()
    _sizes_a_device_holds(c)
    plan = pipeline.dims()  # the plan the verdict below is made with (--strategy included)
    found = task_kernels(pipeline)
    check = None
    if run:
        from pypto_tui.contract.selfcheck import self_check

        note(f"--run executes the code in {task} (a task file is code: run only files you trust), "
             f"in a subprocess of its own process group, stopped after {timeout:g} s")
        check = self_check(c, task, timeout, kb=pack)
    if found.chain and found.supported:
        # the whole forward is no one operator: its kernels' contracts say what each computes
        findings: list[Finding] = [f for f in c.findings if f.level == "info"]
        findings += [f._replace(message=f"kernel {k.index}: {f.message}") for k in found.kernels
                     for f in (*k.pipeline.contract().findings, *k.pipeline.dims().findings)]
    else:
        findings = [*c.findings, *plan.findings]
    findings += check.findings if check else ()
    doc = c.to_json_dict(plan)
    doc["supported"], doc["reason"] = found.supported, found.reason
    doc["front_end"] = front_end
    doc["kernels"] = [_kernel_doc(k) for k in found.kernels]
    if found.chain:
        # No one operator computes the task: the fields that describe one are each kernel's (`kernels`);
        # a chain ending in a softmax of a product is no softmax of the task's input.
        doc.update(family="chain", op=None, formula=None, reduction=None, asymmetric=None, direction=None)
        if c.graph:
            doc["output_shape"] = (c.graph.get("output_shape") and list(c.graph["output_shape"])) or None
    doc["selfcheck"] = check.to_json_dict() if check else None
    doc["findings"] = [f.to_dict() for f in findings]
    if json_out:
        emit_json(doc)
    else:
        _show(doc, findings)
    raise typer.Exit(Exit.FINDINGS if has_error(findings) else Exit.OK)


def _sizes_a_device_holds(c: Any) -> None:
    """InputError (exit 2) when an input or the output has a size no tensor has: the same bound
    (`shapes.check_shape`: 2**40 per axis, 2**48 in all) `tile` and `loop` refuse a shape with."""
    from pypto_tui.shapes import check_shape

    shapes = [(f"input {i.name}", i.shape) for i in c.inputs if i.is_tensor and i.shape]
    shapes.append(("output", c.output_shape))
    for what, shape in shapes:
        if shape and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            check_shape(shape, f"the task's {what}")


def _kernel_doc(k: TaskKernel) -> dict[str, Any]:
    """One kernel of the task: what it runs, where in the model (`submodule`: its path, "" for
    Model.forward) and its own contract (the fields a reader needs)."""
    kc = k.pipeline.contract()
    return {"index": k.index, "ops": k.ops, "submodule": k.submodule, "rule": k.rule, "family": kc.family, "op": kc.op,
            "formula": kc.formula, "output_shape": list(kc.output_shape) if kc.output_shape else None,
            "inputs": [{"name": i.name, "shape": list(i.shape) if i.shape is not None else None, "dtype": i.dtype}
                       for i in kc.tensor_inputs],
            "reduction": kc.reduction.to_json_dict() if kc.reduction else None}


def _output_row(doc: dict[str, Any]) -> tuple[str, str]:
    """One shape, or each returned tensor's when forward returns a tuple (graph.outputs)."""
    from pypto_tui.cli.render import dims

    graph = doc.get("graph") or {}
    if not graph.get("outputs"):
        return "output shape", dims(doc.get("output_shape"))
    return "output shapes", ", ".join(dims(s) for s in graph["output_shapes"])


def _show(doc: dict[str, Any], findings: list[Finding]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import console, dims, findings_table, kv_table

    red = doc.get("reduction")
    chain = len(doc.get("kernels") or []) > 1
    rows: list[tuple[str, Any]] = [
        ("family / op", f"a chain of {len(doc['kernels'])} kernels (below)" if chain else
         f"{doc['family']} / {doc['op']}"),
        ("supported", "yes" if doc["supported"] else Text(f"no: {doc['reason']}", style="yellow")),
        ("formula", doc.get("formula") or ("each kernel's (below)" if chain else Text("unknown", style="yellow"))),
        ("reduction", "-" if not red else
         f"{red['op']} over axes {red['axes']}, keepdim={red['keepdim']}, scaling={red['scaling']}"),
        ("asymmetric", {True: "yes", False: "no", None: "unknown"}[doc.get("asymmetric")]
         + (f" ({doc['direction']})" if doc.get("direction") else "")),
        _output_row(doc),
        ("init params", ", ".join(f"{k}={v!r}" for k, v in (doc.get("init_params") or {}).items()) or "-"),
    ]
    if doc.get("unknown") and not chain:
        rows.append(("unknown", Text(", ".join(doc["unknown"]), style="bold yellow")))
    console.print(kv_table(rows, title=f"contract: {doc.get('task_path') or ''}"))
    t = Table(title="inputs", title_justify="left")
    for col in ("name", "kind", "shape", "dtype"):
        t.add_column(col)
    for i in doc["inputs"]:
        t.add_row(i["name"], i["kind"], dims(i["shape"]) if i["kind"] == "tensor" else repr(i.get("value")),
                  str(i["dtype"]))
    console.print(t)
    _show_graph(doc.get("graph"))
    _show_kernels(doc.get("kernels") or [])
    d = doc.get("dims") or {}
    if d and not chain:  # a chain's dimension plans are its kernels' (`tile TASK`, `loop TASK`)
        console.print(kv_table([
            ("strategy", f"{d.get('strategy')} ({d.get('reshape')})"),
            ("kernel rank", d.get("kernel_rank")),
            ("forward reshape", ", ".join(dims(s) for s in d.get("forward_reshape") or []) or "-"),
            ("kernel shapes", ", ".join(dims(s) for s in d.get("kernel_shapes") or []) or "-"),
            ("reduce axis (kernel)", d.get("reduce_axis") if d.get("reduce_axis") is not None else "-"),
            ("merged axes", d.get("merged_axes") or "-"),
            ("merge", d.get("merge_reason") or "-"),
            ("alternatives", ", ".join(d.get("alternatives") or []) or "-"),
        ], title="dimension plan"))
    sc = doc.get("selfcheck")
    if sc:
        style = {"agree": "green", "disagree": "bold red"}.get(sc["status"], "yellow")
        console.print(Text(f"self-check: {sc['status']}: {sc['message']}", style=style))
    shown = [f for f in findings if f.level != "ok"]
    if shown:
        console.print(findings_table(shown))


def _show_graph(graph: dict[str, Any] | None) -> None:
    """forward as operators: one row per node (what it reads, its shape and role), then the
    parameters __init__ creates and the graph's problems."""
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import console, dims

    if not graph or not graph.get("nodes"):
        return
    returned = f"outputs {', '.join(graph['outputs'])}" if graph.get("outputs") else f"output {graph.get('output')}"
    t = Table(title=f"graph: {len(graph['nodes'])} node(s), {returned}", title_justify="left")
    for col in ("node", "op", "reads", "shape", "dtype", "role"):
        t.add_column(col)
    for n in graph["nodes"]:
        t.add_row(n["id"], n["op"], ", ".join(n["inputs"]), dims(n["shape"]) if n["shape"] is not None else "?",
                  str(n["dtype"]), n["role"])
    console.print(t)
    params = [v for v in graph.get("values", []) if v["kind"] == "param"]
    if params:
        console.print("parameters: " + ", ".join(f"{v['id']} {dims(v['shape'])}" for v in params))
    for p in [*graph.get("problems", []), *graph.get("notes", [])]:
        console.print(Text(f"graph: {p}", style="yellow"))


def _show_kernels(kernels: list[dict[str, Any]]) -> None:
    """The kernels the graph is split into, one row each (a one-kernel task shows none)."""
    from rich.table import Table

    from pypto_tui.cli.render import console, dims

    if len(kernels) < 2:
        return
    t = Table(title=f"kernels: {len(kernels)}", title_justify="left")
    for col in ("kernel", "ops", "submodule", "family / op", "formula", "output", "fusion rule"):
        t.add_column(col)
    for k in kernels:
        t.add_row(str(k["index"]), k["ops"], k.get("submodule") or "forward", f"{k['family']} / {k['op']}",
                  k.get("formula") or "?",
                  dims(k["output_shape"]) if k.get("output_shape") else "?", k.get("rule") or "-")
    console.print(t)
