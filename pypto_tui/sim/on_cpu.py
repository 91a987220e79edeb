"""An exported kernel module on a machine without an NPU: right values, or a clear error.

pypto 0.2.0 runs a jit kernel in SIM mode when CANN is absent (ASCEND_HOME_PATH unset). SIM
times the kernel with the cost model and computes no outputs, so `ModelNew(...)(*inputs)` would
return the uninitialised output tensor (measured: max abs error 4e31), silently, after writing an
`output/` folder into the working directory. A module pypto-tui exports hands each kernel to
`sim_mode_kernel` when it runs in SIM mode (see the pack's module.py.tmpl), and every call then
either computes the right values or raises:

- `PYPTO_TUI_INTERPRET=1`: the outputs are computed by pypto's interpreter on the CPU, with the
  same two workarounds `pypto-tui verify` uses (the CopyToHost shim and the calculator library,
  built once per machine; shim.py). Everything pypto writes goes to a private temp folder that is
  deleted after the call. Only the interpreter's first stage runs (pass filter []): this computes
  values, it does not verify the compiler; `pypto-tui verify TASK --kernel FILE` does that.
- otherwise the call raises SimModeError, saying both ways forward, before pypto writes anything.

Inside pypto-tui's own worker (`PYPTO_TUI_WORKER=1`, set by worker.py) the kernel runs as
written: the worker sets up SIM and verification itself.

Why this lives in the package and the template only calls it: the interpreter path reaches into
pypto internals, is guarded to pypto 0.2.0, may build a C++ library and must be tested with the
rest of the shim; the NPU path needs none of it, so an exported module imports this only in SIM
mode. Importing this module is cheap (pypto and torch are imported on the first call).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from pypto_tui.sim.fds import silenced_fds

INTERPRET_ENV = "PYPTO_TUI_INTERPRET"
WORKER_ENV = "PYPTO_TUI_WORKER"
OUTPUT_DIR_ENV = "TILE_FWK_OUTPUT_DIR"
INTERPRETER_OPTIONS = {"enable_pass_verify": True, "pass_verify_pass_filter": []}

_lock = threading.Lock()  # the output-dir variable and pypto's verify options are process-wide


class SimModeError(RuntimeError):
    """A kernel was called in SIM mode, which would return uninitialised memory."""


def refusal(kernel: str) -> str:
    return (f"{kernel}: no NPU here (ASCEND_HOME_PATH is unset), so pypto runs in SIM mode, which times the kernel "
            f"but computes no output values. Set {INTERPRET_ENV}=1 to compute them with pypto's interpreter on "
            "the CPU (slow), or check the kernel against its task with "
            "`pypto-tui verify TASK --kernel THIS_FILE`.")


def sim_mode_kernel(kernel: Any) -> Any:
    """What a module calls instead of `kernel` in SIM mode (the kernel itself in our worker)."""
    if os.environ.get(WORKER_ENV) == "1":
        return kernel
    return SimModeKernel(kernel)


class SimModeKernel:
    """A jit kernel that, called in SIM mode, interprets (opt-in) or refuses. The switch is read
    at every call, so setting it after the module was imported works."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.__name__ = getattr(kernel, "__name__", "kernel")
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if os.environ.get(INTERPRET_ENV) != "1":
            raise SimModeError(refusal(self.__name__))
        interpret(self.kernel, args, kwargs)


def interpret(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Run one jit kernel call through pypto's interpreter; the out tensors receive its values."""
    from pypto_tui.sim import shim, stages

    shim.ensure_supported_pypto()
    import pypto

    if not hasattr(kernel, "_verify_options"):
        raise SimModeError(f"{kernel!r} is not a pypto 0.2.0 jit kernel: cannot interpret it")
    if not shim.calculator_ready():
        print(f"pypto-tui: {stages.ONE_TIME_NOTE}", file=sys.stderr, flush=True)
    with _lock, tempfile.TemporaryDirectory(prefix="pypto-tui-interpret-") as tmp:
        saved_dir, saved_options = os.environ.get(OUTPUT_DIR_ENV), kernel._verify_options
        os.environ[OUTPUT_DIR_ENV] = tmp
        kernel._verify_options = dict(INTERPRETER_OPTIONS)
        try:
            # The calculator's CMake build, pypto's C++ side and its helper scripts print pages of
            # output (and tracebacks for plotting libraries it does not need): keep the caller's
            # terminal clean. Errors still arrive as Python exceptions.
            with silenced_fds(Path(tmp) / "pypto-output.log"):
                shim.ensure_calculator()
                shim.install_copy_to_host_shim()
                kernel(*args, **kwargs)
        finally:
            kernel._verify_options = saved_options
            pypto.set_verify_options(enable_pass_verify=False)
            if saved_dir is None:
                os.environ.pop(OUTPUT_DIR_ENV, None)
            else:
                os.environ[OUTPUT_DIR_ENV] = saved_dir
