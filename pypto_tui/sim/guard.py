"""Only kernels compute: what a module's `forward` may do outside its kernel launches.

A verification compares the kernel module's output with torch's, so a `forward` that computes the
answer in torch (all of it, or one stage of a chain, or a fix-up after a kernel ran) passes every
comparison while the kernels did not do the work. While `forward` runs in the worker, `Guard`:

- records every torch operation performed outside a kernel launch, with a dispatch-level mode
  (`TorchDispatchMode`: it sees what really runs, e.g. a `reshape` that copies because its input is
  not contiguous, and tells views from copies) and a function-level one for what the dispatcher
  never sees (`numpy()`, `tolist()`, `data_ptr()`: data leaving torch, to be computed elsewhere).
  Allocation (`empty`, `zeros`, `empty_like`, ...), views and reshapes that stay views, and shape
  queries are allowed; any computation or copy of data (`add`, `mm`, `softmax`, `copy_`, `clone`,
  `_to_copy`, ...) is a failure that names the operation and the line of the module's source
  (measured with torch 2.13 CPU: `x.T.contiguous()` dispatches permute + clone, `x.contiguous()` on a
  contiguous tensor and `x.float()` on a float32 one dispatch nothing; `torch.zeros` is one
  `aten.zeros` call; torch measured in tests/sim/test_guard.py);
- counts the launches of every jit kernel the module defines (`jit_kernels`): each must run;
- keeps, after each launch, the memory the kernel wrote as its output (pypto's own list of the
  function's outputs, `Function.outcast`, not every tensor handed to it: a tensor computed in torch
  and handed to a kernel as an input is still torch's) and a copy of its contents;
- checks that each output `forward` returns lies in memory a kernel wrote as its output and was not
  changed after that kernel wrote it (`copy_` into the buffer, or a write through numpy).

The modes are off inside a launch: what pypto does there (its own torch calls, the interpreter's
libtorch calculator) is the kernel's work. The guard runs in the process that imported the module,
so a module that sets out to defeat it (patching torch or this module at import) can; the
comparison with the baseline runs in another process that never imported it (worker.py).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ALLOCATE = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "zero_",
})
"""Fresh memory (filled with a constant at most): no data of the inputs reaches it."""

VIEWS = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "permute", "t", "transpose", "expand", "squeeze",
    "unsqueeze", "slice", "select", "narrow", "as_strided", "diagonal", "detach", "alias", "unbind", "split",
    "split_with_sizes", "chunk", "unfold", "view_as_real", "view_as_complex", "movedim", "expand_as", "view_as",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "is_same_size",
})
"""Another look at the same memory, or a question about its shape: nothing is computed."""

LEAVES_TORCH = frozenset({"numpy", "tolist", "__array__", "data_ptr", "untyped_storage", "storage", "item"})
"""Tensor methods that hand the data to something torch does not see (numpy, Python, raw memory)."""


@dataclass(frozen=True, slots=True)
class Outside:
    """One operation forward performed outside a kernel launch."""

    op: str
    line: int | None
    kind: str  # "computes or copies" | "reads the data out of torch"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "line": self.line, "kind": self.kind}

    def describe(self) -> str:
        where = f" at line {self.line} of the module" if self.line else ""
        return f"{self.op}{where} ({self.kind})"


def jit_kernels(source: str) -> list[tuple[str, int]]:
    """(name, first line) of every function the module decorates with a `jit` (`@pypto.frontend.jit`,
    `@jit(...)`): the kernels it can launch. The first line is the first decorator's, as Python's
    `co_firstlineno` says it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name == "jit":
                found.append((node.name, min([d.lineno for d in node.decorator_list] + [node.lineno])))
                break
    return sorted(found, key=lambda k: k[1])


def _op_name(func: Any) -> str:
    packet = getattr(func, "_overloadpacket", None)
    return str(getattr(packet, "__name__", None) or getattr(func, "__name__", str(func)))


@dataclass
class _Region:
    """Memory a kernel wrote as its output: a view of it as the kernel saw it, and a copy."""

    storage: int
    start: int
    end: int
    view: Any
    copy: Any
    kernel: str


def _span(t: Any) -> tuple[int, int, int]:
    """(storage address, first byte, one past the last byte) of a tensor's elements."""
    size = t.element_size()
    extent = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) if t.numel() else 0
    start = t.storage_offset() * size
    return int(t.untyped_storage().data_ptr()), start, start + extent * size


class Guard:
    """Watches one `forward` call. `files[0]` is the module's file (the lines named are its)."""

    def __init__(self, torch: Any, files: tuple[str, ...], kernels: list[tuple[str, int]]) -> None:
        self.torch = torch
        self.files = files
        self.kernels = kernels
        self.outside: list[Outside] = []
        self.launches: dict[tuple[str, int], int] = {}
        self.regions: list[_Region] = []
        self.unreadable: list[str] = []
        self._depth = 0

    # --- what forward does ---------------------------------------------------------------------

    def _line(self) -> int | None:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.files[0]:
                return frame.f_lineno
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def _note(self, op: str, kind: str) -> None:
        if len(self.outside) < 50:
            found = Outside(op, self._line(), kind)
            if found not in self.outside:
                self.outside.append(found)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Record what runs outside the kernels until the block ends."""
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        guard = self

        class Dispatch(TorchDispatchMode):  # type: ignore[no-untyped-call]
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                # Else torch wraps __torch_dispatch__ in a dynamo guard whose first call imports
                # torch._dynamo: measured 2.5-3 s of a small verify's 5 s on a loaded 2-core machine.
                return False

            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                name = _op_name(func)
                if not (name in ALLOCATE or name in VIEWS or (name == "fill_" and "Scalar" in str(func))):
                    guard._note(f"aten.{name}", "computes or copies")
                return func(*args, **(kwargs or {}))

        class Function(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                name = getattr(func, "__name__", "")
                if name in LEAVES_TORCH:
                    guard._note(f"Tensor.{name}", "reads the data out of torch")
                return func(*args, **(kwargs or {}))

        with Function(), Dispatch():  # type: ignore[no-untyped-call]
            yield

    # --- the launches --------------------------------------------------------------------------

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """The modes off for the block: what runs there is the kernel's, or ours."""
        from torch._C import _len_torch_function_stack
        from torch.overrides import _pop_mode_temporarily
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes(), _functions_off(_pop_mode_temporarily, _len_torch_function_stack):
            yield

    def launch(self, wrapper: Any, args: tuple[Any, ...], run: Callable[[], Any]) -> Any:
        """Run one kernel launch with the modes off; then keep what it wrote as its outputs."""
        with self.quiet():
            out = run()
            self._after(wrapper, args)
        return out

    def _after(self, wrapper: Any, args: tuple[Any, ...]) -> None:
        fn = getattr(wrapper, "_original_func", None)
        code = getattr(fn, "__code__", None)
        key = (getattr(fn, "__name__", "kernel"), int(getattr(code, "co_firstlineno", 0)))
        self.launches[key] = self.launches.get(key, 0) + 1
        written = kernel_outputs(wrapper)
        if written is None:
            self.unreadable.append(key[0])
            return
        for i in written:
            t = args[i] if i < len(args) else None
            if not isinstance(t, self.torch.Tensor):
                continue
            ptr, start, end = _span(t)
            # A later launch that writes the same memory is what counts there now.
            self.regions = [r for r in self.regions if not (r.storage == ptr and r.start < end and start < r.end)]
            self.regions.append(_Region(ptr, start, end, t, t.detach().clone(), key[0]))

    # --- the verdict ---------------------------------------------------------------------------

    def not_run(self) -> list[tuple[str, int]]:
        """The module's jit kernels that never launched."""
        return [k for k in self.kernels if k not in self.launches]

    def problem(self, got: Any) -> str | None:
        """Why this forward call is not the kernels' work (None when it is)."""
        if self.outside:
            first = self.outside[0]
            more = f" (and {len(self.outside) - 1} more)" if len(self.outside) > 1 else ""
            return (f"forward computes outside the kernels: {first.describe()}{more}; only allocation, views and "
                    "kernel launches may run there, so the output would not be the kernels' work")
        missing = self.not_run()
        if missing:
            names = ", ".join(f"{n} (line {line})" for n, line in missing)
            return (f"{len(self.launches)} of {len(self.kernels)} kernels ran: {names} never launched, so the "
                    "module's plan was not what produced the output")
        outs = list(got) if isinstance(got, list | tuple) else [got]
        for i, t in enumerate(outs):
            why = self._output_problem(t)
            if why:
                return f"output {i} {why}"
        return None

    def _output_problem(self, t: Any) -> str | None:
        torch = self.torch
        if not isinstance(t, torch.Tensor):
            return f"is not a tensor ({type(t).__name__}): forward must return what its kernels wrote"
        ptr, start, end = _span(t)
        mine = sorted((r for r in self.regions if r.storage == ptr and r.start < end and start < r.end),
                      key=lambda r: r.start)
        covered = start
        for r in mine:
            if r.start > covered:
                break
            covered = max(covered, r.end)
        if covered < end:
            if self.unreadable:
                return (f"cannot be traced to a kernel: pypto did not say which arguments "
                        f"{', '.join(sorted(set(self.unreadable)))} writes")
            return ("was written by no kernel as its output: forward returned a tensor computed outside the kernels "
                    "(torch, or an input, or a tensor handed to a kernel to read), so the kernels' own result was "
                    "never compared")
        for r in mine:
            if not _same(torch, r.view, r.copy):
                return (f"was changed after kernel {r.kernel} wrote it (outside any kernel: a copy into the buffer "
                        "or a write through numpy), so it is not the kernel's result")
        return None


def _same(torch: Any, a: Any, b: Any) -> bool:
    """Equal element for element, NaN where NaN (bitwise would do too, but not for every dtype's view)."""
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


@contextmanager
def _functions_off(pop: Any, depth: Any) -> Iterator[None]:
    """The torch-function modes off (all of them, restored in order) for the block."""
    if depth() == 0:
        yield
        return
    with pop() as _mode, _functions_off(pop, depth):
        yield


def kernel_outputs(wrapper: Any) -> list[int] | None:
    """The positions of the tensor arguments pypto's compiled function writes (its `outcast`, by
    name against the jit signature), or None when pypto does not say."""
    try:
        defs = wrapper._cached_signature[0]
        names = [d.name for d in defs]
        out = {t.GetName() for t in wrapper._pto_function.outcast}
    except Exception:
        return None
    return [i for i, n in enumerate(names) if n in out]
