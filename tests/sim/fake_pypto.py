"""A stand-in for pypto's jit, to run a kernel module's `forward` under the guard (sim/guard.py) in
milliseconds and without the compiler: each jit kernel becomes a `FakeKernel` that says, as pypto's
compiled function does (`Function.outcast`), which arguments it writes (here: those named out...),
and computes them with `compute` (torch, inside the launch, where torch is the kernel's) or leaves
them as they are."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pypto_tui.sim.guard import Guard, jit_kernels


class _Anything:
    """Any attribute, call or index: the annotations and constants a module reads from pypto."""

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __call__(self, *a: Any, **k: Any) -> _Anything:
        return _Anything()

    def __getitem__(self, key: Any) -> _Anything:
        return _Anything()


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name

    def GetName(self) -> str:  # pypto's spelling
        return self.name


class FakeKernel:
    guard: Guard | None = None
    compute: Callable[[str, dict[str, Any]], None] | None = None

    def __init__(self, func: Callable[..., Any]) -> None:
        self._original_func = func
        params = list(inspect.signature(func).parameters)
        self._cached_signature = ([_Named(p) for p in params], [])
        self._pto_function = types.SimpleNamespace(outcast=[_Named(p) for p in params if p.startswith("out")])
        self.params = params

    def __call__(self, *args: Any) -> None:
        def run() -> None:
            if FakeKernel.compute is not None:
                FakeKernel.compute(self._original_func.__name__, dict(zip(self.params, args, strict=False)))

        if FakeKernel.guard is not None:
            FakeKernel.guard.launch(self, args, run)
        else:
            run()


def fake_pypto() -> types.ModuleType:
    mod = types.ModuleType("pypto")
    def anything(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    mod.__getattr__ = anything  # type: ignore[method-assign]
    frontend = types.ModuleType("pypto.frontend")

    def jit(func: Any = None, **kw: Any) -> Any:
        return FakeKernel(func) if func is not None else FakeKernel

    frontend.jit = jit  # type: ignore[attr-defined]
    mod.frontend = frontend  # type: ignore[attr-defined]
    return mod


@contextmanager
def faked(monkeypatch: Any) -> Iterator[None]:
    """pypto replaced by the fake for the block; the module's kernels are its own (worker mode)."""
    monkeypatch.setitem(sys.modules, "pypto", fake_pypto())
    monkeypatch.setenv("PYPTO_TUI_WORKER", "1")
    monkeypatch.setenv("AIKG_PYPTO_RUN_MODE", "1")
    yield


def run_guarded(torch: Any, path: Path, init_args: list[Any], inputs: list[Any],
                compute: Callable[[str, dict[str, Any]], None] | None = None) -> tuple[Guard, Any, Any]:
    """Import the module at `path` (pypto faked by the caller), run ModelNew(*init_args)(*inputs)
    under a guard, and return the guard, forward's result and the module."""
    import importlib.util

    name = f"guarded_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.ModelNew(*init_args)
    guard = Guard(torch, (str(path),), jit_kernels(path.read_text(encoding="utf-8")))
    FakeKernel.guard, FakeKernel.compute = guard, compute
    try:
        with torch.no_grad(), guard.watching():
            got = model(*inputs)
    finally:
        FakeKernel.guard, FakeKernel.compute = None, None
    return guard, got, model
