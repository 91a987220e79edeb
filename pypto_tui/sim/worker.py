"""The subprocess that compiles one kernel: `python -m pypto_tui.sim.worker JOB.json RESULT.json`.

Why a process per compile: a failed compile leaves pypto's global state poisoned (the next
compile fails with "function nested is not allowed"; clearing that flag made the next one hang),
the C++ side and pypto's helper scripts print straight to fds 1 and 2, and the interpreter's
dumps can reach gigabytes. So every job gets a fresh interpreter and a private temp dir:

- TILE_FWK_OUTPUT_DIR (cost-model and verify dumps), ASCEND_PROCESS_LOG_PATH (the plog, where
  the real compile-error reasons are) and PYPTO_HOME (run data) all point into it; the dir is
  deleted when the job ends, whatever happened (the runner deletes it too if we were killed);
- fds 1 and 2 are redirected with os.dup2 into a file in that dir while pypto is in use;
- ASCEND_HOME_PATH is removed and every jit kernel is forced to `run_mode=RunMode.SIM`, since
  this is the CPU simulator whatever the module's defaults say. Generated modules follow the
  ecosystem's switch `AIKG_PYPTO_RUN_MODE` (0 = RunMode.NPU, 1 = RunMode.SIM, passed as the
  int `runtime_options={"run_mode": ...}`); the worker sets it to 1 before exec'ing the module.

Job kinds (see jobs.py for the JSON):
- cost: exec the kernel module, build the inputs, `ModelNew(*init_args)(*inputs)`, and read
  e2e time, task count and utilisation from the swim file(s); or the error and its real reason.
- verify: the same, with the CopyToHost shim, the cached calculator and pass-verify turned on
  for every kernel with pypto's default pass filter (`verify_options={"enable_pass_verify":
  True}`, replacing whatever the module asked for, injected by wrapping `pypto.frontend.jit`
  before the module is exec'd); after the first trial, values only (`_values_only`). The
  interpreter writes the tensor graph's values into the out tensors (goldens are not needed).
  forward runs under guard.py's watch (only kernels compute: no torch work outside a launch, every
  jit kernel launched, each output a kernel's output); each trial's outputs are saved in the work
  dir (`HANDOFF`) and the result says `ran`. The runner then starts this module again with the
  job's `step` set to "compare" (`run_compare`): a process that never imported the kernel module
  runs the task file's `Model` on the same seeded inputs and compares each output (compare.py).
  Each compiler pass is compared with that
  tensor graph in `verify_result_brief.csv`, which pypto completes only when this process exits:
  the runner reads it afterwards (passes.py), so a verify job leaves its work dir to the runner.
  The address space is capped with RLIMIT_AS (`memory_limit_mb`); the parent applies the timeout.

The current stage goes to `<work dir>/stage` (stages.py) for the progress displays.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from pypto_tui.procgroup import guard_task_runner
from pypto_tui.sim import jobs as J
from pypto_tui.sim import stages, swim
from pypto_tui.sim.fds import silenced_fds
from pypto_tui.sim.guard import Guard, jit_kernels
from pypto_tui.sim.on_cpu import WORKER_ENV

KERNEL_MODULE = "pypto_tui_sim_kernel"
TASK_MODULE = "pypto_tui_sim_task"
NOISE_FILE = "noise.log"
COMPARE_NOISE_FILE = "compare-noise.log"
HANDOFF = "handoff"
"""The work dir's folder where the kernel worker leaves each trial's outputs for the compare step."""

_TORCH_DTYPES = {
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8", "int16": "int16",
    "int32": "int32", "int64": "int64", "uint8": "uint8", "bool": "bool",
}


class _KernelFailed(Exception):
    """A jit kernel call raised: the compiler (or its simulator) refused the kernel. `kernel` is the
    jit function's name and first line, so the verdict can say which kernel of a module it was."""

    def __init__(self, exc: BaseException, wrapper: Any = None) -> None:
        super().__init__(exc)
        fn = getattr(wrapper, "_original_func", None)
        code = getattr(fn, "__code__", None)
        self.kernel: dict[str, Any] | None = None if fn is None else {
            "name": str(getattr(fn, "__name__", "kernel")), "line": int(getattr(code, "co_firstlineno", 0)),
            "qualname": str(getattr(fn, "__qualname__", ""))}


class _Timing:
    def __init__(self) -> None:
        self.compile_s = 0.0
        self.sim_s = 0.0
        self.in_kernel = 0
        self.launches = 0
        self.guard: Guard | None = None


# --- process setup ---------------------------------------------------------------------------


def point_env_at(work: Path) -> None:
    """Send every file pypto writes into `work`, and make SIM the only possible run mode.
    Must run before pypto is imported (the log path is read at import)."""
    for sub in ("out", "log", "home", "kernel"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    os.environ["TILE_FWK_OUTPUT_DIR"] = str(work / "out")
    os.environ["ASCEND_PROCESS_LOG_PATH"] = str(work / "log")
    os.environ["PYPTO_HOME"] = str(work / "home")
    os.environ.pop("ASCEND_HOME_PATH", None)
    os.environ["AIKG_PYPTO_RUN_MODE"] = "1"
    os.environ[WORKER_ENV] = "1"  # exported modules leave SIM mode to us (see on_cpu)
    os.environ.setdefault("AIKG_PYPTO_RUNTIME_DEBUG_MODE", "0")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")


M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
FEW_ARENAS = 2


def few_malloc_arenas() -> None:
    """At most FEW_ARENAS malloc arenas. glibc gives each new thread an arena that reserves 64 MB
    of address space, and RLIMIT_AS counts reservations, not use: pypto's compiler threads ran
    verify workers out of an 8 GB cap with 'Resource temporarily unavailable' (a thread that could
    not start) far below 8 GB of resident memory (KernelBench level-2 tasks 3, 10, 36, 53, ...)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to tune
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, FEW_ARENAS)


def limit_memory(mb: int | None) -> None:
    """Cap the address space, so a runaway verify fails here instead of taking the machine."""
    if not mb:
        return
    few_malloc_arenas()
    limit = int(mb) * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


# --- pypto hooks -----------------------------------------------------------------------------


def hook_pypto(pypto: Any, *, verify: bool, timing: _Timing) -> None:
    """Wrap `pypto.frontend.jit` (force SIM; pass-verify on with the default pass filter for
    verify, off for cost), count the kernel calls and time the wrapper's compile and cost-model
    run. Must run before the kernel module is exec'd."""
    from pypto.frontend import parser as fparser
    from pypto.frontend.parser import entry

    orig_jit = entry.jit

    def options(kw: dict[str, Any]) -> dict[str, Any]:
        rt = dict(kw.get("runtime_options") or {})
        rt["run_mode"] = pypto.RunMode.SIM
        kw["runtime_options"] = rt
        # The module's own verify options are dropped: a pass filter or a dump folder of its
        # choosing would decide what "verified" means, or write outside the work dir.
        kw["verify_options"] = {"enable_pass_verify": bool(verify)}
        return kw

    def jit(func: Any = None, **kw: Any) -> Any:
        # Bare `@jit` and `@jit(...)` must each reach the original the way the module called
        # it: the original captures its caller's frame locals for the parser.
        return orig_jit(func, **options(kw))

    jit.__doc__ = orig_jit.__doc__
    for mod in (pypto.frontend, fparser, entry):
        if getattr(mod, "jit", None) is orig_jit:
            mod.jit = jit

    W = entry.JitCallableWrapper
    orig_call, orig_compile, orig_run = W.__call__, W.compile, W._run_with_cpu

    def call(self: Any, *a: Any, **k: Any) -> Any:
        timing.in_kernel += 1
        guard = timing.guard if timing.in_kernel == 1 else None
        try:
            if guard is not None:
                out = guard.launch(self, a, lambda: orig_call(self, *a, **k))
            else:
                out = orig_call(self, *a, **k)
            if timing.in_kernel == 1:
                timing.launches += 1
            return out
        except Exception as exc:
            if timing.in_kernel == 1:
                raise _KernelFailed(exc, self) from exc
            raise
        finally:
            timing.in_kernel -= 1

    def compile_(self: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return orig_compile(self, *a, **k)
        finally:
            timing.compile_s += time.perf_counter() - t

    def run(self: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return orig_run(self, *a, **k)
        finally:
            timing.sim_s += time.perf_counter() - t

    W.__call__, W.compile, W._run_with_cpu = call, compile_, run


def _values_only(pypto: Any) -> None:
    """After the first trial, compute values only: an empty pass filter. In SIM mode 0.2.0
    compiles again at every call, and pass-verify interprets the graph once per pass (7 runs);
    the passes were checked against the tensor graph on the first trial's inputs, and the later
    trials exist to compare values on other inputs (KernelBench's trials compare outputs).
    Measured on conv_transpose1d_dilated at its test shape: 45.7 s -> 35.7 s for two trials;
    the pass rows the second trial writes are its tensor graph's, at the same places."""
    pypto.set_verify_options(pass_verify_pass_filter=[])


# --- modules and inputs ----------------------------------------------------------------------


def load_module(name: str, path: Path) -> Any:
    """Import a file as a fresh module (a real file, so inspect.getsource works for the parser)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def build_inputs(torch: Any, specs: tuple[J.InputSpec, ...], seed: int) -> list[Any]:
    """The forward() arguments, reproducible from the seed."""
    gen = torch.Generator().manual_seed(int(seed))
    out: list[Any] = []
    for index, s in enumerate(specs):
        if s.is_scalar:
            out.append(s.scalar)
            continue
        dtype = getattr(torch, _TORCH_DTYPES[s.dtype])
        if s.recipe:
            out.append(_from_recipe(torch, s, dtype, seed, index))
            continue
        integer = not (dtype.is_floating_point or dtype is torch.bool)
        fill = s.fill or ("randint" if integer or dtype is torch.bool else "randn")
        shape = tuple(s.shape)
        if fill == "randn":
            t = torch.randn(shape, generator=gen, dtype=torch.float32)
            if s.low is not None or s.high is not None:
                t = t.clamp(s.low, s.high)
        elif fill == "uniform":
            lo = 0.0 if s.low is None else float(s.low)
            hi = 1.0 if s.high is None else float(s.high)
            t = torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
        elif fill == "randint":
            lo = int(s.low) if s.low is not None else (0 if dtype in (torch.bool, torch.uint8) else -8)
            hi = int(s.high) if s.high is not None else (2 if dtype is torch.bool else 8)
            t = torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64)
        elif fill == "zeros":
            out.append(untouched_zeros(torch, shape, dtype))
            continue
        elif fill == "ones":
            t = torch.ones(shape)
        else:  # arange
            n = 1
            for d in shape:
                n *= d
            t = torch.arange(n, dtype=torch.float32).reshape(shape)
        out.append(t.to(dtype).contiguous())
    return out


def untouched_zeros(torch: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Zeros that hold no memory until something writes them: numpy's zeros come from calloc, whose
    large blocks are fresh pages the kernel maps lazily (torch.zeros writes every byte). A cost
    job's inputs are read by no one but the cost model, so its worker no longer holds a copy of
    each input before the compile starts (bfloat16, which numpy lacks, falls back to torch.zeros)."""
    import numpy as np

    try:
        np_dtype = torch.empty((), dtype=dtype).numpy().dtype
    except TypeError:
        return torch.zeros(shape, dtype=dtype)
    return torch.from_numpy(np.zeros(shape, dtype=np_dtype))


def _from_recipe(torch: Any, s: J.InputSpec, dtype: Any, seed: int, index: int) -> Any:
    """Replay the task's own recipe (e.g. randn(...).softmax(-1)) at the job's shape: a kl_div must
    be verified on probability distributions, not on raw normals."""
    import numpy as np

    from pypto_tui.contract.selfcheck import build_array

    sizes = {int(d): int(d) for d in (*s.shape, *(s.recipe or {}).get("shape", ()))}
    arr, _ = build_array(s.recipe, s.shape, s.dtype, sizes, np.random.default_rng(int(seed) * 1009 + index))
    return torch.from_numpy(np.ascontiguousarray(arr)).to(dtype).contiguous()


def _clone(torch: Any, xs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _to_numpy(torch: Any, t: Any) -> tuple[Any, str]:
    from pypto_tui.sim.compare import dtype_name

    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t)
    name = dtype_name(t.dtype)
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy(), name


def _where(exc: BaseException, files: tuple[str, ...]) -> str:
    """' (kernel line N)' for the innermost frame in one of our exec'd files, if any."""
    for fs in reversed(traceback.extract_tb(exc.__traceback__)):
        if fs.filename in files:
            which = "kernel" if fs.filename == files[0] else "task file"
            return f" ({which} line {fs.lineno})"
    return ""


def _describe(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    summary = swim.summarise_exception_text(text) if text else ""
    name = type(exc).__name__
    if name == "RenderedParserError" or summary.startswith(f"{name}:") or summary.startswith("Errcode"):
        return summary or name
    return f"{name}: {summary}" if summary else name


def _peak_memory_mb() -> tuple[float | None, float | None]:
    """(peak resident, peak virtual) of this process in MB, from /proc (Linux only)."""
    rss = vm = None
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = round(int(line.split()[1]) / 1024, 1)
            elif line.startswith("VmPeak:"):
                vm = round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return rss, vm


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc) or "bad_alloc" in str(exc)


# --- the job ---------------------------------------------------------------------------------


def _execute(job: J.SimJob, work: Path, result: J.SimResult) -> None:
    from pypto_tui.sim import shim

    try:
        shim.ensure_supported_pypto()
    except Exception as exc:
        result.status, result.error = J.UNAVAILABLE, str(exc)
        return
    stages.write_stage(work, stages.IMPORTING)
    import pypto
    import torch

    verify = job.kind == "verify"
    timing = _Timing()
    if verify:
        if not shim.calculator_ready(Path(job.calculator_dir) if job.calculator_dir else None):
            stages.write_stage(work, stages.CALCULATOR)
        try:
            info = shim.ensure_calculator(Path(job.calculator_dir) if job.calculator_dir else None)
        except Exception as exc:
            from pypto_tui.sim.availability import verify_tools_message

            result.status = J.UNAVAILABLE
            result.error = verify_tools_message() or f"could not build pypto's calculator library: {_describe(exc)}"
            return
        if info.built:
            result.calculator_built_s = round(info.build_s, 2)
        shim.install_copy_to_host_shim()
    hook_pypto(pypto, verify=verify, timing=timing)

    kernel_path = work / "kernel" / f"{KERNEL_MODULE}.py"
    kernel_path.write_text(job.kernel_source, encoding="utf-8")
    task_path = str(Path(job.task_file).resolve()) if job.task_file else ""
    files = (str(kernel_path), task_path)
    kernels = jit_kernels(job.kernel_source)
    result.kernels_defined = len(kernels)
    stage = "import the kernel module"
    try:
        kmod = load_module(KERNEL_MODULE, kernel_path)
        if not hasattr(kmod, "ModelNew"):
            result.status, result.error = J.ERROR, "the kernel module defines no ModelNew"
            return
        if verify:
            # Here only to refuse a broken task before anything compiles: the baseline runs in the
            # compare step's process, which never imports the kernel module (run_compare).
            stage = "import the task file"
            task = load_module(TASK_MODULE, Path(task_path))
            if not hasattr(task, "Model"):
                result.status, result.error = J.ERROR, f"the task file {job.task_file} defines no Model"
                return
            stage = "call the task's get_inputs()"
            _check_get_inputs(torch, task)
        stage = "build ModelNew"
        torch.manual_seed(job.seed)
        model_new = kmod.ModelNew(*job.init_args)
        handoff = work / HANDOFF
        clobbered_by_trial: list[list[int]] = []
        captured: dict[str, Any] = {}
        _capture_stages(torch, job, model_new, timing, captured)
        for trial, seed in enumerate(job.trial_seeds()):
            if trial == 1:
                _values_only(pypto)
            inputs = build_inputs(torch, job.inputs, seed)
            # A cost job compares nothing, so the kernel may have the inputs themselves (no copy).
            kernel_inputs = _clone(torch, inputs) if verify else inputs
            guard = timing.guard = Guard(torch, files, kernels)
            stage = "run ModelNew.forward"
            stages.write_stage(work, stages.KERNEL)
            with torch.no_grad(), guard.watching():
                got = model_new(*kernel_inputs)
            timing.guard = None
            if trial == 0:
                result.kernel_calls = timing.launches
                result.compile_s = round(timing.compile_s, 3)
                result.sim_s = round(timing.sim_s, 3)
                _read_cost(job, work, result)
            ran = len(guard.launches)
            result.kernels_run = ran if trial == 0 else min(result.kernels_run or 0, ran)
            result.outside_kernels = result.outside_kernels or [o.to_dict() for o in guard.outside]
            why = guard.problem(got)
            if why is not None:
                why = f"trial {trial + 1} of {job.trials} (seed {seed}): {why}" if trial else why
                if verify:
                    result.status, result.passed, result.reason = J.MISMATCH, False, why
                else:
                    result.status, result.error = J.ERROR, why
                return
            if not verify:
                result.status = J.OK if result.e2e_us is not None else J.ERROR
                if result.e2e_us is None:
                    result.error = "forward() ran but no kernel wrote a cost-model result (no jit kernel called?)"
                return
            pairs = zip(kernel_inputs, inputs, strict=True)
            clobbered = [i for i, (a, b) in enumerate(pairs) if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
            result.inputs_clobbered = bool(clobbered) or bool(result.inputs_clobbered)
            clobbered_by_trial.append(clobbered)
            handoff.mkdir(exist_ok=True)
            torch.save([t.detach().clone() for t in _as_list(got)], handoff / f"trial{trial}.pt")
            if captured:
                torch.save(dict(captured), handoff / f"stages{trial}.pt")
                captured.clear()
            del got, inputs, kernel_inputs, guard
            if trial + 1 < job.trials:
                _release_memory()
        (handoff / "kernel.json").write_text(json.dumps({"clobbered": clobbered_by_trial}), encoding="utf-8")
        result.status = J.RAN
    except _TaskInputsFailed as exc:
        result.status, result.passed = J.ERROR, False
        result.error = f"the task is broken: {exc}"
        result.reason = _in_trial(job, result, result.error)
    except _KernelFailed as wrapped:
        cause = wrapped.__cause__ or wrapped
        result.compile_s = round(timing.compile_s, 3)
        if _is_oom(cause):
            _out_of_memory(job, result)
            return
        result.status = J.COMPILE_ERROR
        result.error = _describe(cause)
        result.failed_kernel = wrapped.kernel
        result.reason = _in_trial(job, result, swim.compile_error_reason(work / "log") or result.error)
    except Exception as exc:
        if _is_oom(exc):
            _out_of_memory(job, result)
            return
        result.status = J.ERROR
        result.error = f"could not {stage}: {_describe(exc)}{_where(exc, files)}"
        result.reason = _in_trial(job, result, swim.compile_error_reason(work / "log") or result.error)


# --- the compare step: a process that never imported the kernel module -------------------------


def run_compare(job: J.SimJob, prior: J.SimResult) -> J.SimResult:
    """The baseline and the comparison, for the outputs the kernel worker left in the work dir
    (`HANDOFF`). This runs in a process of its own, which imports the task file and torch but never
    the kernel module: a module that patched torch, numpy or this code at import (torch.allclose
    returning True, the baseline's softmax returning the kernel's answer) cannot reach it."""
    t0 = time.perf_counter()
    result = replace(prior, status=J.ERROR)
    work = Path(job.work_dir or ".")
    task_path = str(Path(job.task_file or "").resolve())
    stage = "import the task file"
    try:
        limit_memory(job.memory_limit_mb)
        with silenced_fds(work / COMPARE_NOISE_FILE):
            import torch

            stages.write_stage(work, stages.BASELINE)
            hand = json.loads((work / HANDOFF / "kernel.json").read_text(encoding="utf-8"))
            task = load_module(TASK_MODULE, Path(task_path))
            model = None
            for trial, seed in enumerate(job.trial_seeds()):
                stage = "run the baseline Model"
                inputs = build_inputs(torch, job.inputs, seed)
                if model is None:
                    torch.manual_seed(job.seed)
                    model = task.Model(*job.init_args)
                baseline_inputs = _clone(torch, inputs)
                with torch.no_grad():
                    want = model(*baseline_inputs)
                result.trials_run = trial + 1
                clobbered = [int(i) for i in hand["clobbered"][trial]]
                spared = [i for i in clobbered if torch.equal(baseline_inputs[i], inputs[i])]
                if spared:
                    result.status, result.passed = J.MISMATCH, False
                    result.reason = (f"the kernel writes into forward input(s) {', '.join(map(str, spared))}, which "
                                     "the baseline leaves unchanged (the caller's tensors would be corrupted)")
                    break
                stage = "read the kernel's outputs"
                got = torch.load(work / HANDOFF / f"trial{trial}.pt", weights_only=True)
                _compare(torch, job, got, want, result)
                if not result.passed:
                    _name_first_diverging(torch, job, model, inputs, work / HANDOFF / f"stages{trial}.pt", result)
                    _say_if_ill_conditioned(torch, job, model, inputs, want, result)
                    if job.trials > 1:
                        result.reason = f"trial {trial + 1} of {job.trials} (seed {seed}): {result.reason}"
                    break
                del got, want, inputs, baseline_inputs
                _release_memory(collect=False)  # few cycles here: gc.collect cost 0.36 s of a 0.73 s step
    except Exception as exc:
        if _is_oom(exc):
            _out_of_memory(job, result)
        else:
            result.status, result.passed = J.ERROR, False
            result.error = f"could not {stage}: {_describe(exc)}{_where(exc, ('', task_path))}"
            result.reason = _in_trial(job, result, result.error)
    rss, vm = _peak_memory_mb()
    result.peak_rss_mb = max(x for x in (rss, prior.peak_rss_mb, 0.0) if x is not None)
    result.peak_vm_mb = max(x for x in (vm, prior.peak_vm_mb, 0.0) if x is not None)
    result.wall_s = round((prior.wall_s or 0.0) + time.perf_counter() - t0, 3)
    return result


def _capture_stages(torch: Any, job: J.SimJob, model_new: Any, timing: _Timing, captured: dict[str, Any]) -> None:
    """For a module plan (`job.stages`): keep each kernel's result as forward receives it from
    `self._k<i>` (the composed module's kernel i), copied with the guard's modes off."""
    if not job.stages or not isinstance(model_new, torch.nn.Module):
        return
    for position, stage in enumerate(job.stages.get("stages", ())):
        sub = getattr(model_new, f"_k{position}", None)
        if not isinstance(sub, torch.nn.Module):
            return

        def hook(_mod: Any, _args: Any, out: Any, key: str = str(stage["index"])) -> None:
            if isinstance(out, torch.Tensor) and timing.guard is not None:
                with timing.guard.quiet():
                    captured[key] = out.detach().clone()

        sub.register_forward_hook(hook)


def _name_first_diverging(torch: Any, job: J.SimJob, model: Any, inputs: list[Any], saved: Path,
                          result: J.SimResult) -> None:
    """A failing module plan: the first kernel whose output differs from its reference intermediate
    (the plan's graph evaluated in numpy, float64, on the same inputs and the baseline's parameters),
    named in `divergence` and `first_diverging_kernel`. Silent when the graph has an operator without a
    reference or a kernel's result was not kept: this only says where, the verdict is already made."""
    import numpy as np

    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.ops.registry import kind
    from pypto_tui.sim.compare import compare

    if not job.stages or not saved.exists():
        return
    try:
        kept = torch.load(saved, weights_only=True)
        graph = OpGraph.from_data(job.stages["graph"])
        env: dict[str, Any] = {}
        tensors = iter(x for x in inputs if isinstance(x, torch.Tensor))
        for v in graph.values:
            if v.kind == "input":
                env[v.id] = next(tensors).double().numpy()
            elif v.kind == "param":
                try:
                    t = model.get_parameter(v.id)
                except AttributeError:
                    t = model.get_buffer(v.id)
                env[v.id] = t.detach().double().numpy()
            else:
                env[v.id] = v.value
        for node in graph.nodes:
            k = kind(node.op)
            if k is None or k.reference is None:
                break
            args = [env[i] for i in node.inputs]
            env[node.id] = np.asarray(k.reference(*args, **dict(node.attrs)) if node.attrs else k.reference(*args))
        for stage in job.stages["stages"]:
            mine, want = kept.get(str(stage["index"])), env.get(stage["writes"])
            if mine is None or want is None:
                return
            got, name = _to_numpy(torch, mine)
            verdict = compare(got, np.asarray(want).astype(got.dtype), dtype=name, actual_dtype=name,
                              tolerances=job.tolerances)
            if not verdict.passed:
                result.first_diverging_kernel = int(stage["index"])
                result.divergence = (f"kernel {stage['index']} ({stage['ops']}) is the first whose output diverges "
                                     f"from the plan's intermediate {stage['writes']}: {verdict.reason}")
                return
    except Exception:  # a diagnosis that cannot be made says nothing
        return


def _out_of_memory(job: J.SimJob, result: J.SimResult) -> None:
    result.status = J.CRASHED
    result.error = (f"out of memory under the worker's limit of {job.memory_limit_mb} MB (pass-verify's memory grows "
                    "with the loop's iterations; --memory-mb raises the cap)")
    result.reason = _in_trial(job, result, result.error)


def _release_memory(collect: bool = True) -> None:
    """Between trials, hand the finished trial's memory back before the next one allocates its own:
    its tensors, the interpreter's garbage cycles, and the heap pages glibc keeps. KernelBench
    level-1 task 85 passed its first trial at 7.2 GB and ran out of a 10.5 GB cap in its second."""
    import ctypes
    import gc

    if collect:
        gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: the collector's work is all there is
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _in_trial(job: J.SimJob, result: J.SimResult, reason: str) -> str:
    """The failure's own reason, naming the trial when an earlier one finished. Without it the
    reason left by a passing first trial ("all 838656 elements within atol ...") stood for a second
    trial that ran out of memory (KernelBench level-1 task 85, measured)."""
    done = result.trials_run or 0
    return f"trial {done + 1} of {job.trials}: {reason}" if done and job.trials > 1 else reason


def _read_cost(job: J.SimJob, work: Path, result: J.SimResult) -> None:
    clock = job.cycles_per_us or swim.DEFAULT_CYCLES_PER_US
    summaries = [swim.read_swim(p, clock) for p in swim.find_swim_files(work / "out")]
    if not summaries:
        return
    result.kernels = [s.to_dict() for s in summaries]
    result.e2e_us = round(sum(s.e2e_us for s in summaries), 4)
    result.cycles = sum(s.cycles for s in summaries)
    result.tasks = sum(s.tasks for s in summaries)
    lanes_span = sum(s.lanes * s.cycles for s in summaries)
    busy = sum(s.utilisation * s.lanes * s.cycles for s in summaries)
    result.utilisation = round(busy / lanes_span, 6) if lanes_span else 0.0


PERTURBATIONS = 2
"""Float64 forwards with the inputs moved by half an fp32 ulp, after a failed comparison: at KernelBench level-3
ResNet18's end-to-end size, seeds 0-3 moved 0, 1, 10 and 9 of 256 outputs of its first two layers past the
tolerance (torch's own fp32 forward: 4, 3, 13, 9), so one draw can miss what two seldom do."""


def _say_if_ill_conditioned(torch: Any, job: J.SimJob, model: Any, inputs: list[Any], want: Any,
                            result: J.SimResult) -> None:
    """A failed comparison: can any fp32 computation be judged at these shapes? Against the Model's own
    float64 forward on the same inputs, the baseline's fp32 output, and float64 forwards on inputs moved by
    half an fp32 ulp (PERTURBATIONS of them): where one of them is outside the tolerance, the shapes are
    ill-conditioned (KernelBench level-3 ResNet18 at x (2, 3, 3, 3): training-mode batch norms over the 2
    values of a channel), said in `divergence`, which the report's reason carries. The verdict stays a
    fail: this only says why, and runs only after a failure."""
    import copy

    from pypto_tui.sim.compare import compare

    def widened(xs: list[Any], nudge: bool) -> list[Any]:
        out = []
        for x in xs:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                x = x.double()
                if nudge:
                    x = x * (1 + torch.randn(x.shape, dtype=torch.float64).sign() * 2.0 ** -24)
            out.append(x)
        return out

    try:
        wide = copy.deepcopy(model).double()
        wants = [_to_numpy(torch, w) for w in _as_list(want)]
        with torch.no_grad():
            exact = [e.detach().numpy() for e in _as_list(wide(*widened(inputs, False)))]
            sides = [("its fp32 output", [w for w, _ in wants])]
            with torch.random.fork_rng(devices=[]):  # the nudges draw from a generator of their own
                torch.manual_seed(job.seed)
                for _ in range(PERTURBATIONS):
                    moved = [e.detach().numpy() for e in _as_list(wide(*widened(inputs, True)))]
                    sides.append(("its fp64 forward on inputs moved by half an fp32 ulp", moved))
        for what, arrays in sides:
            for (w_np, w_name), got, ref in zip(wants, arrays, exact, strict=True):
                verdict = compare(got.astype(w_np.dtype), ref.astype(w_np.dtype), dtype=w_name, actual_dtype=w_name,
                                  tolerances=job.tolerances)
                if not verdict.passed:  # said beside the diagnosis of where it diverges (finish_verify adds it)
                    note = (f"the baseline itself is ill-conditioned at these shapes: {what} against its own fp64 "
                            f"forward: {verdict.reason}")
                    result.divergence = f"{result.divergence}; {note}" if result.divergence else note
                    return
    except Exception:  # a model that cannot run in float64 says nothing here
        return


def _compare(torch: Any, job: J.SimJob, got: Any, want: Any, result: J.SimResult) -> None:
    """Compare one trial's outputs; `result.outputs` keeps, per output, the worst trial so far."""
    from pypto_tui.sim.compare import compare

    gots, wants = _as_list(got), _as_list(want)
    if len(gots) != len(wants):
        result.status, result.passed = J.MISMATCH, False
        result.reason = f"ModelNew returned {len(gots)} output(s), Model returned {len(wants)}"
        return
    verdicts = []
    for g, w in zip(gots, wants, strict=True):
        g_np, g_name = _to_numpy(torch, g)
        w_np, w_name = _to_numpy(torch, w)
        verdicts.append(compare(g_np, w_np, dtype=w_name, actual_dtype=g_name, tolerances=job.tolerances).to_dict())
    if result.outputs and len(result.outputs) == len(verdicts):
        verdicts = [_worse(old, new) for old, new in zip(result.outputs, verdicts, strict=True)]
    result.outputs = verdicts
    result.passed = all(v["passed"] for v in verdicts)
    result.status = J.OK if result.passed else J.MISMATCH
    bad = [f"output {i}: {v['reason']}" for i, v in enumerate(verdicts) if not v["passed"]]
    result.reason = "; ".join(bad) if bad else verdicts[0]["reason"] if verdicts else None


def _worse(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if a.get("passed") != b.get("passed"):
        return b if not b.get("passed") else a
    return b if (b.get("max_abs_err") or 0.0) > (a.get("max_abs_err") or 0.0) else a


def _check_get_inputs(torch: Any, task: Any) -> None:
    """The task's get_inputs() must run: a task whose inputs cannot be built is an error, never a
    pass. It runs on the meta device (shapes and dtypes without memory: KernelBench's inputs reach
    gigabytes); a failure that only the meta device causes (an operation meta tensors lack) proves
    nothing and is ignored."""
    fn = getattr(task, "get_inputs", None)
    if fn is None:
        raise _TaskInputsFailed("the task file defines no get_inputs()")
    try:
        with torch.device("meta"):
            fn()
    except Exception as exc:
        if isinstance(exc, NotImplementedError | TypeError | RuntimeError) and "meta" in str(exc).lower():
            return
        raise _TaskInputsFailed(f"get_inputs() raised {_describe(exc)}") from exc


class _TaskInputsFailed(Exception):
    """The task's own get_inputs() failed: the task is broken, whatever the kernel does."""


def run_job(job: J.SimJob) -> J.SimResult:
    """Run one job in *this* process (which must not be reused afterwards for another kernel).
    A work dir given by the runner is the runner's to delete (it reads the pass checks there
    after this process exits); one made here is deleted here."""
    t0 = time.perf_counter()
    result = J.SimResult(kind=job.kind, status=J.ERROR, label=job.label)
    own_dir = not job.work_dir
    work = Path(job.work_dir) if job.work_dir else Path(tempfile.mkdtemp(prefix="pypto-tui-sim-"))
    try:
        point_env_at(work)
        if job.kind == "verify":
            limit_memory(job.memory_limit_mb)
        with silenced_fds(work / NOISE_FILE):
            try:
                _execute(job, work, result)
            except Exception as exc:  # a failure of ours, not the kernel's: still answer
                result.status, result.error = J.ERROR, f"the worker failed: {_describe(exc)}"
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
    result.peak_rss_mb, result.peak_vm_mb = _peak_memory_mb()
    result.wall_s = round(time.perf_counter() - t0, 3)
    return result


def write_result(path: Path, result: J.SimResult) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result.to_json()), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m pypto_tui.sim.worker JOB.json RESULT.json", file=sys.stderr)
        return 2
    job_path, result_path = Path(args[0]), Path(args[1])
    try:
        job = J.SimJob.from_json(json.loads(job_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        write_result(result_path, J.SimResult(kind="?", status=J.ERROR, error=f"bad job file: {exc}"))
        return 0
    # The kernel module and the task file are code: what they start ends with this process, and
    # if the tool that started us dies, the work folders it would have removed go with us.
    guard_task_runner(cleanup=[Path(job.work_dir), job_path.parent] if job.work_dir else [job_path.parent])
    if job.step == J.COMPARE_STEP:
        try:
            prior = J.SimResult.from_json(json.loads(result_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            prior = J.SimResult(kind=job.kind, status=J.ERROR, error=f"no kernel result to compare: {exc}")
        write_result(result_path, run_compare(job, prior) if prior.status == J.RAN else prior)
        return 0
    write_result(result_path, run_job(job))
    return 0


if __name__ == "__main__":
    sys.exit(main())
