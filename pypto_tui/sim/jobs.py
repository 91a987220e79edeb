"""The records that cross the process boundary: a job in, a result out, both plain JSON.

A job carries the kernel module *source* (text), not a path: what is measured is exactly what
was generated, and the cache key can be computed from the job alone. Inputs are described, not
shipped: the worker builds them from a seed, so the reference and the kernel see the same data
and a job file stays a few KB.

Job JSON (kind "cost" or "verify"):

    {
      "kind": "cost",                      # or "verify"
      "kernel_source": "import pypto ...", # a module defining ModelNew
      "inputs": [                          # positional arguments of forward()
        {"shape": [16, 16384], "dtype": "fp32"},              # fill defaults to "randn"
        {"shape": [8], "dtype": "fp32", "fill": "uniform", "low": 0.1, "high": 1.0},
        {"scalar": 0.5}                                       # a Python scalar argument
      ],
      "init_args": [1.0],                  # ModelNew(*init_args) (and Model(*init_args))
      "seed": 0,
      "label": "tile (1, 8192)",           # echoed back, for the UI
      "cycles_per_us": 1800,               # default: the knowledge pack's chip.cycles_per_us
      # verify only:
      "task_file": "/path/to/task.py",     # the torch baseline defining Model
      "criterion": "kernelbench",          # the criterion's name (verify.toml), echoed in the report
      "tolerances": {"fp32": [1e-4, 1e-4]},# per-dtype [atol, rtol]; null: KernelBench's numbers
      "trials": 2,                         # input seeds seed, seed + 1, ...: every one must pass
      "memory_limit_mb": 8192,             # RLIMIT_AS for the worker
      "calculator_dir": null,              # default: <cache>/calculator/<torch version>
      "passes": null,                      # the compiler passes every pass-verify place must
                                           # report PASS (default: the pack's passes.toml)
      "reference": "tensor_graph",         # the stage the passes are compared with
      # set by the runner, not by callers:
      "work_dir": "/tmp/pypto-tui-XXXX",   # private temp dir, deleted afterwards
      "step": "",                          # "compare": the second process of a verify (worker.py)
      "stages": null                       # a module plan's graph and kernels (verification.py)
    }

fill is one of randn (default for floats), uniform (low..high), randint (low..high, default for
integer dtypes), zeros, ones, arange.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pypto_tui.errors import InputError

KINDS = ("cost", "verify")
FILLS = ("randn", "uniform", "randint", "zeros", "ones", "arange")
DTYPES = ("fp32", "fp16", "bf16", "int8", "int16", "int32", "int64", "uint8", "bool")
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "bool": 1}
_DTYPE_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "dt_fp32": "fp32", "dt_fp16": "fp16", "dt_bf16": "bf16", "dt_int8": "int8", "dt_int32": "int32",
    "dt_int64": "int64", "dt_int16": "int16", "dt_uint8": "uint8", "dt_bool": "bool",
}

DEFAULT_MEMORY_LIMIT_MB = 8 * 1024

# Result statuses. Only the first four are answers about the kernel (and may be cached).
OK = "ok"                          # cost measured / verify passed
MISMATCH = "mismatch"              # verify ran, the numbers differ from the baseline
COMPILE_ERROR = "compile_error"    # pypto refused or failed to compile the kernel
ERROR = "error"                    # the module, forward() or the baseline raised
UNVERIFIED = "unverified"          # verify ran, but a compiler pass wrote no pass-verify row
TIMEOUT = "timeout"
CRASHED = "crashed"                # the worker died (signal, out of memory) or wrote nothing
UNAVAILABLE = "unavailable"        # pypto/torch missing or the wrong version
CANCELLED = "cancelled"            # stopped by the user or a time budget before it finished
RAN = "ran"                        # the kernel worker's hand-off: the outputs are saved, the baseline
                                   # and the comparison are the next process's (never a final status)
CACHEABLE = (OK, MISMATCH, COMPILE_ERROR, ERROR, UNVERIFIED)
PASS_CHECK_FORMAT = 3  # bump when the pass check, or what counts as the kernels' work, changes: cached
                       # verdicts from before are not reused (3: only kernels compute, sim/guard.py)
COMPARE_STEP = "compare"


class JobError(InputError):
    """A job description that cannot be run as given."""


def pack_cycles_per_us() -> float:
    """The active knowledge pack's cost-model clock (chip.cycles_per_us), 1800 if it cannot be
    read: a broken pack is reported by the commands that use it, not by a simulation."""
    try:
        from pypto_tui.kb import get_kb

        return float(get_kb().chip.cycles_per_us)
    except Exception:
        return 1800.0


def pack_passes() -> tuple[tuple[str, ...], str]:
    """The active pack's expected compiler passes and their reference stage (passes.toml); no
    passes when the pack lists none (a verification then cannot pass)."""
    try:
        from pypto_tui.kb import get_kb

        pv = get_kb().pass_verify
    except Exception:
        pv = None
    return (tuple(pv.passes), pv.reference) if pv is not None else ((), "tensor_graph")


def normalise_dtype(name: str) -> str:
    s = str(name).strip().lower().removeprefix("torch.").removeprefix("pypto.")
    s = _DTYPE_ALIASES.get(s, s)
    if s not in DTYPES:
        raise JobError(f"unknown dtype {name!r}: use one of {', '.join(DTYPES)}")
    return s


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One positional argument of forward(): a random tensor, or a scalar when `scalar` is set."""

    shape: tuple[int, ...] = ()
    dtype: str = "fp32"
    fill: str | None = None
    low: float | None = None
    high: float | None = None
    scalar: float | int | bool | None = None
    recipe: dict[str, Any] | None = None  # the task's get_inputs() recipe (contract Input.recipe)

    def __post_init__(self) -> None:
        if self.scalar is not None:
            return
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", normalise_dtype(self.dtype))
        if any(d < 0 for d in self.shape):
            raise JobError(f"negative dimension in input shape {self.shape}")
        if self.fill is not None and self.fill not in FILLS:
            raise JobError(f"unknown fill {self.fill!r}: use one of {', '.join(FILLS)}")

    @property
    def is_scalar(self) -> bool:
        return self.scalar is not None

    def to_json(self) -> dict[str, Any]:
        if self.scalar is not None:
            return {"scalar": self.scalar}
        d: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        for k in ("fill", "low", "high", "recipe"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d

    @classmethod
    def from_json(cls, d: Any) -> InputSpec:
        if isinstance(d, bool | int | float):
            return cls(scalar=d)
        if not isinstance(d, dict):
            raise JobError(f"an input must be an object like {{'shape': [...], 'dtype': 'fp32'}}, got {d!r}")
        if "scalar" in d:
            return cls(scalar=d["scalar"])
        if "shape" not in d:
            raise JobError(f"input {d!r} has neither 'shape' nor 'scalar'")
        return cls(
            shape=tuple(d["shape"]), dtype=d.get("dtype", "fp32"), fill=d.get("fill"),
            low=d.get("low"), high=d.get("high"), recipe=d.get("recipe"),
        )


@dataclass(frozen=True, slots=True)
class SimJob:
    """One compile (cost) or one compile + comparison with the baseline (verify)."""

    kind: str
    kernel_source: str
    inputs: tuple[InputSpec, ...]
    init_args: tuple[Any, ...] = ()
    seed: int = 0
    label: str = ""
    cycles_per_us: float | None = None  # None: the knowledge pack's chip.cycles_per_us
    task_file: str | None = None
    criterion: str | None = None       # verify: the criterion's name (verify.toml)
    tolerances: dict[str, tuple[float, float]] | None = None  # verify: per-dtype (atol, rtol)
    trials: int = 1                    # verify: input seeds, seed, seed + 1, ...
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB
    calculator_dir: str | None = None
    passes: tuple[str, ...] | None = None
    reference: str | None = None
    work_dir: str | None = None
    step: str = ""  # set by the runner: "compare" runs the baseline and the comparison (worker.py)
    stages: dict[str, Any] | None = None  # verify of a module plan: {"graph": OpGraph data, "stages":
    # [{"index", "ops", "writes"}]}, to name the first kernel whose output diverges (worker.py)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise JobError(f"unknown job kind {self.kind!r}: use 'cost' or 'verify'")
        if self.kind == "verify" and not self.task_file:
            raise JobError("a verify job needs 'task_file' (the torch baseline defining Model)")
        object.__setattr__(self, "inputs", tuple(
            i if isinstance(i, InputSpec) else InputSpec.from_json(i) for i in self.inputs
        ))
        object.__setattr__(self, "init_args", tuple(self.init_args))
        if self.kind == "verify" and (self.passes is None or self.reference is None):
            passes, reference = pack_passes()
            object.__setattr__(self, "passes", passes if self.passes is None else tuple(self.passes))
            object.__setattr__(self, "reference", self.reference or reference)
        elif self.passes is not None:
            object.__setattr__(self, "passes", tuple(self.passes))
        if not isinstance(self.trials, int) or isinstance(self.trials, bool) or self.trials < 1:
            raise JobError(f"trials must be a whole number >= 1, got {self.trials!r}")
        if self.tolerances is not None:
            object.__setattr__(self, "tolerances", {str(k): (float(v[0]), float(v[1]))
                                                    for k, v in dict(self.tolerances).items()})
        if self.cycles_per_us is None:
            object.__setattr__(self, "cycles_per_us", pack_cycles_per_us())
        elif self.cycles_per_us <= 0:
            raise JobError(f"cycles_per_us must be positive, got {self.cycles_per_us}")

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["inputs"] = [i.to_json() for i in self.inputs]
        d["init_args"] = list(self.init_args)
        if self.passes is not None:
            d["passes"] = list(self.passes)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SimJob:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise JobError(f"unknown job field(s): {', '.join(sorted(unknown))}")
        for req in ("kind", "kernel_source", "inputs"):
            if req not in d:
                raise JobError(f"job is missing {req!r}")
        kw: dict[str, Any] = {k: (tuple(v) if k in ("inputs", "init_args", "passes") and v is not None else v)
                              for k, v in d.items()}
        return cls(**kw)

    def trial_seeds(self) -> tuple[int, ...]:
        """The input seeds of the trials (a cost job runs one)."""
        return tuple(self.seed + t for t in range(self.trials if self.kind == "verify" else 1))

    def cache_material(self, pypto_version: str | None) -> dict[str, Any]:
        """What determines the answer: kernel source, inputs, pypto version, kind (and for
        verify, the baseline's text and the tolerance). Paths and the work dir are left out.
        A cost measurement depends on the code only, so its key ignores comments and docstrings
        (the generated header names the pack: a calibrated pack reuses the default's runs)."""
        m: dict[str, Any] = {
            "kind": self.kind,
            "kernel_source": code_only(self.kernel_source) if self.kind == "cost" else self.kernel_source,
            "inputs": [i.to_json() for i in self.inputs],
            "init_args": list(self.init_args),
            "seed": self.seed,
            "pypto": pypto_version,
            "cycles_per_us": self.cycles_per_us,
        }
        if self.kind == "verify":
            try:
                text = Path(self.task_file or "").read_bytes()
            except OSError:
                text = b""
            m["task_sha256"] = hashlib.sha256(text).hexdigest()
            m["criterion"] = self.criterion
            m["tolerances"] = {k: list(v) for k, v in sorted((self.tolerances or {}).items())}
            m["trials"] = self.trials
            m["passes"] = list(self.passes or ())
            m["reference"] = self.reference
            m["pass_check"] = PASS_CHECK_FORMAT
        return m


def code_only(source: str) -> str:
    """`source` without its comments and docstrings (the text a cost measurement cannot depend on);
    the source itself when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


@dataclass(slots=True)
class SimResult:
    """What a worker reports. `e2e_us` sums the kernel launches of one forward() call;
    `kernels` has one entry per launch (see swim.SwimSummary)."""

    kind: str
    status: str
    label: str = ""
    e2e_us: float | None = None
    cycles: int | None = None
    tasks: int | None = None
    utilisation: float | None = None
    kernels: list[dict[str, Any]] = field(default_factory=list)
    compile_s: float | None = None
    sim_s: float | None = None
    wall_s: float | None = None
    error: str | None = None
    reason: str | None = None
    passed: bool | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    inputs_clobbered: bool | None = None
    trials_run: int | None = None
    calculator_built_s: float | None = None
    kernel_calls: int | None = None
    kernels_defined: int | None = None  # the jit kernels the module defines (sim/guard.py)
    kernels_run: int | None = None      # how many of them launched in forward (each must)
    outside_kernels: list[dict[str, Any]] = field(default_factory=list)  # torch work outside the kernels
    first_diverging_kernel: int | None = None  # a failing module plan: the first kernel off its reference
    divergence: str | None = None              # ... and how (one line, added to the verdict's reason)
    failed_kernel: dict[str, Any] | None = None  # a launch that raised: the jit kernel's name and module line
    passes_expected: list[str] = field(default_factory=list)
    passes_checked: list[str] = field(default_factory=list)
    missing_passes: list[str] = field(default_factory=list)
    first_failing_pass: str | None = None
    pass_rows: int | None = None
    peak_rss_mb: float | None = None
    peak_vm_mb: float | None = None
    cached: bool = False
    key: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def cacheable(self) -> bool:
        return self.status in CACHEABLE

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SimResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})
