"""The roofline: the least time the chip could take for a task, and how far a kernel is from it.

Why: a sweep says which candidate is fastest, not whether the fastest is any good. A kernel must
move its inputs and its output through HBM at least once and do the task's arithmetic on the
vector units (elementwise work, reductions) or the cube units (matmuls, convs), so it cannot run
faster than the largest of

    bytes / HBM bandwidth,   vector ops / (vector rate x vector cores),   MACs / (cube rate x cube cores).

That largest time is the roofline; `simulated / roofline` says how much room a kernel leaves, and
which of the three binds says where the room is. The counts come from the contract (what the task
computes), never from the kernel (what one design happens to do), so every design of a task is
measured against the same bound. The chip's numbers come from the pack (roofline.toml, each with
its source); a pack without one gets no roofline, and says so.

Pure: a contract and a pack in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pypto_tui.contract.model import Contract, Input
from pypto_tui.errors import InputError
from pypto_tui.kb import KnowledgeBase, RooflineProfile
from pypto_tui.ops.roles import traits

BOUNDS = ("memory", "vector", "cube")
# Bytes per element for dtypes a pack's limits may not list (an argmax's int64 output, a mask).
_ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1,
             "bool": 1}


@dataclass(frozen=True)
class Work:
    """What the task must do, whatever the kernel: bytes through HBM (inputs, weights, output),
    element operations on the vector units and multiply-accumulates on the cube, in `dtype`."""

    bytes: int
    vector_ops: float
    cube_macs: float
    dtype: str
    counted: tuple[str, ...] = ()   # how each count was made, for the reader

    def to_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "vector_ops": self.vector_ops, "cube_macs": self.cube_macs,
                "flops": self.vector_ops + 2 * self.cube_macs, "dtype": self.dtype, "counted": list(self.counted)}


@dataclass(frozen=True)
class Roofline:
    """The three lower bounds for one task on one chip profile, and the one that binds."""

    work: Work
    memory_us: float
    vector_us: float
    cube_us: float
    chip: str

    @property
    def roofline_us(self) -> float:
        return max(self.memory_us, self.vector_us, self.cube_us)

    @property
    def bound(self) -> str:
        """Which limit binds: memory, vector or cube (the first of them on a tie)."""
        times = dict(zip(BOUNDS, (self.memory_us, self.vector_us, self.cube_us), strict=True))
        return max(BOUNDS, key=lambda b: (times[b], -BOUNDS.index(b)))

    def ratio(self, simulated_us: float | None) -> float | None:
        """simulated / roofline (1.0 is the chip's limit); None without a time."""
        if simulated_us is None or self.roofline_us <= 0:
            return None
        return simulated_us / self.roofline_us

    def to_dict(self, simulated_us: float | None = None) -> dict[str, Any]:
        return {"roofline_us": self.roofline_us, "bound": self.bound, "ratio": self.ratio(simulated_us),
                "memory_us": self.memory_us, "vector_us": self.vector_us, "cube_us": self.cube_us,
                "chip": self.chip, **self.work.to_dict()}

    def describe(self, simulated_us: float | None = None) -> str:
        """One line: the bound, what binds, and the ratio when a time is given."""
        line = f"roofline {self.roofline_us:.3g} µs ({self.bound}-bound: {_size(self.work.bytes)}"
        line += f", {_count(self.work.vector_ops)} vector ops, {_count(self.work.cube_macs)} cube MACs)"
        r = self.ratio(simulated_us)
        if r is not None:
            line += f"; simulated {simulated_us:.3g} µs is {r:.1f}x the roofline"
        return line


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _count(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def itemsize(kb: KnowledgeBase, dtype: str | None) -> int:
    d = dtype or "fp32"
    try:
        return kb.dtype_bytes(d)
    except InputError:
        if d in _ITEMSIZE:
            return _ITEMSIZE[d]
        raise


def _tensors(c: Contract) -> list[Input]:
    missing = [i.name for i in c.tensor_inputs if i.shape is None]
    if missing:
        raise InputError(f"input {missing[0]!r} has no shape: fill it in the contract")
    return list(c.tensor_inputs)


def _ints(v: Any, rank: int) -> tuple[int, ...]:
    """A conv argument as one int per spatial axis (an int stands for all of them)."""
    if isinstance(v, int | float):
        return (int(v),) * rank
    return tuple(int(x) for x in v)


def _conv(c: Contract, x: Input, out: Sequence[int], counted: list[str]) -> tuple[int, float, float]:
    """(weight bytes in elements, vector ops, cube MACs) of a conv, transposed conv or pool."""
    a = c.op_args
    shape = tuple(x.shape or ())
    rank = len(shape) - 2
    taps = math.prod(_ints(a.get("kernel_size", 1), rank))
    n_out = math.prod(out)
    if traits(c.family).strided_cost:
        counted.append(f"pool: {taps} taps per output element on the vector units")
        return 0, float(n_out * taps), 0.0
    cin, cout, groups = int(a.get("in_channels", shape[1])), int(a.get("out_channels", 1)), int(a.get("groups", 1))
    bias = cout if a.get("bias") else 0
    if a.get("attr") == "depthwise" and isinstance(a.get("pointwise"), Mapping):
        pw = a["pointwise"]
        pin, pout = int(pw.get("in_channels", cout)), int(pw.get("out_channels", 1))
        spatial = math.prod(out[2:])
        dw = shape[0] * cout * spatial * taps * (cin // max(groups, 1))
        counted.append("depthwise-separable: the depthwise taps on the vector units, the pointwise product on "
                       "the cube")
        weights = cout * taps + pin * pout + bias + (pout if pw.get("bias") else 0)
        return weights, float(dw), float(shape[0] * spatial * pin * pout)
    if c.op == "conv_transpose":
        macs = math.prod(shape) * (cout // max(groups, 1)) * taps
        weights = cin * (cout // max(groups, 1)) * taps + bias
    else:
        macs = n_out * (cin // max(groups, 1)) * taps
        weights = cout * (cin // max(groups, 1)) * taps + bias
    if groups > 1 and groups == cin:
        counted.append(f"depthwise conv: {taps} multiply-adds per output element on the vector units")
        return weights, float(macs), 0.0
    counted.append(f"conv: {cin // max(groups, 1)} x {taps} multiply-accumulates per output element on the cube")
    return weights, 0.0, float(macs)


def work_of(c: Contract, kb: KnowledgeBase) -> Work:
    """The task's bytes and arithmetic (InputError when the contract cannot say: unknown shapes)."""
    prof = kb.roofline
    if prof is None:
        raise InputError(f"pack '{kb.name}' has no roofline.toml: no chip profile to bound the kernel by")
    if not c.supported and c.family in ("unknown", ""):
        raise InputError(f"no roofline: the task's computation is not recognised ({c.reason})")
    tensors = _tensors(c)
    if not tensors:
        raise InputError("no roofline: the task has no tensor input")
    if c.output_shape is None:
        raise InputError("no roofline: the contract has no output shape")
    out = tuple(c.output_shape)
    dtype = tensors[0].dtype or "fp32"
    moved = sum(math.prod(i.shape or ()) * itemsize(kb, i.dtype) for i in tensors)
    moved += math.prod(out) * itemsize(kb, c.output_dtype or dtype)
    counted = ["bytes: every input and the output once through HBM"]
    vector, cube = 0.0, 0.0
    fam = c.family
    if fam == "matmul":
        a, b = (*c.operands, tensors[-1])[:2]
        ashape = tuple(a.shape or ())
        if len(ashape) == 1 or len(tuple(b.shape or ())) == 1:
            vector = float(math.prod(out))
            counted.append("diagonal product: one multiply per output element on the vector units")
        else:
            k = ashape[-2] if c.op_args.get("transpose_a") else ashape[-1]
            cube = float(math.prod(out) * k)
            counted.append(f"matmul: {k} multiply-accumulates per output element on the cube")
    elif fam == "attention":
        q, key = tensors[0], tensors[1] if len(tensors) > 1 else tensors[0]
        qs, ks = tuple(q.shape or ()), tuple(key.shape or ())
        scores = math.prod(qs[:-1]) * ks[-2]
        cube = float(2 * scores * qs[-1])
        vector = float(scores * _ops_per_element(prof, fam, c.op))
        counted.append("attention: Q K^T and P V on the cube, the softmax over the scores on the vector units")
    elif fam == "recurrent" and len(tensors) >= 3:
        xs, w_ih, w_hh = (tuple(t.shape or ()) for t in tensors[:3])
        steps, batch = (xs[1], xs[0]) if c.op_args.get("batch_first") else (xs[0], xs[1])
        hidden = w_hh[-1]
        cube = float(steps * batch * w_ih[0] * (w_ih[-1] + hidden))
        vector = float(steps * batch * hidden * _ops_per_element(prof, fam, c.op))
        counted.append(f"{c.op}: per step the gates' products with the input and the hidden state on the cube, "
                       "the activations and state updates on the vector units; the bound assumes the steps "
                       "overlap, which a recurrence does not allow")
    elif fam in ("conv", "pool"):
        weights, vector, cube = _conv(c, tensors[0], out, counted)
        moved += weights * itemsize(kb, dtype)
        if weights:
            counted.append("bytes: the conv's weights once")
    else:
        elements = max(max(math.prod(i.shape or ()) for i in tensors), math.prod(out))
        per = _ops_per_element(prof, fam, c.op)
        vector = float(elements * per)
        counted.append(f"{fam}: {per:g} vector op(s) per element of the largest tensor")
    return Work(int(moved), vector, cube, dtype, tuple(counted))


def _ops_per_element(prof: RooflineProfile, family: str, op: str | None) -> float:
    if op and op in prof.op_ops:
        return prof.op_ops[op]
    return prof.family_ops.get(family, 1.0)


def _rate(table: Mapping[str, float], dtype: str, what: str) -> float:
    if dtype in table:
        return table[dtype]
    if "fp32" in table:
        return table["fp32"]
    raise InputError(f"the chip profile has no {what} rate for {dtype} (roofline.toml)")


def bound(work: Work, prof: RooflineProfile) -> Roofline:
    """The three lower bounds of `work` on the profile's chip."""
    vec_rate = _rate(prof.vector_elements, work.dtype, "vector") * prof.vector_cores * prof.clock
    cube_rate = _rate(prof.cube_macs, work.dtype, "cube") * prof.cube_cores * prof.clock
    return Roofline(work, work.bytes / prof.hbm_bytes_per_us, work.vector_ops / vec_rate,
                    work.cube_macs / cube_rate, prof.name)


def roofline(c: Contract, kb: KnowledgeBase) -> Roofline:
    """The task's roofline on the pack's chip (InputError saying why when there is none)."""
    w = work_of(c, kb)
    assert kb.roofline is not None
    return bound(w, kb.roofline)


def chained(parts: Sequence[Roofline]) -> Roofline:
    """The roofline of kernels run one after another (a chain's module): every kernel's bytes,
    intermediates included, and its operations, added up. Each part's own bound is still its own
    (sim --json lists them under `roofline_kernels`)."""
    if not parts:
        raise InputError("no kernels to add up")
    work = Work(sum(r.work.bytes for r in parts), sum(r.work.vector_ops for r in parts),
                sum(r.work.cube_macs for r in parts), parts[0].work.dtype,
                (f"the sum over {len(parts)} kernels, each reading its inputs and writing its output",))
    return Roofline(work, sum(r.memory_us for r in parts), sum(r.vector_us for r in parts),
                    sum(r.cube_us for r in parts), parts[0].chip)


def try_roofline(c: Contract, kb: KnowledgeBase) -> tuple[Roofline | None, str]:
    """The roofline, or None and why not (for displays that show either)."""
    try:
        return roofline(c, kb), ""
    except (InputError, ValueError, TypeError, KeyError) as exc:
        return None, str(exc)


class _Kernel(Protocol):
    """One kernel of a module plan as the roofline reads it (design.ModuleStage): its contract, the
    value ids it reads and the one it writes."""

    @property
    def args(self) -> Sequence[str]: ...

    @property
    def output(self) -> str: ...

    @property
    def pipeline(self) -> Any: ...


@dataclass(frozen=True)
class ModuleRoofline:
    """A module's rooflines: `task`'s bytes are the module's inputs, weights and output once (what any
    plan must move; an input two kernels read counts once), `plan`'s every kernel's own (intermediates
    written and read again, `chained`); `parts` is each kernel's, in order."""

    task: Roofline
    plan: Roofline
    parts: tuple[Roofline, ...]


def module_roofline(kernels: Sequence[_Kernel], kb: KnowledgeBase) -> ModuleRoofline:
    """The rooflines of a module of several kernels (InputError and the like when a kernel has none)."""
    if not kernels:
        raise InputError("no kernels to add up")
    parts: list[Roofline] = []
    produced: set[str] = set()
    read: set[str] = set()
    inner = 0
    last = len(kernels) - 1
    for i, k in enumerate(kernels):
        c = k.pipeline.contract()
        parts.append(roofline(c, kb))
        for arg, t in zip(k.args, c.tensor_inputs, strict=False):
            if (arg in produced or arg in read) and t.shape is not None:
                inner += math.prod(t.shape) * itemsize(kb, t.dtype)  # an intermediate, or an input read again
            read.add(arg)
        if i != last and c.output_shape is not None:
            inner += math.prod(c.output_shape) * itemsize(kb, c.output_dtype or parts[-1].work.dtype)  # written
        produced.add(k.output)
    plan = chained(parts)
    w = plan.work
    task = Work(max(w.bytes - inner, 1), w.vector_ops, w.cube_macs, w.dtype,
                ("bytes: the module's inputs, weights and output once through HBM (no intermediate)",))
    assert kb.roofline is not None
    return ModuleRoofline(bound(task, kb.roofline), plan, tuple(parts))
