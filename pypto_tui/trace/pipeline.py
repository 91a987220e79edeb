"""The design pipeline started from a traced graph (the hook the traced front end needs).

`Pipeline.contract()` reads the task statically and keeps forward's graph in `Contract.graph`; every
later step (the partition into kernels, each kernel's contract from its group, the module) reads the
graph from there. `TracedPipeline` is the same pipeline whose contract carries the traced graph
instead, so the rest runs unchanged. The static reading still gives the inputs, init parameters and
the one-operator answer; where it refuses forward (a loop, a helper, nn.Sequential), the traced graph
is what the kernels come from.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pypto_tui.contract.model import freeze
from pypto_tui.design import Design, Pipeline
from pypto_tui.errors import InputError

if TYPE_CHECKING:
    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.contract.model import Contract
    from pypto_tui.kb import KnowledgeBase


class TracedPipeline(Pipeline):
    """A pipeline whose step 1 carries a given operator graph (the traced one)."""

    def __init__(self, kb: KnowledgeBase, design: Design, graph: OpGraph, *, fuse: bool = True) -> None:
        super().__init__(kb, design, fuse=fuse)
        self.graph = graph
        self._graph_data = freeze(graph.to_data())

    def contract(self) -> Contract:
        base = super().contract()
        return self._memo("traced_contract", id(base), lambda: replace(base, graph=self._graph_data))

    def with_design(self, **changes: Any) -> TracedPipeline:
        return TracedPipeline(self.kb, replace(self.design, **changes), self.graph, fuse=self.fuse)

    def unfused(self) -> TracedPipeline:
        return TracedPipeline(self.kb, self.design, self.graph, fuse=False)


def pack_id(kb: KnowledgeBase) -> str:
    """The pack's identity for the trace cache (its name and version)."""
    return f"{getattr(kb, 'name', '')}@{getattr(kb, 'version', '')}"


def traced_graph(task: str | os.PathLike[str], kb: KnowledgeBase, *, timeout: float, memory_mb: int | None = None,
                 announce: Callable[[str], None] | None = None, use_cache: bool = True) -> OpGraph:
    """The task's traced OpGraph; InputError (one line) when the model cannot be traced."""
    from pypto_tui.contract.aten import graph_from_trace
    from pypto_tui.trace.tracer import DEFAULT_MEMORY_MB, trace_task

    t = trace_task(task, pack=pack_id(kb), timeout=timeout, memory_mb=memory_mb or DEFAULT_MEMORY_MB,
                   announce=announce, use_cache=use_cache)
    if not t.ok:
        raise InputError(f"the traced front end could not read {task}: {t.message or t.status}")
    return graph_from_trace(t.data)


def traced_pipeline(kb: KnowledgeBase, task: str | os.PathLike[str], *, timeout: float,
                    announce: Callable[[str], None] | None = None, use_cache: bool = True) -> TracedPipeline:
    """The design pipeline of a task from its traced graph."""
    graph = traced_graph(task, kb, timeout=timeout, announce=announce, use_cache=use_cache)
    return TracedPipeline(kb, Design(task=str(task)), graph)
