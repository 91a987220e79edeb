"""The reference one kernel of a module is verified against: its group of the task's operator graph,
evaluated at the kernel's own test shapes, never the kernel module itself.

Verifying a chain kernel by kernel (sim/per_kernel.py) needs, for each kernel, a baseline the worker's
compare step can run like a task file's `Model`. That baseline is written as a small task file
(`reference_source`) whose `Model` builds the group's `nn` modules as the task's `__init__` does (so,
under the worker's seed, the weights the kernel's `ModelNew` draws) and whose `forward` calls
`evaluate`: each node of the group in order, an operator by the registry's numpy reference in float64
(as the diagnosis of a failing module, worker._name_first_diverging, evaluates the whole graph), a module
anchor (conv, pool, norm) by the task's own torch module, a functional pool by `torch.nn.functional`.

This module is imported by those generated files, in the worker's compare process only (which has torch);
nothing here imports torch or numpy at module level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SPEC_VERSION = 2
"""Bump when `evaluate` reads the spec differently: the spec is written into each reference file, whose
text is part of a verify job's cache key."""

_TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int64": "int64", "int32": "int32",
                 "int8": "int8", "bool": "bool"}


def evaluate(model: Any, spec: Mapping[str, Any], args: Sequence[Any]) -> Any:
    """The group's output for forward's tensors `args` (in the spec's `args` order), as a torch tensor of
    the group's dtype. Raises when an operator has no reference (the plan refuses such a group first)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from pypto_tui.ops.registry import kind

    if len(args) != len(spec["args"]):
        raise TypeError(f"the reference takes {len(spec['args'])} tensor(s), got {len(args)}")
    env: dict[str, Any] = {vid: torch.as_tensor(a).detach().double().numpy() for vid, a in zip(spec["args"], args,
                                                                                                 strict=True)}
    env.update(spec["consts"])
    for node in spec["nodes"]:
        attrs = {k: _frozen(v) for k, v in dict(node["attrs"]).items()}
        if node.get("module") or node.get("functional"):  # the module holds its own weights: the tensor alone
            x = torch.from_numpy(np.ascontiguousarray(env[node["inputs"][0]])).float()
            y = getattr(model, node["module"])(x) if node.get("module") else getattr(F, node["functional"])(x, **attrs)
            env[node["id"]] = y.detach().double().numpy()
        else:
            ins = [env[i] for i in node["inputs"]]
            k = kind(node["op"])
            if k is None or k.reference is None:
                raise NotImplementedError(f"{node['op']} has no reference")
            env[node["id"]] = np.asarray(k.reference(*ins, **attrs) if attrs else k.reference(*ins))
    out = np.ascontiguousarray(np.asarray(env[spec["writes"]], dtype=np.float64))
    return torch.from_numpy(out).to(getattr(torch, _TORCH_DTYPES.get(spec["dtype"], "float32")))


def _frozen(v: Any) -> Any:
    """JSON's lists as the tuples the graph's attributes hold (numpy takes a tuple of axes, not a list)."""
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return {k: _frozen(x) for k, x in v.items()}
    return v
