"""Trace a task file's Model with torch.export: the traced front end's subprocess (stdlib and torch).

Invoked by file path (`python runner.py WORKDIR`), never as `-m pypto_tui...`, so it imports nothing of
pypto-tui. WORKDIR/job.json names the task, the operators to keep whole (not decomposed), the device
(meta, then cpu, by default) and the memory cap; the runner writes WORKDIR/result.json: the exported
graph decomposed to core ATen, as plain JSON (`describe`). This executes the task file (it is code);
whatever the task starts ends with this process (procgroup.guard_task_runner), and the parent stops it
at its timeout.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

KEEP_WHOLE = ("linear.default", "layer_norm.default", "scaled_dot_product_attention.default", "matmul.default",
              "group_norm.default", "silu.default", "hardswish.default", "mish.default", "softplus.default",
              "logsumexp.default", "adaptive_avg_pool2d.default", "adaptive_avg_pool1d.default",
              "max_pool1d.default", "avg_pool1d.default", "max_pool3d.default", "rms_norm.default",
              "instance_norm.default", "relu6.default", "selu.default", "celu.default", "softshrink.default",
              "hardsigmoid.default", "triu.default", "std.correction", "roll.default",
              "lstm.input", "lstm.data", "gru.input", "gru.data", "rnn_tanh.input", "rnn_relu.input")
"""Operators the decomposition leaves as single nodes (ATen overloads under torch.ops.aten): the registry
has a kind for each (a recurrent layer has none yet, but unrolled it is thousands of nodes)."""


def _last_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


def _dtype(t: Any) -> str:
    name = str(t).replace("torch.", "")
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}.get(name, name)


def _meta(val: Any) -> dict[str, Any]:
    """The shape and dtype of a node's value (a FakeTensor), or of each element of a tuple."""
    import torch

    if isinstance(val, torch.Tensor):
        return {"shape": [int(s) for s in val.shape], "dtype": _dtype(val.dtype)}
    if isinstance(val, tuple | list):
        return {"shapes": [_meta(v) for v in val]}
    if isinstance(val, int | float | bool):
        return {"scalar": val}
    return {}


def _arg(a: Any) -> Any:
    """A node's argument as JSON: a node reference, a constant, or a list of them."""
    import torch

    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if isinstance(a, tuple | list):
        return [_arg(x) for x in a]
    if isinstance(a, bool) or a is None or isinstance(a, int | str):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if isinstance(a, torch.dtype):
        return {"dtype": _dtype(a)}
    return {"repr": repr(a)[:80]}


def _module(node: Any) -> tuple[str, str]:
    """The innermost module (its path in the model, its class name) a node was traced in."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, cls = list(stack.values())[-1]
    path = str(path)
    if path.startswith("L['self']"):
        path = path[len("L['self']"):].lstrip(".")
    cls_name = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
    return path, str(cls_name).rsplit(".", 1)[-1]


def _line(node: Any, source: str | None) -> int | None:
    """The line of the task file a node was traced from: the last frame of its stack trace in `source`
    (a refusal names it, so the user finds the construct in their own file)."""
    trace = node.meta.get("stack_trace")
    if not trace or not source:
        return None
    # the task was loaded from its resolved path (run), so its frames carry `source` as it is
    lines = [int(m.group(2)) for m in re.finditer(r'File "([^"]+)", line (\d+)', str(trace)) if m.group(1) == source]
    return lines[-1] if lines else None


def describe(ep: Any, source: str | None = None) -> dict[str, Any]:
    """The exported program's graph as JSON: placeholders (user inputs; parameters, buffers and
    constants with their path in the model), call_function nodes (with the line of `source`, the task
    file, each was traced from) and the output."""
    sig = ep.graph_signature
    params = dict(sig.inputs_to_parameters)
    buffers = dict(sig.inputs_to_buffers)
    consts = dict(getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {})
    user = list(sig.user_inputs)
    placeholders: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    output: Any = None
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            kind, target = ("parameter", params[n.name]) if n.name in params else (
                ("buffer", buffers[n.name]) if n.name in buffers else (
                    ("constant", consts[n.name]) if n.name in consts else ("input", n.name)))
            d = {"name": n.name, "kind": kind, "target": target, **_meta(n.meta.get("val"))}
            if kind == "input":
                d["index"] = user.index(n.name) if n.name in user else None
            placeholders.append(d)
        elif n.op == "call_function":
            path, cls = _module(n)
            nodes.append({"name": n.name, "target": _target(n.target), "args": [_arg(a) for a in n.args],
                          "kwargs": {k: _arg(v) for k, v in n.kwargs.items()}, "module": path, "module_type": cls,
                          "line": _line(n, source), **_meta(n.meta.get("val"))})
        elif n.op == "output":
            output = _arg(n.args[0])
    return {"placeholders": placeholders, "nodes": nodes, "output": output}


def _modes(model: Any) -> list[dict[str, Any]]:
    """The mode each BatchNorm and Dropout module was built in, before the model is put in eval mode to be
    exported: `verify`'s baseline runs `Model(*get_init_inputs())` as built (training mode unless its
    __init__ calls eval()), where BatchNorm normalises with the batch's statistics and Dropout is random,
    so the converter must know which of the eval-mode graph's nodes the baseline computes otherwise."""
    import torch

    kinds = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.dropout._DropoutNd)
    out: list[dict[str, Any]] = []
    for path, m in model.named_modules():
        if isinstance(m, kinds):
            row: dict[str, Any] = {"path": path, "type": type(m).__name__, "training": bool(m.training)}
            if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                row["p"] = float(m.p)
            out.append(row)
    return out


def _target(t: Any) -> str:
    """`aten.relu.default` for an ATen overload; a Python function (operator.getitem) by its name."""
    name = str(t)
    return name if name.startswith("aten.") else str(getattr(t, "__name__", name))


def _keep_table(keep: list[str]) -> tuple[Any, list[str]]:
    import torch

    table = torch.export.default_decompositions()
    kept = []
    for name in keep:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)
        if op is not None and op in table:
            del table[op]
            kept.append(f"aten.{name}")
    return table, kept


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Trace on the meta device first (no weight is allocated or initialised: a 2 GB layer costs
    nothing), then, when the model needs real numbers (`.item()`, a data-dependent branch), on the CPU."""
    t0 = time.monotonic()
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install
        return {"status": "no-torch", "message": _last_line(exc), "python": sys.executable}
    torch.set_num_threads(1)
    task = Path(job["task_path"]).resolve()
    try:
        sys.path.insert(0, str(task.parent))
        spec = importlib.util.spec_from_file_location("pypto_tui_traced_task", task)
        if spec is None or spec.loader is None:
            return {"status": "error", "stage": "load", "message": f"cannot load {task}"}
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        package = (exc.name or "").split(".")[0]
        why = (f"it imports {package}, which the Python running pypto-tui lacks: pip install {package} there, "
               "then trace again") if package else _last_line(exc)
        return {"status": "error", "stage": "load", "message": f"loading the task failed: {why}"}
    except Exception as exc:
        return {"status": "error", "stage": "load", "message": f"loading the task failed: {_last_line(exc)}"}
    devices = [job["device"]] if job.get("device") else ["meta", "cpu"]
    result: dict[str, Any] = {}
    for device in devices:
        result = _trace(module, device, list(job.get("keep", KEEP_WHOLE)), int(job.get("seed", 0)), t0)
        if result["status"] == "ok":
            break
    return result


def _trace(module: Any, device: str, keep: list[str], seed: int, t0: float) -> dict[str, Any]:
    import torch

    try:
        torch.manual_seed(seed)
        with torch.device(device):
            init = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
            model = module.Model(*init)
            modes = _modes(model)
            model = model.eval()
            inputs = tuple(module.get_inputs())
    except Exception as exc:
        return {"status": "error", "stage": "build", "device": device,
                "message": f"building Model failed: {_last_line(exc)}"}
    built = time.monotonic()
    try:
        ep = torch.export.export(model, inputs, strict=False)
    except Exception as exc:
        return {"status": "error", "stage": "export", "device": device,
                "message": f"torch.export failed: {_last_line(exc)}"}
    exported = time.monotonic()
    try:
        table, kept = _keep_table(keep)
        ep = ep.run_decompositions(table)
    except Exception as exc:
        return {"status": "error", "stage": "decompose", "device": device,
                "message": f"decomposing failed: {_last_line(exc)}"}
    done = time.monotonic()
    return {"status": "ok", "torch_version": torch.__version__, "device": device, "kept_whole": kept,
            **describe(ep, getattr(module, "__file__", None)),
            "modes": modes,
            "seconds": {"build": round(built - t0, 2), "export": round(exported - built, 2),
                        "decompose": round(done - exported, 2)}}


def _cap_memory(mb: int) -> None:
    """Cap the address space (RLIMIT_AS) at `mb` MB: a model too big for this machine fails here
    with MemoryError rather than swapping the machine."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _guard(workdir: Path) -> None:
    """Tie the task's processes to this one (procgroup.guard_task_runner), loaded by file path."""
    path = Path(__file__).resolve().parents[1] / "procgroup.py"
    spec = importlib.util.spec_from_file_location("pypto_tui_trace_procgroup", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the package is incomplete
        return
    procgroup = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = procgroup  # dataclasses look their module up by name
    spec.loader.exec_module(procgroup)
    procgroup.guard_task_runner(cleanup=[workdir])


def main(argv: list[str]) -> int:
    workdir = Path(argv[1])
    _guard(workdir)
    try:
        job = json.loads((workdir / "job.json").read_text())
        if job.get("memory_mb"):
            _cap_memory(int(job["memory_mb"]))
        result = run(job)
    except MemoryError:
        result = {"status": "error", "stage": "memory", "message": "the trace ran out of its memory cap"}
    except Exception as exc:  # the runner must always leave a result behind
        result = {"status": "error", "stage": "runner", "message": f"runner failed: {_last_line(exc)}"}
    (workdir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
