"""The traced front end: a task's Model run through torch.export in the task runner, read back as an OpGraph.

`tracer.trace_task` runs `runner.py` (the only part that imports torch and executes the task) in a
process group of its own, with a timeout and a memory cap, and caches its JSON by the task file's content,
the torch version and the pack; `contract.aten.graph_from_trace` (pure) turns that JSON into the same
OpGraph the static reader builds. `tracer.traced_graph` is what the design pipeline's step 1 calls when the
design asks for this front end (`Design.front_end == "traced"`): the package sits below the design layer,
so every command and the app reach it through the one pipeline.
"""
