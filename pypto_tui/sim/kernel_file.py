"""A kernel module from disk, read statically before anything runs it.

`pypto-tui verify TASK --kernel FILE` checks any module that follows the KernelBench convention:
it defines `ModelNew`, built with `Model`'s init arguments and called like `Model`. The file is
untrusted until the user's verify runs it in the worker, so here it is only parsed (with a size
bound): it must be Python, define a top-level `ModelNew` class whose `__init__` can take the
task's init arguments, and it may declare the design constants pypto-tui exports
(`TILE_SHAPE = (...)`, `LOOP_COUNT = n`), which choose test shapes that keep them meaningful.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from pypto_tui.errors import InputError

MAX_KERNEL_BYTES = 1 << 20


@dataclass(frozen=True)
class KernelFile:
    path: Path
    source: str
    tile: tuple[int, ...] | None      # TILE_SHAPE, when the module declares one
    loop_count: int | None            # LOOP_COUNT, when the module declares one
    constants: dict[str, object] = field(default_factory=dict)  # every module-level NAME = literal


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _constants(tree: ast.Module) -> dict[str, object]:
    """Top-level `NAME = literal` assignments (a value that is no literal is left out)."""
    out: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _literal(stmt.value)
            if value is None:
                out.pop(stmt.targets[0].id, None)  # rebound to something else: no longer a known constant
            else:
                out[stmt.targets[0].id] = value
    return out


def module_constants(source: str) -> dict[str, object]:
    """A module's top-level `NAME = literal` constants (a generated module's per-kernel tiles)."""
    try:
        return _constants(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}


def _init_arity(cls: ast.ClassDef) -> tuple[int, int | None]:
    """(required, most) positional arguments ModelNew(...) accepts; most None = unbounded."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return 0, None  # inherited: cannot tell statically
    a = init.args
    params = [*a.posonlyargs, *a.args][1:]  # minus self
    required = len(params) - len(a.defaults)
    return max(required, 0), None if a.vararg else len(params)


def read_kernel_file(path: Path, init_args: int) -> KernelFile:
    """Parse `path` and check it can stand in for the task's Model with `init_args` arguments."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such kernel file {p}: give the module that defines ModelNew")
    if not p.is_file():
        from pypto_tui.fileio import require_file

        require_file(p, "kernel file")  # says what it is: a folder, a character device, a FIFO...
    if p.stat().st_size > MAX_KERNEL_BYTES:
        raise InputError(f"{p} is over {MAX_KERNEL_BYTES // 1024} KB: is it a kernel module?")
    try:
        source = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{p} is not UTF-8 text: give a Python module") from None
    try:
        tree = ast.parse(source, filename=str(p))
    except SyntaxError as exc:
        raise InputError(f"{p}:{exc.lineno}: not valid Python ({exc.msg}): fix the module first") from None
    cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "ModelNew"), None)
    if cls is None:
        raise InputError(f"{p} defines no class ModelNew: a kernel module defines ModelNew with Model's __init__ "
                         "signature (the KernelBench convention)")
    required, most = _init_arity(cls)
    if init_args < required or (most is not None and init_args > most):
        raise InputError(f"{p}: ModelNew.__init__ takes {required}" + ("" if most == required else f" to {most}")
                         + f" argument(s) but the task's Model is built with {init_args}: give ModelNew Model's "
                         "__init__ signature")
    consts = _constants(tree)
    tile = consts.get("TILE_SHAPE")
    loop = consts.get("LOOP_COUNT")
    tile_ok = isinstance(tile, tuple | list) and bool(tile) and all(
        isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in tile)
    loop_ok = isinstance(loop, int) and not isinstance(loop, bool) and loop > 0
    return KernelFile(p, source, tuple(tile) if tile_ok else None, loop if loop_ok else None,  # type: ignore[arg-type]
                      consts)
