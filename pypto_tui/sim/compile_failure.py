"""A compile failure's one line: which kernel of the module, what the compiler said, and what the
pack knows that message to mean (verify.toml `[compile_error.*]`, each with its measurement).

The compiler's own text names neither the kernel nor a cause a kernel author can act on
(`F7A001! idx < size_`, after minutes of compiling a seven-kernel module), so the verdict adds both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypto_tui.kb import VerifyCriteria

_MODULE_KERNEL = re.compile(r"_K(\d+)(?:\.|$)")
"""A composed module suffixes kernel i's top-level names with `_K<i>` (codegen/compose.py); the jit
function is nested in its factory, so its qualified name carries it (`create_x_K1.<locals>.x`)."""


def which_kernel(failed: Mapping[str, Any] | None, designs: Sequence[Mapping[str, Any]]) -> str:
    """'kernel 1 (max_pool2d, sum; jit `pool_kernel_K1`, module line 88)' or, for a one-kernel module,
    'the kernel (jit `softmax_kernel`, module line 40)'; "" when the launch that failed is unknown."""
    if not failed:
        return ""
    name, line = str(failed.get("name", "kernel")), failed.get("line")
    where = f"jit `{name}`" + (f", module line {line}" if line else "")
    found = _MODULE_KERNEL.search(str(failed.get("qualname") or name))
    if found and designs:
        index = int(found.group(1))
        ops = next((str(d.get("ops", "")) for d in designs if d.get("kernel") == index), "")
        return f"kernel {index} ({ops}; {where})" if ops else f"kernel {index} ({where})"
    return f"the kernel ({where})"


def describe(reason: str, failed: Mapping[str, Any] | None, designs: Sequence[Mapping[str, Any]],
             known: VerifyCriteria | None) -> str:
    """The verdict's reason for a kernel the compiler refused."""
    who = which_kernel(failed, designs)
    head = f"{who} failed to compile: {reason}" if who else reason
    entry = known.explain_compile_error(reason) if known is not None else None
    return f"{head}. That means {entry.explain()}" if entry is not None else head
