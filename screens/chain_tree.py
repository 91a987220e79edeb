"""The Contract step of a chain: its kernels grouped by submodule, each with its operators, as a Tree.

A whole model's graph is hundreds of operators: a flat list of them (what this step showed) hides
where each kernel sits. The tree follows the model's module tree (contract.submodule.module_tree):
one group per submodule that runs a kernel, the kernels under the innermost module that runs all
their operators, each kernel's operators under it. With more than COLLAPSE_AFTER groups the groups
start collapsed, so a model opens on its top-level modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from pypto_tui.contract.submodule import ModuleGroup, module_tree
from pypto_tui.screens.widgets import dims_text

COLLAPSE_AFTER = 8
"""Groups (or kernels) a tree shows expanded; past it they start collapsed."""
ID_WIDTH = 12
"""Widest node-id column (a longer id pushes its own line only)."""


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def operator_line(node: Any, width: int = 5) -> Text:
    """One operator of the graph: `n0    conv  (x, conv1.weight) -> (8, 64, 30, 30) fp32  [conv]`,
    its id padded to `width` (the longest id of the tree, so the columns line up)."""
    reads = ", ".join(node.inputs)
    return Text(f"{node.id:<{width}} {node.op:<12} ({reads}) -> {dims_text(node.shape)} {node.dtype or ''}  "
                f"[{node.role}]")


def kernel_label(stage: Any) -> Text:
    text = Text()
    text.append(f"kernel {stage.index}", style="bold")
    text.append(f": {stage.ops}  ")
    text.append(f"({stage.kernel.pattern}; {stage.rule or 'its own kernel'})", style="dim")
    return text


def group_label(group: ModuleGroup) -> Text:
    text = Text()
    text.append(group.label, style="bold cyan")
    text.append(f"  {_plural(group.count(), 'kernel')}", style="dim")
    return text


class ChainTree(Tree[int | None]):
    """A chain's kernels grouped by submodule. A kernel node's data is its index; group and operator
    nodes hold None. Enter picks a kernel without folding it (the Contract step decides what Enter
    does: `auto_expand` off), space folds."""

    def on_mount(self) -> None:
        self.auto_expand = False

    def show(self, stages: Sequence[Any], graph: Any, groups: Sequence[Any], views: Sequence[str] = ()) -> None:
        """Fill the tree: `stages` (design.Stage), the module plan's `graph` (decomposed) and `groups`
        (plan.KernelGroup, in the stages' order), and the views forward takes between kernels."""
        self.clear()
        tree = module_tree([s.submodule for s in stages])
        n_ops = sum(len(g.nodes) for g in groups)
        self.root.set_label(Text.assemble(("forward", "bold"), f"  {_plural(n_ops, 'operator')} in "
                                          f"{_plural(len(stages), 'kernel')}, "
                                          f"{_plural(tree.groups(), 'submodule')}"))
        self.root.data = None
        open_groups = tree.groups() <= COLLAPSE_AFTER
        open_kernels = len(stages) <= COLLAPSE_AFTER
        nodes = {g.index: g.nodes for g in groups}
        width = min(max((len(nid) for ids in nodes.values() for nid in ids), default=5), ID_WIDTH)

        def add(parent: TreeNode[int | None], group: ModuleGroup) -> None:
            for entry in group.entries():
                if isinstance(entry, ModuleGroup):
                    child = parent.add(group_label(entry), None, expand=open_groups)
                    add(child, entry)
                    continue
                stage = stages[entry]
                kernel = parent.add(kernel_label(stage), stage.index, expand=open_kernels)
                for nid in nodes.get(stage.index, ()):
                    node = graph.node(nid)
                    if node is not None:
                        kernel.add_leaf(operator_line(node, width), None)

        add(self.root, tree)
        if views:
            self.root.add_leaf(Text(f"views forward takes between kernels: {', '.join(views)}", style="dim"), None)
        self.root.expand()
