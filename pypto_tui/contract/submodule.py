"""Where in the task's module tree a kernel runs: its submodule path (`layer1.0`), "" for Model.forward.

A whole model is many kernels, and the user finds one by where it sits in the model (`layer1.0`), not
by its index. Both front ends already write that place into each node's spelling: the static reader
spells a module call `nn.Linear self.gemm`, the traced one `nn.Conv2d self.layer1_0_conv1` (the one
attribute name, which `OpGraph.paths` maps back to `layer1.0.conv1`) or `aten.relu.default in
self.layer1.0` for an operator a submodule's forward ran; an operator of Model's own forward has no
`self.` in its spelling. So the path is derived from the graph, never stored a second time.

A kernel's submodule is the innermost module whose forward runs every one of its operators (the common
prefix of its nodes' paths): a conv alone is `layer1.0.conv1`, its BatchNorm and ReLU fused into one
kernel are `layer1.0`, and a kernel that also takes an operator of Model.forward is "".

The rest are the small pure questions the CLI and the app ask of those paths: does a path lie under
another (`--submodule layer1.0`), which kernel a path picks, which kernels a filter keeps, and the
kernels grouped as the module tree. Pure: no libcst, no UI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pypto_tui.contract.graph import OpGraph, OpNode
from pypto_tui.errors import InputError

FORWARD = "forward"
"""How a kernel of Model's own forward (submodule "") is named to the user."""
KNOWN_SHOWN = 10
"""Most submodule paths an error lists before it says `...`."""


class NodesLike(Protocol):
    """What a kernel group tells here (plan.KernelGroup, a layer above): the graph nodes it computes."""

    @property
    def nodes(self) -> tuple[str, ...]: ...


def node_path(node: OpNode, paths: Mapping[str, str] | None = None) -> str:
    """The module path an operator ran in: the `self.` word of its spelling (through `paths`, the
    graph's attribute name -> module path), "" for an operator of Model.forward."""
    for word in node.spelling.split():
        if word.startswith("self.") and len(word) > 5:
            name = word[5:].rstrip(":,;()")
            return (paths or {}).get(name, name)
    return ""


def common_path(paths: Iterable[str]) -> str:
    """The deepest module path every one of `paths` lies in ("" when they share none, or are none)."""
    split = [p.split(".") if p else [] for p in paths]
    if not split:
        return ""
    out: list[str] = []
    for level in zip(*split, strict=False):
        if any(part != level[0] for part in level):
            break
        out.append(level[0])
    return ".".join(out)


def submodule_of(graph: OpGraph, group: NodesLike | None = None) -> str:
    """The submodule path of a kernel group of `graph` (of the whole graph when `group` is None: a task
    of one kernel): the innermost module whose forward runs all its operators; "" for Model.forward."""
    ids = group.nodes if group is not None else tuple(n.id for n in graph.nodes)
    nodes = [n for n in (graph.node(i) for i in ids) if n is not None]
    return common_path(node_path(n, graph.paths) for n in nodes)


def within(path: str, query: str) -> bool:
    """Whether `path` is the module `query` or lies inside it: `layer1.0.conv1` is within `layer1.0`
    and `layer1`, not within `layer1.0.conv` (a path matches whole parts, never a prefix of one)."""
    return bool(query) and (path == query or path.startswith(query + "."))


def clean_query(text: str) -> str:
    """A submodule path as a user may type it: `self.layer1.0.` is `layer1.0`."""
    text = text.strip()
    if text.startswith("self."):
        text = text[5:]
    return text.strip(".")


def known_submodules(submodules: Sequence[str]) -> list[str]:
    """The distinct submodule paths of the kernels, in kernel order (Model.forward's left out)."""
    return list(dict.fromkeys(s for s in submodules if s))


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:KNOWN_SHOWN])
    return shown + (", ..." if len(paths) > KNOWN_SHOWN else "")


@dataclass(frozen=True)
class Picked:
    """The kernel a submodule path picks (its position among the kernels) and, when the path holds
    several, the note that says which one was taken."""

    position: int
    note: str = ""


def pick_submodule(submodules: Sequence[str], query: str, option: str = "--submodule") -> Picked:
    """The first kernel whose submodule lies in `query`. No kernel there: InputError naming the known
    submodules (at most KNOWN_SHOWN, then `...`)."""
    path = clean_query(query)
    known = known_submodules(submodules)
    if not path:
        hint = f" (one of {_listed(known)})" if known else ""
        raise InputError(f"{option}: give a submodule path such as layer1.0{hint}")
    hits = [i for i, s in enumerate(submodules) if within(s, path)]
    if not hits:
        if not known:
            raise InputError(f"{option} {path}: every kernel of this task runs in Model.forward (no submodule); "
                             "pick one with --kernel-index")
        raise InputError(f"{option} {path}: no kernel runs in that submodule; known: {_listed(known)}")
    if len(hits) == 1:
        return Picked(hits[0])
    return Picked(hits[0], f"{option} {path} holds kernels {', '.join(map(str, hits))}: showing kernel {hits[0]} "
                           "(--kernel-index picks another)")


def kernel_matches(text: str, ops: str, submodule: str) -> bool:
    """Whether a kernel stays in a filtered list: `text` (case-insensitive) is part of its operators
    or of its submodule path ("forward" for Model.forward's); an empty filter keeps every kernel."""
    needle = text.strip().lower()
    return not needle or needle in ops.lower() or needle in (submodule or FORWARD).lower()


@dataclass
class ModuleGroup:
    """One module of the tree the app shows: its path, the kernels (positions) whose submodule is
    exactly this module, and its submodules that hold kernels, each in kernel order."""

    path: str
    kernels: list[int] = field(default_factory=list)
    children: list[ModuleGroup] = field(default_factory=list)
    label: str = FORWARD  # the path below its parent's (`0.conv1` under `layer1`); `forward` for the root

    def count(self) -> int:
        """Kernels in this module and every module under it."""
        return len(self.kernels) + sum(c.count() for c in self.children)

    def groups(self) -> int:
        """Modules under this one (itself left out)."""
        return sum(1 + c.groups() for c in self.children)

    def first(self) -> int:
        """The position of its first kernel (the tree lists a module where its first kernel runs)."""
        return min([*self.kernels, *(c.first() for c in self.children)])

    def entries(self) -> list[ModuleGroup | int]:
        """Its kernels (positions) and submodules in the order forward runs them."""
        items: list[ModuleGroup | int] = [*self.kernels, *self.children]
        return sorted(items, key=lambda e: e if isinstance(e, int) else e.first())


def module_tree(submodules: Sequence[str]) -> ModuleGroup:
    """The kernels (by position) grouped as the module tree: the root is Model.forward, each module
    on a path to a kernel is a group, a module that only passes one child on is folded into it
    (`blocks` then `blocks.0` is one group `blocks.0` when `blocks` holds nothing else)."""
    root = ModuleGroup("")
    index: dict[str, ModuleGroup] = {"": root}
    for position, path in enumerate(submodules):
        parent = root
        parts = path.split(".") if path else []
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            group = index.get(prefix)
            if group is None:
                group = index[prefix] = ModuleGroup(prefix)
                parent.children.append(group)
            parent = group
        parent.kernels.append(position)
    _fold(root)
    return root


def _fold(group: ModuleGroup) -> None:
    for i, child in enumerate(group.children):
        while not child.kernels and len(child.children) == 1:
            child = child.children[0]
        child.label = child.path[len(group.path) + 1:] if group.path else child.path
        group.children[i] = child
        _fold(child)


__all__ = ["FORWARD", "ModuleGroup", "Picked", "clean_query", "common_path", "kernel_matches", "known_submodules",
           "module_tree", "node_path", "pick_submodule", "submodule_of", "within"]
