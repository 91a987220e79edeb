"""P0.self-check: run the baseline on small asymmetric inputs and compare it with the contract.

Only on request (`contract --run`). The baseline runs in a subprocess with a timeout (the task
file is untrusted code and torch is slow to import); the contract's numpy reference runs here on
the same arrays. Inputs are scaled down to the same rank, rebuilt with the task's own recipe
(so `randn(...).softmax(-1)` is still a distribution), and drawn independently per input, so a
swapped argument shows. Without torch the result says so and how to install the CPU build;
nothing raises.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto_tui.examples import Task, ex, examples
from pypto_tui.findings import Finding, cites
from pypto_tui.ops import registry
from pypto_tui.ops.roles import traits
from pypto_tui.procgroup import run_in_group

RUNNER = Path(__file__).resolve().parent / "baseline_runner.py"
INSTALL_HINT = "pip install torch==2.13.0  (the CPU build)"
SEED = 20240607
FULL_SIZE_LIMIT = 1 << 24  # elements: above this, no fallback to the task's own shapes
TOLERANCE = {  # (rtol, atol) by the baseline's output dtype
    "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float64": (1e-9, 1e-12),
}


@dataclass
class SelfCheckResult:
    """What the self-check found. `status`: agree | disagree | no-torch | error | timeout | no-reference."""

    status: str
    message: str
    torch_available: bool | None = None
    install_hint: str | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    scaled: bool = True
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    baseline_shape: tuple[int, ...] | None = None
    reference_shape: tuple[int, ...] | None = None
    swapped: tuple[str, str] | None = None
    baseline_swap_changes: bool | None = None
    reference_swap_changes: bool | None = None
    elapsed_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "agree"

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "message": self.message, "torch_available": self.torch_available,
            "install_hint": self.install_hint,
            "shapes": {k: list(v) for k, v in self.shapes.items()}, "scaled": self.scaled,
            "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
            "baseline_shape": list(self.baseline_shape) if self.baseline_shape is not None else None,
            "reference_shape": list(self.reference_shape) if self.reference_shape is not None else None,
            "swapped": list(self.swapped) if self.swapped else None,
            "baseline_swap_changes": self.baseline_swap_changes,
            "reference_swap_changes": self.reference_swap_changes,
            "elapsed_s": round(self.elapsed_s, 3),
            "findings": [f.to_dict() for f in self.findings],
        }


def torch_available(python: str | None = None) -> bool:
    """Whether `python` (default: this interpreter) can import torch, without importing it here."""
    if python is None or os.path.realpath(python) == os.path.realpath(sys.executable):
        return importlib.util.find_spec("torch") is not None
    try:
        proc = subprocess.run([python, "-c", "import importlib.util,sys;"
                               "sys.exit(0 if importlib.util.find_spec('torch') else 1)"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


# ================================================================================ scaled inputs
def norm_bound_to_channels(contract: Any) -> bool:
    """Is this a norm whose module is built for its channels, axis 1 (a batch or group norm, an
    affine instance norm)?"""
    a = contract.op_args
    return traits(contract.family).sizes_in_init and (
        contract.op in ("batch_norm", "group_norm") or (contract.op == "instance_norm" and bool(a.get("affine"))))


def normalized_sizes(contract: Any) -> set[int]:
    """The sizes a norm's `normalized_shape` names (none for other operators)."""
    ns = contract.op_args.get("normalized_shape") if traits(contract.family).sizes_in_init else None
    if ns is None:
        return set()
    return {ns} if isinstance(ns, int) else set(ns)


def _keep_values(contract: Any) -> set[int]:
    """Sizes the baseline's modules are built for (channels, normalized shapes): never scaled."""
    keep: set[int] = set()
    ops = contract.operands
    shape: tuple[int, ...] = ops[0].shape if ops and ops[0].shape else ()
    if norm_bound_to_channels(contract) and len(shape) > 1:
        keep.add(shape[1])
    keep.update(normalized_sizes(contract))
    if traits(contract.family).sizes_in_init:  # a size passed to a norm's __init__ may be baked into a module
        keep.update(v for v in contract.init_params.values() if isinstance(v, int) and not isinstance(v, bool))
    from pypto_tui.contract.conv import kept_sizes

    keep.update(kept_sizes(contract))
    sizes = {s for t in contract.tensor_inputs for s in (t.shape or ())}
    for t in contract.tensor_inputs:  # randint(0, num_classes): the bound and the class axis stay together
        r = t.recipe or {}
        high = r.get("high")
        if r.get("fn") == "randint" and isinstance(high, int) and high > 8 and high in sizes:
            keep.add(high)
    return keep


def scale_map(contract: Any) -> dict[int, int]:
    """Original size -> small size: distinct sizes stay distinct (a swapped axis shows), order kept."""
    keep = _keep_values(contract)
    values = sorted({s for t in contract.tensor_inputs for s in (t.shape or ()) if s > 1})
    out: dict[int, int] = {1: 1, 0: 0}
    used = set(keep)
    nxt = 3
    for v in values:
        if v in keep:
            out[v] = v
            continue
        while nxt in used:
            nxt += 1
        if v <= nxt:  # already small: keep it
            out[v] = v
        else:
            out[v] = nxt
            nxt += 1
        used.add(out[v])
    return out


def _bf16_round(a: Any) -> Any:
    import numpy as np

    f = np.asarray(a, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


NP_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "float32", "fp64": "float64", "int32": "int32",
             "int64": "int64", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def _cast(arr: Any, dtype: str | None) -> Any:
    import numpy as np

    if dtype == "bf16":
        return _bf16_round(arr)
    if dtype in ("int32", "int64", "int16", "int8", "uint8") and arr.dtype.kind == "f":
        arr = np.trunc(arr)
    return arr.astype(NP_DTYPES.get(dtype or "fp32", "float32"))


def build_array(recipe: Mapping[str, Any] | None, final_shape: Sequence[int], dtype: str | None,
                smap: Mapping[int, int], rng: Any) -> tuple[Any, bool]:
    """Rebuild one input from its get_inputs() recipe at the scaled size. Returns (array, replayed)."""
    import numpy as np

    def sz(shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(smap.get(int(s), min(int(s), 8)) for s in shape)

    target = sz(final_shape)
    if not recipe or not recipe.get("replayable", True):
        return _cast(rng.standard_normal(target), dtype), False
    fn = recipe.get("fn")
    base = sz(recipe.get("shape", final_shape))
    if fn == "randn":
        x = rng.standard_normal(base)
    elif fn == "rand":
        x = rng.random(base)
    elif fn in ("ones", "zeros", "full"):
        fill = {"ones": 1.0, "zeros": 0.0}.get(fn, recipe.get("fill"))
        x = np.full(base, fill, dtype=np.float64 if not isinstance(fill, bool) else bool)
    elif fn == "empty":
        x = rng.standard_normal(base)
    elif fn == "randint":
        high = recipe.get("high", 2)
        high = smap.get(high, high) if high > 8 else high
        x = rng.integers(recipe.get("low", 0), max(high, recipe.get("low", 0) + 1), base).astype(np.float64)
    elif fn == "eye":
        x = np.eye(*base) if len(base) == 2 else np.eye(base[0])
    else:
        return _cast(rng.standard_normal(target), dtype), False
    for step in recipe.get("post", ()):
        name, args = step[0], list(step[1:])
        arg: Any = args[0] if args else None
        if name == "astype":
            x = _cast(x, arg).astype(np.float64) if arg not in ("bool",) else x.astype(bool)
        elif name == "t":
            x = x.T if x.ndim == 2 else x
        elif name == "transpose":
            x = np.swapaxes(x, int(args[0]), int(args[1]))
        elif name == "permute":
            dims = args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args
            x = np.transpose(x, [int(d) for d in dims])
        elif name == "unsqueeze":
            x = np.expand_dims(x, int(arg))
        elif name == "squeeze":
            x = np.squeeze(x, axis=int(arg)) if arg is not None and x.shape[int(arg)] == 1 else (
                np.squeeze(x) if arg is None else x)
        elif (replayed := _replay_kind(name, x, args)) is not None:
            x = replayed
        else:
            return _cast(rng.standard_normal(target), dtype), False
    if tuple(x.shape) != target:
        return _cast(rng.standard_normal(target), dtype), False
    return _cast(np.asarray(x), dtype), True


def _replay_kind(name: str, x: Any, args: Sequence[Any]) -> Any:
    """One recorded step computed by its registry kind's numpy reference: a one-tensor kind takes the
    step's values as its parameters in order (`["clamp", lo, hi]`); a two-operand kind takes the scalar
    as its second operand, or its first for a step named with a leading `r` (`2 - x` is `rsub`).
    None when no kind replays the step, or a step saved in an older form does not fit the kind."""
    kind = registry.kind(name)
    try:
        if kind is not None and kind.reference is not None and kind.arity == 1:
            return kind.reference(x, **{p: v for p, v in zip(kind.params, args, strict=False) if v is not None})
        if kind is not None and kind.reference is not None and kind.arity == 2 and args:
            return kind.reference(x, args[0])
        flipped = registry.kind(name[1:]) if name.startswith("r") else None
        if flipped is not None and flipped.reference is not None and flipped.arity == 2 and args:
            return flipped.reference(args[0], x)
    except (TypeError, ValueError, IndexError):
        return None
    return None


def make_inputs(contract: Any, scaled: bool = True,
                seed: int = SEED) -> tuple[list[Any], dict[str, tuple[int, ...]], bool]:
    """Arrays for the tensor inputs (in order), their shapes, and whether every recipe replayed."""
    import numpy as np

    smap = scale_map(contract) if scaled else {}
    if not scaled:
        smap = {s: s for t in contract.tensor_inputs for s in (t.shape or ())}
    arrays, shapes, replayed = [], {}, True
    for i, t in enumerate(contract.tensor_inputs):
        rng = np.random.default_rng(seed + 7919 * i)  # independent draws per input: a swap shows
        arr, ok = build_array(t.recipe, t.shape or (), t.dtype, smap, rng)
        replayed = replayed and ok
        arrays.append(arr)
        shapes[t.name] = tuple(arr.shape)
    return arrays, shapes, replayed


def _swap_pair(contract: Any, arrays: Sequence[Any]) -> tuple[int, int] | None:
    """Indices (into tensor_inputs) of the first two operands that can trade places."""
    names = [t.name for t in contract.tensor_inputs]
    order = [names.index(o.name) for o in contract.operands if o.name in names]
    for a_i, a in enumerate(order):
        for b in order[a_i + 1:]:
            if arrays[a].shape == arrays[b].shape and arrays[a].dtype == arrays[b].dtype:
                return a, b
    return None


# ================================================================================ the check
def _finding(kb: Any, level: str, message: str) -> Finding:
    authority = kb.authority_of("P0.self-check") if kb is not None else "rule-docs"
    return Finding("P0.self-check", level, message, authority)  # type: ignore[arg-type]


@cites("P0.self-check")
@examples(valid=[ex(contract=Task("elu"), needs="torch")],
          invalid=[ex(contract=Task("mse_loss", {"op_args.reduction": "sum"}), needs="torch",
                      message="disagree")])
def self_check(contract: Any, task_path: str | os.PathLike[str] | None = None, timeout: float = 60,
               *, python: str | None = None, env: Mapping[str, str] | None = None, kb: Any = None) -> SelfCheckResult:
    """Run the baseline in a subprocess and compare it with the contract's reference. Never raises."""
    start = time.monotonic()
    try:
        res = _self_check(contract, task_path, timeout, python or sys.executable, env, kb)
    except Exception as exc:  # a self-check must not take the command down
        res = SelfCheckResult("error", f"self-check failed: {type(exc).__name__}: {exc}")
        res.findings.append(_finding(kb, "warn", res.message))
    res.elapsed_s = time.monotonic() - start
    return res


def _self_check(contract: Any, task_path: Any, timeout: float, python: str, env: Mapping[str, str] | None,
                kb: Any) -> SelfCheckResult:

    from pypto_tui.contract.reference import NoReference, reference

    task = task_path or contract.task_path
    if not task or not Path(task).is_file():
        r = SelfCheckResult("error", "the self-check needs the task file on disk (no path given)")
        r.findings.append(_finding(kb, "warn", r.message))
        return r
    if any(t.shape is None for t in contract.tensor_inputs):
        r = SelfCheckResult("no-reference", "input shapes are unknown: fill them in before the self-check")
        r.findings.append(_finding(kb, "warn", r.message))
        return r
    too_big = _too_big_to_run(contract)
    if too_big is not None:
        r = SelfCheckResult("error", too_big)
        r.findings.append(_finding(kb, "warn", r.message))
        return r
    arrays, shapes, replayed = make_inputs(contract)
    try:
        ref = reference(contract, arrays)
    except (NoReference, KeyError, ValueError, IndexError, TypeError) as exc:
        r = SelfCheckResult("no-reference", f"the contract has no numpy reference ({exc}); nothing to compare")
        r.findings.append(_finding(kb, "info", r.message))
        return r
    if python == sys.executable and env is None and not torch_available():
        return _no_torch(python, kb)

    result = _run_and_compare(contract, Path(task), arrays, shapes, ref, timeout, python, env, kb, True)
    if result.status == "error" and "forward failed" in result.message:
        total = sum(math.prod(t.shape or ()) for t in contract.tensor_inputs)
        if total <= FULL_SIZE_LIMIT:
            full, fshapes, replayed = make_inputs(contract, scaled=False)
            fref = reference(contract, full)
            again = _run_and_compare(contract, Path(task), full, fshapes, fref, timeout, python, env, kb, False)
            again.message = f"scaled inputs failed ({result.message}); with the task's own shapes: {again.message}"
            result = again
    if not replayed and result.status in ("agree", "disagree"):
        result.findings.append(_finding(kb, "info", "some inputs could not be rebuilt from their get_inputs() "
                                                    "recipe; plain normal samples were used"))
    return result


def _too_big_to_run(contract: Any) -> str | None:
    """Why the inputs cannot be built (a 200-D or 2**62-element input would exhaust memory), or None."""
    from pypto_tui.errors import InputError
    from pypto_tui.shapes import check_shape

    smap = scale_map(contract)
    for t in contract.tensor_inputs:
        try:
            check_shape(t.shape or (1,), f"input '{t.name}'")
        except InputError as exc:
            return f"the self-check cannot build its inputs: {exc}"
        scaled = math.prod(smap.get(s, s) for s in (t.shape or ()))
        if scaled > FULL_SIZE_LIMIT:
            return (f"the self-check cannot build input '{t.name}': {scaled} elements even scaled down "
                    f"(limit {FULL_SIZE_LIMIT})")
    return None


def _no_torch(python: str, kb: Any) -> SelfCheckResult:
    r = SelfCheckResult("no-torch", f"torch is not installed for {python}: the self-check needs it; "
                                    f"install the CPU build with: {INSTALL_HINT}",
                        torch_available=False, install_hint=INSTALL_HINT)
    r.findings.append(_finding(kb, "warn", r.message))
    return r


def _run_and_compare(contract: Any, task: Path, arrays: list[Any], shapes: dict[str, tuple[int, ...]], ref: Any,
                     timeout: float, python: str, env: Mapping[str, str] | None, kb: Any,
                     scaled: bool) -> SelfCheckResult:
    import tempfile

    import numpy as np

    from pypto_tui.contract.reference import reference

    pair = _swap_pair(contract, arrays)
    runs_arrays = [arrays]
    if pair is not None:
        sw = list(arrays)
        sw[pair[0]], sw[pair[1]] = arrays[pair[1]], arrays[pair[0]]
        runs_arrays.append(sw)
    with tempfile.TemporaryDirectory(prefix="pypto-tui-selfcheck-") as tmp:
        wd = Path(tmp)
        runs = []
        for r_i, arrs in enumerate(runs_arrays):
            items, t_i = [], 0
            for inp in contract.inputs:
                if inp.is_tensor:
                    name = f"in{r_i}_{t_i}.npy"
                    np.save(wd / name, arrs[t_i])
                    items.append({"kind": "tensor", "file": name, "dtype": inp.dtype})
                    t_i += 1
                else:
                    items.append({"kind": "scalar", "value": inp.value})
            runs.append(items)
        (wd / "job.json").write_text(json.dumps({"task_path": str(task.resolve()), "runs": runs, "seed": 0}))
        run_env = dict(os.environ if env is None else env)
        run_env.setdefault("OMP_NUM_THREADS", "1")
        try:  # the task's code runs here: its own process group, killed whole when done or late
            proc = run_in_group([python, str(RUNNER), str(wd)], cwd=wd, env=run_env, timeout=timeout)
        except OSError as exc:
            r = SelfCheckResult("error", f"cannot start {python}: {exc.strerror}", shapes=shapes, scaled=scaled)
            r.findings.append(_finding(kb, "warn", r.message))
            return r
        res_file = wd / "result.json"
        if proc.timed_out and not res_file.is_file():
            r = SelfCheckResult("timeout", f"the baseline did not finish within {timeout:g} s; it was stopped with "
                                           "every process it started", torch_available=True, shapes=shapes,
                                scaled=scaled)
            r.findings.append(_finding(kb, "warn", r.message))
            return r
        if not res_file.is_file():
            tail = proc.output.strip().splitlines()[-1:] or ["no output"]
            r = SelfCheckResult("error", f"the baseline runner died: {tail[0]}", shapes=shapes, scaled=scaled)
            r.findings.append(_finding(kb, "warn", r.message))
            return r
        result = json.loads(res_file.read_text())
        if result["status"] == "no-torch":
            return _no_torch(python, kb)
        if result["status"] != "ok":
            r = SelfCheckResult("error", result.get("message", "the baseline failed"), torch_available=True,
                                shapes=shapes, scaled=scaled)
            r.findings.append(_finding(kb, "warn", f"the baseline could not be run: {r.message}"))
            return r
        outs = [np.load(wd / o["file"]) for o in result["outputs"]]
        dtype = result["outputs"][0]["dtype"]
    return _compare(contract, arrays, runs_arrays, pair, outs, dtype, ref, shapes, scaled, kb, reference)


def _compare(contract: Any, arrays: list[Any], runs_arrays: list[list[Any]], pair: tuple[int, int] | None,
             outs: list[Any], dtype: str, ref: Any, shapes: dict[str, tuple[int, ...]], scaled: bool, kb: Any,
             reference: Any) -> SelfCheckResult:
    import numpy as np

    base = np.asarray(outs[0])
    r = SelfCheckResult("agree", "", torch_available=True, shapes=shapes, scaled=scaled,
                        baseline_shape=tuple(base.shape), reference_shape=tuple(np.shape(ref)))
    where = "scaled-down" if scaled else "full-size"
    if tuple(base.shape) != tuple(np.shape(ref)):
        r.status = "disagree"
        r.message = (f"output shapes differ on {where} inputs {shapes}: baseline {tuple(base.shape)}, "
                     f"contract {tuple(np.shape(ref))} (check keepdim and the axes)")
        r.findings.append(_finding(kb, "error", r.message))
        return r
    rtol, atol = TOLERANCE.get(dtype, (0.0, 0.0))
    b64, r64 = base.astype(np.float64), np.asarray(ref, dtype=np.float64)
    diff = np.abs(b64 - r64)
    both_nan = np.isnan(b64) & np.isnan(r64)
    diff = np.where(both_nan, 0.0, diff)
    r.max_abs_err = float(np.nanmax(diff)) if diff.size else 0.0
    r.max_rel_err = float(np.nanmax(diff / (np.abs(r64) + max(atol, 1e-30)))) if diff.size else 0.0
    close = bool(np.all(diff <= atol + rtol * np.abs(r64)) and not np.any(np.isnan(diff)))
    if not close:
        r.status = "disagree"
        r.message = (f"the baseline and the contract disagree on {where} inputs {shapes}: max abs err "
                     f"{r.max_abs_err:.3g}, max rel err {r.max_rel_err:.3g} (tolerance rtol={rtol:g}, atol={atol:g})")
        r.findings.append(_finding(kb, "error", r.message))
        return r
    r.message = (f"the baseline and the contract agree on {where} inputs {shapes}: max abs err "
                 f"{r.max_abs_err:.3g}, max rel err {r.max_rel_err:.3g}")
    level = "info"
    if pair is not None and len(outs) > 1:
        names = [t.name for t in contract.tensor_inputs]
        r.swapped = (names[pair[0]], names[pair[1]])
        sw_base = np.asarray(outs[1]).astype(np.float64)
        sw_ref = np.asarray(reference(contract, runs_arrays[1]), dtype=np.float64)
        r.baseline_swap_changes = not bool(np.allclose(sw_base, b64, rtol=rtol * 10, atol=atol * 10, equal_nan=True))
        r.reference_swap_changes = not bool(np.allclose(sw_ref, r64, rtol=1e-9, atol=1e-12, equal_nan=True))
        if contract.asymmetric is not None and r.baseline_swap_changes != bool(contract.asymmetric):
            r.status = "disagree"
            said = "asymmetric" if contract.asymmetric else "symmetric"
            saw = "changes" if r.baseline_swap_changes else "does not change"
            r.message += (f"; but the contract says {said} and swapping {r.swapped[0]} and {r.swapped[1]} "
                          f"{saw} the baseline's result")
            level = "error"
        else:
            r.message += (f"; swapping {r.swapped[0]} and {r.swapped[1]} "
                          f"{'changes' if r.baseline_swap_changes else 'does not change'} the result, "
                          "as the contract says")
    elif len(contract.tensor_inputs) > 1:
        r.message += "; the inputs differ in shape, so they cannot be swapped (their roles are fixed by shape)"
    r.findings.append(_finding(kb, level, r.message))
    return r
