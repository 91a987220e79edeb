"""Workarounds that make pypto 0.2.0's verify interpreter usable on a CPU-only host.

Two problems, both measured (research note pypto-0.2.0-cpu.md, sections 0.1, 0.2 and 2.2):

1. Without CANN, `pypto_impl.CopyToHost` is a no-op. With pass-verify on, the jit wrapper copies
   the inputs into zero-filled host tensors with it, so the interpreter computes on zeros and the
   caller's input tensor is overwritten with zeros. On a CPU the "device" memory *is* host
   memory, so a memcpy is the correct implementation. The jit wrapper looks the name up on the
   module at call time, so rebinding the module attribute is enough.
2. The interpreter needs `libtile_fwk_calculator.so`, which pypto builds with CMake against the
   installed torch in a temp dir, once per process (~30 s). We build it once into a persistent
   cache folder (under a file lock, so parallel workers do not build it twice), load it with
   RTLD_GLOBAL and tell pypto's BuildOnlineManager it is loaded.

Both reach into pypto internals, so both refuse to run on anything but pypto 0.2.0.
Everything imports pypto/torch lazily: importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.metadata
import math
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_tui.sim.availability import SUPPORTED_PYPTO, UnsupportedPypto
from pypto_tui.sim.cache import cache_root

CALCULATOR_LIB = "install/lib/libtile_fwk_calculator.so"
_DONE_MARKER = "BUILD_OK"

_state: dict[str, Any] = {}


def pypto_version() -> str | None:
    """The installed pypto distribution's version (pypto 0.2.0 has no `__version__`)."""
    try:
        return importlib.metadata.version("pypto")
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_supported_pypto() -> str:
    """Return the version, or raise `UnsupportedPypto` if it is not 0.2.0."""
    v = pypto_version()
    if v != SUPPORTED_PYPTO:
        raise UnsupportedPypto(
            f"the CPU workarounds were checked against pypto {SUPPORTED_PYPTO} only, "
            f"found {v or 'no pypto'}: pip install 'pypto=={SUPPORTED_PYPTO}'"
        )
    return v


# --- 1. CopyToHost -------------------------------------------------------------------------


def _capsule_address(data: Any) -> int:
    """`DeviceTensorData.GetDataPtr()` returns an unnamed PyCapsule in 0.2.0; unwrap it."""
    p = data.GetDataPtr()
    if isinstance(p, int):
        return p
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    addr = get(p, None)
    if not addr:
        raise RuntimeError("CopyToHost shim: null data pointer")
    return int(addr)


def install_copy_to_host_shim() -> None:
    """Replace `pypto_impl.CopyToHost` with a memcpy (idempotent). Refuses on pypto != 0.2.0."""
    ensure_supported_pypto()
    import pypto
    from pypto import pypto_impl

    if _state.get("copy_shim") is not None and pypto_impl.CopyToHost is _state["copy_shim"]:
        return

    def copy_to_host(dev: Any, host: Any) -> None:
        nbytes = math.prod(dev.GetShape()) * pypto.bytes_of(dev.GetDataType())
        if nbytes:
            ctypes.memmove(_capsule_address(host), _capsule_address(dev), nbytes)

    _state.setdefault("copy_orig", pypto_impl.CopyToHost)
    _state["copy_shim"] = copy_to_host
    pypto_impl.CopyToHost = copy_to_host


# --- 2. The calculator library -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CalculatorInfo:
    """Where the library is, whether this call had to build it, and how long that took."""

    path: Path
    built: bool
    build_s: float


def calculator_dir(torch_version: str | None = None) -> Path:
    """`<cache root>/calculator/<torch version>`: the library is built against that torch."""
    if torch_version is None:
        torch_version = importlib.metadata.version("torch")
    safe = torch_version.replace("/", "_")
    return cache_root() / "calculator" / safe


def calculator_ready(folder: Path | None = None) -> bool:
    """Whether the calculator is already built (so a verify will not spend minutes on it)."""
    try:
        folder = Path(folder) if folder is not None else calculator_dir()
    except Exception:
        return False
    return (folder / _DONE_MARKER).exists()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive fcntl lock; a second worker waits here while the first one builds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _build_calculator(folder: Path) -> None:
    """The same CMake build pypto does per process, into `folder` instead of a temp dir."""
    from pypto._utils import BuildOnlineManager

    mgr = BuildOnlineManager()
    tctx = BuildOnlineManager._TorchContext()
    cmake = BuildOnlineManager._CMakeContext()
    ctx = BuildOnlineManager._CMakeContext.CompileContext(
        src_dir=Path(mgr.pkg_lib_dir, "calculator"), tmp_dir=folder
    )
    ctx.cfg_cmd_ext = (
        f"-DPY3_MOD_TORCH_VERSION={tctx.torch_version}"
        f" -DPY3_MOD_TORCH_ROOT_PATH={tctx.torch_root_dir}"
        f" -DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={tctx.torch_c_use_cxx11_abi}"
    )
    cmake.compile(ctx=ctx)


def ensure_calculator(folder: Path | None = None) -> CalculatorInfo:
    """Build the calculator once into `folder` (default `calculator_dir()`), load it, and mark
    pypto's BuildOnlineManager as loaded so the jit wrapper skips its own per-process build."""
    ensure_supported_pypto()
    import torch  # noqa: F401  (the library links against the already-loaded libtorch)
    from pypto._utils import BuildOnlineManager

    folder = Path(folder) if folder is not None else calculator_dir()
    lib = folder / CALCULATOR_LIB
    built, build_s = False, 0.0
    mgr = BuildOnlineManager()
    if mgr.calculator_loaded:
        return CalculatorInfo(lib, False, 0.0)
    if not (folder / _DONE_MARKER).exists():
        with _file_lock(folder.with_name(folder.name + ".lock")):
            if not (folder / _DONE_MARKER).exists():  # another worker may have built it meanwhile
                t0 = time.perf_counter()
                # Build beside the final folder and rename it into place when complete, so the
                # cache never holds a half-built library under its real name.
                staging = folder.with_name(f".{folder.name}.building-{os.getpid()}")
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir(parents=True)
                try:
                    _build_calculator(staging)
                    if not (staging / CALCULATOR_LIB).exists():
                        raise RuntimeError(f"calculator build produced no {CALCULATOR_LIB}")
                    shutil.rmtree(staging / "build", ignore_errors=True)  # only install/ is needed
                    (staging / _DONE_MARKER).write_text("ok\n")
                    if folder.exists():
                        shutil.rmtree(folder)  # an unfinished build from an older layout
                    os.rename(staging, folder)
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
                built, build_s = True, time.perf_counter() - t0
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    mgr.calculator_loaded = True
    return CalculatorInfo(lib, built, build_s)
