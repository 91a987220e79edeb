"""Bounds on the Python source the static reader parses (task files, kernel modules, templates).

libcst's parser is native code: 10,000 nested parentheses crash it (a segmentation fault, no
message), and its tree building is quadratic in chains (a 10,000-term `1+1+...` or a 25 MB list
literal runs for minutes). A KernelBench task is a few KB with shallow expressions, so before
libcst sees a file this module checks it with bounds no real task comes near:

- at most `MAX_BYTES` of source;
- Python's own parser accepts it (C code with its own depth guards: it refuses 200 nested
  brackets, and raises RecursionError on a 10,000-deep expression instead of crashing);
- its syntax tree is at most `MAX_DEPTH` deep and `MAX_NODES` large (measured iteratively).

Python's parser costs about a millisecond per 10 KB, so the check is cheap next to libcst.

A kernel module is larger: a whole model's generated module holds hundreds of kernels (ResNet101:
312 kernels, 1.24 MB, 205,443 syntax nodes, linted in 41 s). The linter reads kernel modules up to
`MAX_KERNEL_BYTES` and `MAX_KERNEL_NODES`; the depth bound, which is what keeps libcst from crashing
or going quadratic, is the same for both.
"""

from __future__ import annotations

import ast

from pypto_tui.errors import TaskFileError

MAX_BYTES = 256 * 1024
MAX_DEPTH = 80
MAX_NODES = 150_000
MAX_KERNEL_BYTES = 4 * 1024 * 1024
MAX_KERNEL_NODES = 1_000_000


class SourceTooComplex(TaskFileError):
    """Source beyond what the static reader parses (size, nesting depth, expression size)."""


def check_source(source: str, where: str, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES
                 ) -> SyntaxError | None:
    """Raise SourceTooComplex when `source` is beyond the bounds; return Python's SyntaxError when
    it is not valid Python (each caller reports that its own way: a task file is refused, a kernel
    gets a lint finding); None when libcst may parse it. A kernel module passes the kernel bounds."""
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise SourceTooComplex(f"{where} is {size} bytes: the static reader reads at most {max_bytes} "
                               "(a task file is a few KB); point at a KernelBench task or a kernel module")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        if "too many nested" in (exc.msg or ""):
            raise _too_deep(where, exc.lineno) from None
        return exc
    except (RecursionError, MemoryError):
        raise _too_deep(where, None) from None
    except ValueError as exc:  # null bytes (Python 3.11 raises ValueError, not SyntaxError)
        err = SyntaxError(str(exc))
        err.lineno, err.offset = 1, 1
        return err
    depth, nodes = tree_size(tree)
    if depth > MAX_DEPTH:
        raise _too_deep(where, None, depth)
    if nodes > max_nodes:
        raise SourceTooComplex(f"{where} has {nodes} syntax nodes, more than the {max_nodes} the static "
                               "reader takes; point at a KernelBench task or a kernel module")
    return None


def tree_size(tree: ast.AST) -> tuple[int, int]:
    """(depth, node count) of a syntax tree, without recursion (the tree may be deep)."""
    depth = nodes = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        nodes += 1
        if d > depth:
            depth = d
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return depth, nodes


def _too_deep(where: str, line: int | None, depth: int | None = None) -> SourceTooComplex:
    at = f" (line {line})" if line else ""
    got = f" {depth} levels" if depth else " too deeply"
    return SourceTooComplex(f"{where} nests expressions{got}{at}: the static reader takes at most {MAX_DEPTH}; "
                            "a task file's expressions are shallow: write it like a KernelBench task")
