"""Knowledge packs: load, validate and resolve the rules-as-data every check reads.

A pack is a folder of TOML files (see knowledge/default/). Nothing in the code hard-codes a
limit, a ladder or a preset: swap the pack (`--kb DIR`, `PYPTO_TUI_KB`) and the verdicts change.
Validation is strict and happens once, at load: a bad pack is refused with the file, the key
and the reason, so a typo never turns into a silently different verdict.

A pack may say `extends = "default"` in pack.toml: any file it does not provide is then read
from the bundled default pack. That keeps a user's pack down to the numbers they change.
`extends` takes the name of a bundled pack only (a folder of pypto_tui/knowledge/), never a path:
a pack reads its own files and the bundled ones, nothing else.

A pack reads only its own regular files: a pack file or template that is a symlink is followed
only when it lands inside the pack folder. Kernel templates (`templates/<flavour>/NAME.py.tmpl`)
are validated on load like the TOML files: UTF-8, at most MAX_TEMPLATE_BYTES, Python once their
`{placeholders}` are filled, and only the placeholders the generator fills for NAME. A rule's
`{placeholder}` is a plain name of the pack's numbers (no format spec, conversion or index).
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from pypto_tui.catalogue import APPLIER_NAMES, CHECK_NAMES
from pypto_tui.errors import InputError, PackError
from pypto_tui.vocabulary import ESTIMATE_FEATURES, FAMILIES, RANKINGS

ENV_VAR = "PYPTO_TUI_KB"
BUNDLED_ROOT = Path(__file__).resolve().parent / "knowledge"
SCHEMA_VERSION = 1

KINDS = ("hard", "heuristic")
SEVERITIES = ("error", "warn", "info")
STEPS = ("contract", "dims", "tiles", "loops", "kernel", "verify")
AUTHORITIES = ("compiler", "pypto-docs", "rule-docs")
RESHAPES = ("flatten", "keep", "groups", "batch_channel_rest", "rows", "merge_reduce", "matmul",
            "window_im2col", "window_transposed", "window_depthwise", "window_pool",
            "broadcast_rows", "leading_batch", "concat_rows", "swap_blocks",
            "slice_rows", "pad_rows",  # a loss's broadcast operand, attention, cat, a swap of two axes, a narrow
            "recurrent_rows", "take_rows",  # a pad of one axis, an LSTM or GRU layer, an embedding
            "scalar_rows")  # operands of one shape reduced to one value
SANE_INT = 1 << 20
"""Largest number a pack's integer limits may hold unless a key says otherwise: every real limit
(16384 elements, 2048 tiles, 192 KB of unified buffer...) is far below; a larger one is a typo
that would turn a bounded search unbounded."""
MAX_LIST = 64
MAX_PACK_FILE = 1 << 20
OTHER_FILES = ("lint.toml", "fusion.toml")
"""Pack files read by another part (lint.toml: lint.profile), so not unknown files."""
REQUIRED_FILES = ("pack.toml", "limits.toml", "rules.toml", "chip.toml", "ladders.toml", "strategies.toml")
OPTIONAL_FILES = ("presets.toml", "ops.toml", "passes.toml", "estimate.toml", "verify.toml", "roofline.toml")


@dataclass(frozen=True, slots=True)
class Source:
    id: str
    title: str
    authority: str


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: str
    severity: str
    step: str
    source: str
    authority: str
    statement: str
    explanation: str
    enforced_by: tuple[str, ...]
    advice: bool
    applied_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WindowLimits:
    """The block sizes of the conv and pool plan (pypto_tui.window; limits.toml [window]). They are
    measured choices, not hardware limits, so a pack may tune them; a pack without the table gets
    the values measured with pypto 0.2.0 SIM (the default pack states them with the measurements)."""

    prepare_planes: int = 8           # CONV.pad-blocks: planes per iteration of a block pre kernel
    pool_planes: int = 8              # POOL.plane-blocks: the most planes one item of a pool takes
    insert_block: int = 16            # CONV.insert-matmul: the most last-axis elements per matmul row
    insert_rows: int = 4096           # CONV.insert-matmul: rows per iteration of the insertion matmul
    band_rows: int = 4096             # POOL.band-matmul: input rows per matmul of the band kernel
    prepare_elements: int = 1 << 20   # CONV.pad-blocks, POOL.plane-blocks: the most elements a block holds
    phase_planes_channels: int = 8    # CONV.flat-phases: most channels per group read by phase planes
    align_elements: int = 8           # P4.last-dim-align: 32-byte rows of fp32 (the window scaffolds are fp32)


@dataclass(frozen=True, slots=True)
class Limits:
    max_elements: int
    max_auto_tiles: int
    contiguous_bytes: int
    last_dim_align_bytes: int
    max_vec_rank: int
    dtype_bytes: Mapping[str, int]
    max_matmul_inner: int | None = None  # a matmul's inner (N) axis stays below this (None: no limit)
    window: WindowLimits = WindowLimits()


@dataclass(frozen=True, slots=True)
class Chip:
    name: str
    ub_bytes: int
    reduce_ub_factor: float
    reduce_ub_extra_bytes: int
    elementwise_ub_factor: float
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    cube_align_elements: int
    cycles_per_us: int
    aic_cores: int
    aiv_cores: int


@dataclass(frozen=True, slots=True)
class Ladders:
    reduce_axis: tuple[int, ...]
    loop_rings: tuple[tuple[int, ...], ...]
    ub_step_down: tuple[int, ...]

    @property
    def loop_order(self) -> tuple[int, ...]:
        """Loop counts in the order the documents try them (ring by ring)."""
        return tuple(n for ring in self.loop_rings for n in ring)

    def loop_ring_of(self, count: int) -> int | None:
        for i, ring in enumerate(self.loop_rings):
            if count in ring:
                return i
        return None


@dataclass(frozen=True, slots=True)
class Strategy:
    id: str
    families: tuple[str, ...]
    ops: tuple[str, ...]
    multi_axis: bool
    reshape: str
    rule: str
    note: str


@dataclass(frozen=True, slots=True)
class Preset:
    shape: tuple[int, ...]
    dtype: str
    reduce_dim: int | None
    tile: tuple[int, ...]
    rule: str
    note: str


@dataclass(frozen=True, slots=True)
class StartTile:
    rank: int
    tile: tuple[int, ...]
    rule: str
    note: str


@dataclass(frozen=True, slots=True)
class CubeStart:
    m: tuple[int, int]
    k: tuple[int, ...]
    n: tuple[int, int]
    rule: str
    search: CubeSearch | None = None


@dataclass(frozen=True, slots=True)
class CubeSearch:
    """presets.toml [cube.search]: pick the cube tiles per matmul instead of the starting point, the
    L1 depth of K given (k_l1) and the M x N tiles spread over the chip's cube cores, each task
    doing at least min_task_macs multiply-adds (the rule says how, and its measurement)."""

    k_l1: int
    min_task_macs: int
    rule: str


@dataclass(frozen=True, slots=True)
class OpData:
    """Per-operator numbers a pattern reads (ops.toml): how many tile-sized buffers one op of its
    chain holds in the unified buffer at once, and the axis its loop runs along when that is not
    the outermost (each with the rule that says so)."""

    op: str
    live_buffers: int = 1
    loop_axis: int | None = None
    min_rows: int = 1
    rule: str = ""
    note: str = ""
    loop_note: str = ""
    reduce_axes: tuple[int, ...] = ()  # every axis the op's reduction spans, when it is more than the contract's one
    # a chunked scan's carry chain: beyond `carried_max_chunks` chunks along the scanned axis, a tile of
    # more than `carried_max_elements` elements stops the compiler (measured; None: no such limit)
    carried_max_chunks: int | None = None
    carried_max_elements: int | None = None


@dataclass(frozen=True, slots=True)
class PassVerify:
    """The compiler passes pass-verify checks (passes.toml): `reference` is the stage every pass
    row is compared with (pypto-tui compares that one with torch itself); `passes` in pipeline order."""

    rule: str
    reference: str
    passes: tuple[str, ...]

    @property
    def stages(self) -> tuple[str, ...]:
        """Everything a verification must see pass: the reference, then each pass."""
        return (self.reference, *self.passes)


@dataclass(frozen=True, slots=True)
class Criterion:
    """One way of judging a kernel's output (verify.toml): per-dtype (atol, rtol) and where the
    numbers come from."""

    name: str
    source: str
    tolerances: Mapping[str, tuple[float, float]]


@dataclass(frozen=True, slots=True)
class CompileError:
    """What a compiler message means and what to do about it (verify.toml `[compile_error.NAME]`):
    a failed compile is explained by the first entry whose `says` occurs in the message."""

    name: str
    says: str
    meaning: str
    advice: str
    source: str

    def explain(self) -> str:
        return f"{self.meaning}; {self.advice} (measured: {self.source})"


@dataclass(frozen=True, slots=True)
class VerifyCriteria:
    """verify.toml: the criteria a pack offers, the default one, the number of input seeds and of test
    sizes (the second, at another odd tile count, catches a width hard-coded to the first's)."""

    rule: str
    default: str
    trials: int
    criteria: Mapping[str, Criterion]
    compile_errors: tuple[CompileError, ...] = ()
    sizes: int = 2

    def explain_compile_error(self, message: str) -> CompileError | None:
        """The pack's entry for a compiler message, or None when the pack knows nothing of it."""
        return next((e for e in self.compile_errors if e.says in message), None)

    def get(self, name: str | None) -> Criterion:
        """The named criterion (the default for None); InputError naming the choices otherwise."""
        key = name or self.default
        if key not in self.criteria:
            from pypto_tui.errors import InputError

            raise InputError(f"unknown criterion {key!r}: use one of {', '.join(self.criteria)} (verify.toml)")
        return self.criteria[key]


def builtin_criteria() -> VerifyCriteria:
    """KernelBench's current criterion, for a pack without verify.toml (the same numbers as the
    default pack's, which cites their source)."""
    kb = Criterion("kernelbench", "KernelBench eval.py (built in: this pack has no verify.toml)",
                   {"fp32": (1e-4, 1e-4), "fp16": (1e-2, 1e-2), "bf16": (1e-2, 1e-2)})
    return VerifyCriteria("V020.allclose-every-element", kb.name, 2, {kb.name: kb})


@dataclass(frozen=True, slots=True)
class CostFit:
    """The cost estimate's coefficients for one family (or one op), fitted to the cost model of
    one pypto version (estimate.toml, written by `pypto-tui kb calibrate`). `error` is the spread
    of the fit within a task (the standard deviation of log(measured / estimated)); `intercept`
    and `size` turn the within-task estimate into microseconds for display."""

    name: str
    pypto: str
    coefficients: Mapping[str, float]
    intercept: float = 0.0
    size: float = 0.0
    error: float = 0.0
    worst: float = 0.0
    samples: int = 0
    tasks: tuple[str, ...] = ()
    elements_per_task: float = 0.0  # the "balance" feature's two numbers (see estimate.features)
    tile_overhead: float = 0.0
    loop_error: float = 0.0         # the spread among runs that differ only in the loop count (0: use error)
    pick_error: float = 0.0         # the spread among runs near their task's fastest (0: use error)
    picks: Mapping[str, PickRecord] = field(default_factory=dict)  # per sweep ("tiles", "loops"): measured picks
    # the smallest and largest tensor (elements) among the runs fitted: outside it the estimate extrapolates
    elements: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class PickRecord:
    """How far each order's static pick landed from the exhaustive optimum on one kind of sweep
    (the geometric mean of pick time / optimum over `sweeps` measured sweeps of the family): what
    `ranking = "auto"` compares to let the estimate decide a family (estimate.toml [fit.X.picks])."""

    estimate: float
    rules: float
    sweeps: int
    source: str = ""

    @property
    def estimate_wins(self) -> bool:
        return self.sweeps > 0 and self.estimate < self.rules


@dataclass(frozen=True, slots=True)
class EstimateData:
    """estimate.toml: which order decides the recommendation ("rules", the documents' order, or
    "estimate") and the fitted coefficients per family or op."""

    ranking: str
    fits: Mapping[str, CostFit]
    note: str = ""

    def fit_for(self, family: str | None, op: str | None = None) -> CostFit | None:
        """An op's own fit first (batch_norm), then its family's (norm)."""
        for key in (op, family):
            if key and key in self.fits:
                return self.fits[key]
        return None


@dataclass(frozen=True, slots=True)
class Flavour:
    name: str
    description: str
    out_param: bool


@dataclass(frozen=True)
class KnowledgeBase:
    name: str
    version: str
    description: str
    path: Path
    default_flavour: str
    sources: Mapping[str, Source]
    flavours: Mapping[str, Flavour]
    rules: Mapping[str, Rule]
    limits: Limits
    chip: Chip
    ladders: Ladders
    strategies: tuple[Strategy, ...]
    presets: tuple[Preset, ...] = ()
    starts: tuple[StartTile, ...] = ()
    cube: CubeStart | None = None
    files: Mapping[str, Path] = field(default_factory=dict)
    ops: Mapping[str, OpData] = field(default_factory=dict)
    pass_verify: PassVerify | None = None
    estimate: EstimateData | None = None
    roofline: RooflineProfile | None = None
    verify: VerifyCriteria = field(default_factory=builtin_criteria)
    fusion: tuple[FusionRule, ...] = ()  # fusion.toml: which elementwise kinds join which anchor
    warnings: tuple[str, ...] = ()
    """Keys and files the pack holds that nothing reads (a typo warns; it never changes a verdict)."""

    def rule(self, rule_id: str) -> Rule | None:
        return self.rules.get(rule_id)

    def authority_of(self, rule_id: str) -> str:
        r = self.rules.get(rule_id)
        return r.authority if r else "rule-docs"

    def dtype_bytes(self, dtype: str) -> int:
        try:
            return self.limits.dtype_bytes[dtype]
        except KeyError:
            known = ", ".join(self.limits.dtype_bytes)
            raise InputError(f"unknown dtype '{dtype}': use one of {known}") from None

    def flavour(self, name: str | None) -> Flavour:
        key = name or self.default_flavour
        try:
            return self.flavours[key]
        except KeyError:
            raise InputError(f"unknown flavour '{key}': this pack has {', '.join(self.flavours)}") from None

    def op_data(self, op: str | None) -> OpData:
        """The pack's numbers for `op` (defaults when the pack says nothing about it)."""
        return self.ops.get(op or "", OpData(op or ""))

    def preset_for(self, shape: tuple[int, ...], dtype: str, reduce_dim: int | None) -> Preset | None:
        for p in self.presets:
            if p.shape == tuple(shape) and p.dtype == dtype and p.reduce_dim == reduce_dim:
                return p
        return None


# ------------------------------------------------------------------------------------ validation
class _Reader:
    """Typed access to one TOML table that reports problems as PackError(file, key, reason).

    Every key read is remembered, and every reader made from this one is registered with it, so
    after loading `unread()` names the keys nobody read: a misspelt key is warned about instead
    of silently changing nothing."""

    def __init__(self, file: str, table: Mapping[str, Any], prefix: str = "",
                 registry: list[_Reader] | None = None) -> None:
        self.file, self.table, self.prefix = file, table, prefix
        self.seen: set[str] = set()
        self.registry: list[_Reader] = registry if registry is not None else []
        self.registry.append(self)

    def _key(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def fail(self, key: str, reason: str) -> PackError:
        return PackError(self.file, self._key(key), reason)

    def mark(self, *keys: str) -> None:
        """Keys read directly from `table` (not through a typed getter)."""
        self.seen.update(keys)

    def unread(self) -> list[str]:
        """'file: key: unknown key (ignored)' for every key of this reader and its children nobody read."""
        import difflib  # only when a pack has a key nobody reads (a typo): not on every load

        out = []
        for r in self.registry:
            for key in r.table:
                if key not in r.seen:
                    close = difflib.get_close_matches(key, sorted(r.seen), n=1)
                    hint = f"; did you mean {close[0]}?" if close else ""
                    out.append(f"pack file {r.file}: {r._key(key)}: unknown key, ignored{hint}")
        return out

    def _get(self, key: str, required: bool) -> Any:
        self.seen.add(key)
        if key not in self.table:
            if required:
                raise self.fail(key, "missing (required)")
            return None
        return self.table[key]

    def text(self, key: str, required: bool = True, choices: tuple[str, ...] | None = None,
            default: str = "") -> str:
        v = self._get(key, required)
        if v is None:
            return default
        if not isinstance(v, str) or (required and not v.strip()):
            raise self.fail(key, f"must be a non-empty string, got {v!r}")
        if choices and v not in choices:
            raise self.fail(key, f"'{v}' is not one of {', '.join(choices)}")
        return v

    def integer(self, key: str, minimum: int = 1, maximum: int = SANE_INT) -> int:
        v = self._get(key, True)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(key, f"must be an integer, got {_short(v)}")
        if v < minimum:
            raise self.fail(key, f"must be >= {minimum}, got {v}")
        if v > maximum:
            raise self.fail(key, f"must be <= {maximum} (no real limit is larger: a typo?), got {v}")
        return v

    def number(self, key: str, minimum: float = 0.0, maximum: float = 16.0) -> float:
        v = self._get(key, True)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(key, f"must be a number, got {_short(v)}")
        if not math.isfinite(v) or v < minimum or v > maximum:
            raise self.fail(key, f"must be a number from {minimum} to {maximum}, got {v}")
        return float(v)

    def flag(self, key: str, default: bool = False) -> bool:
        v = self._get(key, False)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(key, f"must be true or false, got {v!r}")
        return v

    def ints(self, key: str, required: bool = True, minimum: int = 1, maximum: int = SANE_INT) -> tuple[int, ...]:
        v = self._get(key, required)
        if v is None:
            return ()
        if not isinstance(v, list) or not v or len(v) > MAX_LIST or not all(
            isinstance(x, int) and not isinstance(x, bool) and minimum <= x <= maximum for x in v
        ):
            raise self.fail(key, f"must be a non-empty list of at most {MAX_LIST} integers from {minimum} to "
                                 f"{maximum}, got {_short(v)}")
        return tuple(v)

    def strs(self, key: str, required: bool = True) -> tuple[str, ...]:
        v = self._get(key, required)
        if v is None:
            return ()
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise self.fail(key, f"must be a list of strings, got {v!r}")
        return tuple(v)

    def sub(self, key: str, required: bool = True) -> _Reader:
        v = self._get(key, required)
        if v is None:
            return _Reader(self.file, {}, f"{self._key(key)}.", self.registry)
        if not isinstance(v, dict):
            raise self.fail(key, "must be a table")
        return _Reader(self.file, v, f"{self._key(key)}.", self.registry)

    def array(self, key: str, required: bool = True) -> list[_Reader]:
        v = self._get(key, required)
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.fail(key, "must be an array of tables ([[...]])")
        return [_Reader(self.file, x, f"{self._key(key)}[{i}].", self.registry) for i, x in enumerate(v)]


@dataclass(frozen=True)
class FusionRule:
    """Which elementwise kinds may join an anchor's kernel (fusion.toml), with the measurement behind it."""

    id: str
    anchor: str
    prologue: tuple[str, ...]
    epilogue: tuple[str, ...]
    measured: str

    def takes(self, op: str, where: str) -> bool:
        kinds = self.epilogue if where == "epilogue" else self.prologue
        return "*" in kinds or op in kinds


def _parse_fusion(r: _Reader) -> tuple[FusionRule, ...]:
    """fusion.toml: one [[fusion]] row per anchor kind (a stable id, the measurement behind it)."""
    out: list[FusionRule] = []
    seen: set[str] = set()
    for row in r.array("fusion", required=False):
        rule_id, anchor = row.text("id"), row.text("anchor")
        if anchor in seen:
            raise row.fail("anchor", f"'{anchor}' has a row already: one row per anchor kind")
        seen.add(anchor)
        out.append(FusionRule(rule_id, anchor, row.strs("prologue", required=False),
                              row.strs("epilogue", required=False), row.text("measured", required=False)))
    return tuple(out)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


def _read_toml(path: Path) -> dict[str, Any]:
    """One pack file, bounded (a regular file of at most MAX_PACK_FILE bytes, UTF-8, sane nesting)."""
    from pypto_tui.fileio import read_bytes

    try:
        data = read_bytes(path, "pack file", MAX_PACK_FILE)
    except InputError as exc:
        raise PackError(path.name, "", str(exc).replace(f"pack file {path} ", "", 1)) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PackError(path.name, "", f"is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise PackError(path.name, "", f"not valid TOML ({exc})") from None
    except RecursionError:
        raise PackError(path.name, "", "nests arrays or tables too deeply to read") from None


def _parse_sources(r: _Reader) -> dict[str, Source]:
    out: dict[str, Source] = {}
    for s in r.array("source"):
        sid = s.text("id")
        out[sid] = Source(sid, s.text("title"), s.text("authority", choices=AUTHORITIES))
    if not out:
        raise r.fail("source", "a pack needs at least one [[source]]")
    return out


def _parse_flavours(r: _Reader) -> dict[str, Flavour]:
    out: dict[str, Flavour] = {}
    for f in r.array("flavour"):
        name = f.text("name")
        out[name] = Flavour(name, f.text("description", required=False), f.flag("out_param", True))
    if not out:
        raise r.fail("flavour", "a pack needs at least one [[flavour]]")
    return out


class _Numbers(dict[str, str]):
    """The pack's numbers for rule statements: `{max_elements}` in rules.toml reads limits.toml."""

    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def _numbers(limits: Limits, chip: Chip, ladders: Ladders) -> _Numbers:
    return _Numbers(
        max_elements=str(limits.max_elements), max_auto_tiles=str(limits.max_auto_tiles),
        contiguous_bytes=str(limits.contiguous_bytes), last_dim_align_bytes=str(limits.last_dim_align_bytes),
        max_vec_rank=str(limits.max_vec_rank), ub_bytes=str(chip.ub_bytes),
        ub_step_down=" -> ".join(map(str, ladders.ub_step_down)),
        reduce_axis=" -> ".join(map(str, ladders.reduce_axis)), loop_order="/".join(map(str, ladders.loop_order)),
    )


def _interpolate(item: _Reader, key: str, text: str, numbers: _Numbers) -> str:
    """A statement written with the pack's numbers as placeholders follows the pack that loads it.

    Only `{name}` is a placeholder: a format spec, a conversion or an index (`{max_elements:>999999999}`
    would build a gigabyte string) is refused, and the text is assembled here, never by str.format."""
    if "{" not in text and "}" not in text:
        return text
    import string

    known = ", ".join(sorted(numbers))
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise item.fail(key, f"a brace that is not a placeholder ({exc}): write {{{{ and }}}} for a literal "
                        "brace") from None
    out: list[str] = []
    for literal, field_name, spec, conversion in parts:
        out.append(literal)
        if field_name is None:
            continue
        written = "{" + field_name + ("!" + conversion if conversion else "") + (":" + spec if spec else "") + "}"
        if spec or conversion or not field_name.isidentifier():
            raise item.fail(key, f"placeholder {written[:60]} is not a plain name: write {{name}} with one of "
                                 f"{known} (no format spec, conversion or index)")
        if field_name not in numbers:
            raise item.fail(key, f"unknown placeholder {{{field_name[:60]}}}: use one of {known}")
        out.append(numbers[field_name])
    return "".join(out)


def _parse_rules(r: _Reader, sources: Mapping[str, Source], numbers: _Numbers | None = None) -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for item in r.array("rule"):
        rid = item.text("id")
        if rid in rules:
            raise item.fail("id", f"duplicate rule id '{rid}'")
        src = item.text("source")
        if src not in sources:
            raise item.fail("source", f"'{src}' is not a [[source]] id in pack.toml ({', '.join(sources)})")
        enforced = item.strs("enforced_by", required=False)
        applied = item.strs("applied_by", required=False)
        advice = item.flag("advice", False)
        for name in applied:
            if name not in APPLIER_NAMES:
                raise item.fail("applied_by",
                                f"'{name}' is not a generator this pypto-tui has (see `pypto-tui kb checks`)")
        for name in enforced:
            if name not in CHECK_NAMES:
                raise item.fail("enforced_by",
                                f"'{name}' is not a check this pypto-tui has (see `pypto-tui kb checks`)")
        if not enforced and not applied and not advice:
            raise item.fail("enforced_by", f"rule '{rid}' names no check: add enforced_by, applied_by or advice = true")
        rules[rid] = Rule(
            id=rid,
            kind=item.text("kind", choices=KINDS),
            severity=item.text("severity", choices=SEVERITIES),
            step=item.text("step", choices=STEPS),
            source=src,
            authority=sources[src].authority,
            statement=_interpolate(item, "statement", item.text("statement"), numbers or _Numbers()),
            explanation=_interpolate(item, "explanation", item.text("explanation"), numbers or _Numbers()),
            enforced_by=enforced,
            advice=advice,
            applied_by=applied,
        )
    if not rules:
        raise r.fail("rule", "a pack needs at least one [[rule]]")
    return rules


def _parse_limits(r: _Reader) -> Limits:
    t = r.sub("tile")
    d = r.sub("dtype_bytes")
    dtypes: dict[str, int] = {}
    for name in d.table:
        dtypes[name] = d.integer(name, maximum=16)
    if not dtypes:
        raise r.fail("dtype_bytes", "must list at least one dtype")
    align = t.integer("last_dim_align_bytes", maximum=4096)
    return Limits(
        max_elements=t.integer("max_elements"),
        max_auto_tiles=t.integer("max_auto_tiles"),
        contiguous_bytes=t.integer("contiguous_bytes"),
        last_dim_align_bytes=align,
        max_vec_rank=t.integer("max_vec_rank", maximum=8),
        dtype_bytes=dtypes,
        max_matmul_inner=t.integer("max_matmul_inner") if "max_matmul_inner" in t.table else None,
        window=_parse_window(r.sub("window", required=False), align, dtypes.get("fp32", 4)),
    )


def _parse_window(w: _Reader, align_bytes: int, fp32_bytes: int) -> WindowLimits:
    """[window]: every key optional (the measured defaults of WindowLimits); the alignment is the
    tile's (P4.last-dim-align) in fp32 elements, not a number of its own."""
    defaults = WindowLimits()
    sizes = {f.name: w.integer(f.name) if f.name in w.table else getattr(defaults, f.name)
             for f in fields(WindowLimits) if f.name != "align_elements"}
    return WindowLimits(**sizes, align_elements=max(1, align_bytes // fp32_bytes))


def _parse_chip(r: _Reader) -> Chip:
    c = r.sub("chip")
    return Chip(
        name=c.text("name"),
        ub_bytes=c.integer("ub_bytes", maximum=1 << 30),
        reduce_ub_factor=c.number("reduce_ub_factor", 1.0),
        reduce_ub_extra_bytes=c.integer("reduce_ub_extra_bytes", 0),
        elementwise_ub_factor=c.number("elementwise_ub_factor", 1.0),
        l1_bytes=c.integer("l1_bytes", maximum=1 << 30),
        l0a_bytes=c.integer("l0a_bytes", maximum=1 << 30),
        l0b_bytes=c.integer("l0b_bytes", maximum=1 << 30),
        l0c_bytes=c.integer("l0c_bytes", maximum=1 << 30),
        cube_align_elements=c.integer("cube_align_elements", maximum=1024),
        cycles_per_us=c.integer("cycles_per_us"),
        aic_cores=c.integer("aic_cores", maximum=1 << 16),
        aiv_cores=c.integer("aiv_cores", maximum=1 << 16),
    )


def _parse_ladders(r: _Reader) -> Ladders:
    loops = r.sub("loop_count")
    loops.mark("rings")
    rings_raw = loops.table.get("rings")
    if not isinstance(rings_raw, list) or not rings_raw or len(rings_raw) > MAX_LIST or not all(
        isinstance(ring, list) and ring and len(ring) <= MAX_LIST
        and all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= SANE_INT for x in ring)
        for ring in rings_raw
    ):
        raise loops.fail("rings", f"must be a list of non-empty lists of integers from 1 to {SANE_INT}, "
                                  f"got {_short(rings_raw)}")
    rings = tuple(tuple(ring) for ring in rings_raw)
    flat = [n for ring in rings for n in ring]
    if len(set(flat)) != len(flat):
        raise loops.fail("rings", "a loop count appears in more than one ring")
    return Ladders(
        reduce_axis=r.sub("reduce_axis").ints("order"),
        loop_rings=rings,
        ub_step_down=r.sub("ub_step_down").ints("prod"),
    )


def _parse_strategies(r: _Reader, rules: Mapping[str, Rule]) -> tuple[Strategy, ...]:
    out = []
    for s in r.array("strategy"):
        fams = s.strs("families")
        for f in fams:
            if f not in FAMILIES:
                raise s.fail("families", f"'{f}' is not a family ({', '.join(FAMILIES)})")
        rule = s.text("rule")
        if rule not in rules:
            raise s.fail("rule", f"'{rule}' is not a rule id in rules.toml")
        out.append(Strategy(
            id=s.text("id"), families=fams, ops=s.strs("ops", required=False),
            multi_axis=s.flag("multi_axis", False), reshape=s.text("reshape", choices=RESHAPES),
            rule=rule, note=s.text("note", required=False),
        ))
    return tuple(out)


def _parse_presets(r: _Reader, limits: Limits, rules: Mapping[str, Rule]) -> tuple[
    tuple[Preset, ...], tuple[StartTile, ...], CubeStart | None
]:
    presets = []
    for p in r.array("preset", required=False):
        shape, tile = p.ints("shape", maximum=1 << 40), p.ints("tile")
        if len(shape) != len(tile):
            raise p.fail("tile", f"has {len(tile)} dims but shape has {len(shape)}")
        dtype = p.text("dtype")
        if dtype not in limits.dtype_bytes:
            raise p.fail("dtype", f"'{dtype}' is not in limits.toml [dtype_bytes]")
        p.mark("reduce_dim")
        rd = p.table.get("reduce_dim")
        if rd is not None and (not isinstance(rd, int) or not 0 <= rd < len(shape)):
            raise p.fail("reduce_dim", f"must be an axis of the shape (0..{len(shape) - 1}), got {rd!r}")
        rule = p.text("rule")
        if rule not in rules:
            raise p.fail("rule", f"'{rule}' is not a rule id in rules.toml")
        presets.append(Preset(shape, dtype, rd, tile, rule, p.text("note", required=False)))
    starts = []
    for s in r.array("start", required=False):
        tile = s.ints("tile")
        rank = s.integer("rank", maximum=8)
        if rank != len(tile):
            raise s.fail("tile", f"has {len(tile)} dims but rank is {rank}")
        starts.append(StartTile(rank, tile, s.text("rule"), s.text("note", required=False)))
    cube = None
    if "cube" in r.table:
        c = r.sub("cube")
        m, k, n = c.ints("m"), c.ints("k"), c.ints("n")
        if len(m) != 2 or len(n) != 2 or len(k) not in (2, 3):
            raise c.fail("m", "m and n take [L0, L1]; k takes [L0, L1] or [L0, L1a, L1b]")
        search = None
        if "search" in c.table:
            cs = c.sub("search")
            k_l1 = cs.integer("k_l1", maximum=4096)
            if k_l1 < 16 or k_l1 & (k_l1 - 1):
                raise cs.fail("k_l1", f"must be a power of two of at least 16 elements, got {k_l1}")
            min_task_macs = cs.integer("min_task_macs", maximum=1 << 40)
            rule = cs.text("rule")
            if rule not in rules:
                raise cs.fail("rule", f"'{rule}' is not a rule id in rules.toml")
            search = CubeSearch(k_l1, min_task_macs, rule)
        cube = CubeStart((m[0], m[1]), k, (n[0], n[1]), c.text("rule"), search)
    return tuple(presets), tuple(starts), cube


def _parse_ops(r: _Reader, rules: Mapping[str, Rule]) -> dict[str, OpData]:
    out: dict[str, OpData] = {}
    ops = r.sub("op", required=False)
    for name in ops.table:
        o = ops.sub(name)
        rule = o.text("rule", required=False)
        if rule and rule not in rules:
            raise o.fail("rule", f"'{rule}' is not a rule id in rules.toml")
        axis = o.table.get("loop_axis")
        o.mark("loop_axis")
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int) or axis < 0):
            raise o.fail("loop_axis", f"must be an axis number >= 0, got {axis!r}")
        live = o.integer("live_buffers") if "live_buffers" in o.table else 1
        rows = o.integer("min_rows") if "min_rows" in o.table else 1
        chunks = o.integer("carried_max_chunks") if "carried_max_chunks" in o.table else None
        elements = o.integer("carried_max_elements") if "carried_max_elements" in o.table else None
        if (chunks is None) != (elements is None):
            raise o.fail("carried_max_chunks", "carried_max_chunks and carried_max_elements go together")
        out[name] = OpData(name, live, axis, rows, rule, o.text("note", required=False),
                           o.text("loop_note", required=False), o.ints("reduce_axes", required=False, minimum=0),
                           chunks, elements)
    return out


def _parse_pass_verify(r: _Reader, rules: Mapping[str, Rule]) -> PassVerify:
    t = r.sub("pass_verify")
    rule = t.text("rule")
    if rule not in rules:
        raise t.fail("rule", f"'{rule}' is not a rule id in rules.toml")
    passes = t.strs("passes")
    if not passes:
        raise t.fail("passes", "list at least one pass name")
    if len(set(passes)) != len(passes):
        raise t.fail("passes", "a pass is listed twice")
    return PassVerify(rule, t.text("reference"), passes)


VERIFY_DTYPES = ("fp32", "fp16", "bf16")
MAX_TRIALS = 64
"""Most input seeds one verification runs (a pack's `trials` and `verify --trials`): each is a compile and a run."""
MAX_SIZES = 2
"""Most test sizes one verification runs (a pack's `sizes` and `verify --sizes`)."""


def _parse_verify(r: _Reader, rules: Mapping[str, Rule]) -> VerifyCriteria:
    head = r.sub("verify")
    rule = head.text("rule")
    if rule not in rules:
        raise head.fail("rule", f"'{rule}' is not a rule id in rules.toml")
    trials = head.integer("trials", minimum=1, maximum=MAX_TRIALS)
    sizes = head.integer("sizes", minimum=1, maximum=MAX_SIZES) if "sizes" in head.table else MAX_SIZES
    table = r.sub("criterion")
    criteria: dict[str, Criterion] = {}
    for name in table.table:
        c = table.sub(name)
        tolerances: dict[str, tuple[float, float]] = {}
        for dtype in VERIFY_DTYPES:
            if dtype not in c.table:
                continue
            pair = c._get(dtype, True)
            if (not isinstance(pair, list) or len(pair) != 2 or not all(
                    isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1
                    for x in pair)):
                raise c.fail(dtype, f"must be [atol, rtol], two numbers from 0 to 1, got {_short(pair)}")
            tolerances[dtype] = (float(pair[0]), float(pair[1]))
        if "fp32" not in tolerances:
            raise c.fail("fp32", "missing (required: other float dtypes fall back to it)")
        criteria[name] = Criterion(name, c.text("source"), tolerances)
    if not criteria:
        raise r.fail("criterion", "list at least one [criterion.NAME] table")
    default = head.text("criterion", choices=tuple(criteria))
    errors: list[CompileError] = []
    known = r.sub("compile_error", required=False)
    for name in known.table:
        e = known.sub(name)
        errors.append(CompileError(name, e.text("says"), e.text("meaning"), e.text("advice"), e.text("source")))
    return VerifyCriteria(rule, default, trials, criteria, tuple(errors), sizes)


@dataclass(frozen=True, slots=True)
class RooflineProfile:
    """roofline.toml: the chip's limits a kernel's time is judged against (SIM.roofline), each
    number with its source. Rates are per core per cycle; `clock` is cycles per µs."""

    name: str
    hbm_bytes_per_us: float
    clock: float
    vector_cores: int
    cube_cores: int
    vector_elements: Mapping[str, float]     # per dtype, per vector core and cycle
    cube_macs: Mapping[str, float]           # per input dtype, per cube core and cycle
    family_ops: Mapping[str, float]          # vector ops per element, by family
    op_ops: Mapping[str, float]              # ... and by op, where the op has its own count
    sources: Mapping[str, str]               # number -> where it comes from


def _positive_map(t: _Reader, skip: tuple[str, ...] = ("source", "ops")) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, v in t.table.items():
        if key in skip:
            continue
        t.mark(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise t.fail(key, f"must be a positive number, got {_short(v)}")
        out[key] = float(v)
    return out


def _parse_roofline(r: _Reader) -> RooflineProfile:
    head = r.sub("profile")
    sources: dict[str, str] = {}

    def sourced(key: str) -> float:
        t = head.sub(key)
        v = t._get("value", True)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise t.fail("value", f"must be a positive number, got {_short(v)}")
        sources[key] = t.text("source")
        return float(v)

    vec, cube, ops = r.sub("vector_elements_per_cycle"), r.sub("cube_macs_per_cycle"), r.sub("vector_ops_per_element")
    for name, t in (("vector_elements_per_cycle", vec), ("cube_macs_per_cycle", cube), ("vector_ops_per_element", ops)):
        sources[name] = t.text("source")
    op_table = ops.sub("ops", required=False)
    return RooflineProfile(head.text("name"), sourced("hbm_bytes_per_us"), sourced("clock_cycles_per_us"),
                           int(sourced("vector_cores")), int(sourced("cube_cores")), _positive_map(vec),
                           _positive_map(cube), _positive_map(ops), _positive_map(op_table), sources)


def _parse_picks(f: _Reader) -> dict[str, PickRecord]:
    table = f.sub("picks", required=False)
    out: dict[str, PickRecord] = {}
    for sweep in table.table:
        if sweep not in ("tiles", "loops"):
            raise table.fail(sweep, "a pick record is for the 'tiles' or the 'loops' sweep")
        t = table.sub(sweep)
        out[sweep] = PickRecord(t.number("estimate", 1.0, 100.0), t.number("rules", 1.0, 100.0),
                                t.integer("sweeps", minimum=0, maximum=100000), t.text("source", required=False))
    return out


def _parse_estimate(r: _Reader) -> EstimateData:
    head = r.sub("estimate")
    ranking = head.text("ranking", required=False, choices=RANKINGS, default="rules")
    fits: dict[str, CostFit] = {}
    table = r.sub("fit", required=False)
    for name in table.table:
        f = table.sub(name)
        coef = f.sub("coefficients")
        values: dict[str, float] = {}
        for feature in coef.table:
            if feature not in ESTIMATE_FEATURES:
                known = ", ".join(ESTIMATE_FEATURES)
                raise coef.fail(feature, f"'{feature}' is not a feature of the estimate ({known})")
            v = coef.table[feature]
            coef.mark(feature)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise coef.fail(feature, f"must be a finite number, got {v!r}")
            values[feature] = float(v)
        if not values:
            raise f.fail("coefficients", "list at least one feature's coefficient")
        samples = f.table.get("samples", 0)
        f.mark("samples")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 0:
            raise f.fail("samples", f"must be a whole number >= 0, got {samples!r}")

        def num(key: str, default: float = 0.0, signed: bool = False, f: _Reader = f) -> float:
            if key not in f.table:
                return default
            v = f.table[key]
            f.mark(key)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or (not signed and v < 0):
                raise f.fail(key, f"must be a finite {'' if signed else 'non-negative '}number, got {v!r}")
            return float(v)

        fits[name] = CostFit(name, f.text("pypto"), values, num("intercept", signed=True), num("size", signed=True),
                             num("error"), num("worst"), samples, f.strs("tasks", required=False),
                             num("elements_per_task"), num("tile_overhead"), num("loop_error"),
                             num("pick_error"), _parse_picks(f), _parse_range(f))
    return EstimateData(ranking, fits, head.text("note", required=False))


def _parse_range(f: _Reader) -> tuple[int, int] | None:
    """[fit.X] `elements = [smallest, largest]`: the tensor sizes the fit was measured on (optional)."""
    if "elements" not in f.table:
        return None
    v = f.table["elements"]
    f.mark("elements")
    whole = isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)
    if not whole or len(v) != 2 or v[0] > v[1]:
        raise f.fail("elements", f"must be [smallest, largest] tensor sizes in elements (whole numbers >= 1), "
                                 f"got {v!r}")
    return int(v[0]), int(v[1])


def _pack_files(path: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    """Which file provides each part of the pack, following `extends` to the bundled default."""
    pack_toml = path / "pack.toml"
    if not pack_toml.is_file():
        raise PackError(str(path), "", "no pack.toml here: point --kb at a folder holding pack.toml")
    head = _read_toml(pack_toml)
    extends = head.get("pack", {}).get("extends") if isinstance(head.get("pack"), dict) else None
    base: Path | None = None
    if extends is not None:
        if not is_bundled_pack_name(extends):
            shown = repr(extends)[:80]
            raise PackError("pack.toml", "pack.extends", f"{shown} is not a bundled pack (one of "
                            f"{', '.join(bundled_pack_names())}): a pack extends a bundled pack by its name, "
                            "never a path")
        base = BUNDLED_ROOT / extends
    files: dict[str, Path] = {}
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        own = path / name
        _require_own(path, own)
        _require_regular(own)
        if own.is_file():
            files[name] = own
        elif base is not None and (base / name).is_file():
            files[name] = base / name
        elif name in REQUIRED_FILES:
            raise PackError(str(path), name, "missing file (required; or set extends = \"default\" in pack.toml)")
    return files, head


def bundled_pack_names() -> list[str]:
    """The packs shipped inside pypto_tui (folders of `knowledge/` holding a pack.toml)."""
    return sorted(p.name for p in BUNDLED_ROOT.iterdir() if (p / "pack.toml").is_file())


def is_bundled_pack_name(name: object) -> bool:
    """`name` names a bundled pack: a plain folder name (no separator, no `..`), not a path."""
    return (isinstance(name, str) and name.isascii() and name.replace("-", "").replace("_", "").isalnum()
            and name in bundled_pack_names())


def _require_own(root: Path, path: Path) -> None:
    """A pack reads only its own files: a symlink is followed only when it lands inside the pack
    folder (a template linked to /etc/passwd is refused, never read)."""
    if not path.is_symlink():
        return
    target = Path(os.path.realpath(path))
    base = Path(os.path.realpath(root))
    if base not in target.parents:
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        raise PackError(str(rel), "", "is a symlink out of the pack folder: a pack reads only its own files; "
                        "copy the file into the pack")


def _require_regular(path: Path) -> None:
    """A pack file that is there but is not a regular file (a FIFO would block the reader, a folder
    is not a file) is reported as what it is, not as missing."""
    from pypto_tui.fileio import kind_of

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if path.is_symlink():
            raise PackError(path.name, "", "is a dangling symlink: point it at a file or remove it") from None
        return
    except OSError as exc:
        raise PackError(path.name, "", f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise PackError(path.name, "", f"is {kind_of(mode)}, not a regular file: a pack file is a TOML file")


def _check_lint_api(lint: Path) -> None:
    """lint.toml's [[profile]] `api` entries name files of the pack (lists of names a release has):
    each must be a regular file inside the pack folder. Checked when the pack loads (so `kb validate`
    says it), not when the lint first reads one (a missing file failed `lint`; `../../etc/shadow` was read)."""
    _require_regular(lint)
    if not lint.is_file():
        return
    root = lint.parent.resolve()
    profiles = _read_toml(lint).get("profile", [])
    for i, prof in enumerate(profiles if isinstance(profiles, list) else []):
        api = prof.get("api", []) if isinstance(prof, dict) else []
        for j, rel in enumerate(api if isinstance(api, list) else []):
            if not isinstance(rel, str):
                continue  # the lint's own reader reports a value of the wrong type
            key = f"profile[{i}].api[{j}]"
            target = (root / rel).resolve()
            if root not in target.parents:
                raise PackError("lint.toml", key, f"'{rel}' is outside the pack folder: name a file inside it")
            _require_regular(target)
            if not target.is_file():
                raise PackError("lint.toml", key, f"'{rel}' does not exist in the pack folder {root}")


def load_pack(path: str | os.PathLike[str], thorough: bool = False) -> KnowledgeBase:
    """Load and validate the pack in folder `path`. Raises PackError on any problem.

    A bundled pack's kernel templates ship with the code and are checked by its tests (and by
    `kb validate`, `thorough`): a one-shot command does not parse every template again on each run
    (a fifth of `tile`'s own time). Any other pack's templates are checked on every load."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise PackError(str(path), "", "not a folder: --kb takes the folder that holds pack.toml")
    files, head = _pack_files(root)
    docs = {name: (head if name == "pack.toml" else _read_toml(p)) for name, p in files.items()}
    _require_own(root, root / "lint.toml")
    _check_lint_api(root / "lint.toml")
    template_warnings = check_templates(root) if thorough or not is_bundled(root) else []

    readers: dict[str, _Reader] = {}

    def reader(name: str) -> _Reader:
        if name not in readers:
            readers[name] = _Reader(files[name].name, docs[name])
        return readers[name]

    pack = reader("pack.toml").sub("pack")
    pack.mark("extends")
    schema = pack.integer("schema")
    if schema != SCHEMA_VERSION:
        raise pack.fail("schema", f"this pypto-tui reads schema {SCHEMA_VERSION}, the pack says {schema}")
    pack_doc = reader("pack.toml")
    # Sources and flavours may come from this pack or, when extending, from the base pack.toml.
    base_pack = None
    if "extends" in pack.table and "source" not in docs["pack.toml"]:
        base_pack = _Reader("pack.toml", _read_toml(BUNDLED_ROOT / pack.table["extends"] / "pack.toml"))
    sources = _parse_sources(base_pack if base_pack else pack_doc)
    flavours = _parse_flavours(base_pack if (base_pack and "flavour" not in docs["pack.toml"]) else pack_doc)
    default_flavour = pack.text("default_flavour", required=False, default=next(iter(flavours)))
    if default_flavour not in flavours:
        raise pack.fail("default_flavour", f"'{default_flavour}' is not a [[flavour]] name")
    limits = _parse_limits(reader("limits.toml"))
    chip = _parse_chip(reader("chip.toml"))
    ladders = _parse_ladders(reader("ladders.toml"))
    rules = _parse_rules(reader("rules.toml"), sources, _numbers(limits, chip, ladders))
    strategies = _parse_strategies(reader("strategies.toml"), rules)
    presets, starts, cube = (
        _parse_presets(reader("presets.toml"), limits, rules) if "presets.toml" in files else ((), (), None)
    )
    ops = _parse_ops(reader("ops.toml"), rules) if "ops.toml" in files else {}
    pass_verify = _parse_pass_verify(reader("passes.toml"), rules) if "passes.toml" in files else None
    estimate = _parse_estimate(reader("estimate.toml")) if "estimate.toml" in files else None
    verify = _parse_verify(reader("verify.toml"), rules) if "verify.toml" in files else builtin_criteria()
    roofline = _parse_roofline(reader("roofline.toml")) if "roofline.toml" in files else None
    # fusion.toml: the pack's own, else the bundled default's (a pack that leaves it out fuses as shipped)
    fusion_path = root / "fusion.toml"
    _require_own(root, fusion_path)
    _require_regular(fusion_path)
    if not fusion_path.is_file():
        fusion_path = BUNDLED_ROOT / "default" / "fusion.toml"
    fusion_reader = _Reader("fusion.toml", _read_toml(fusion_path))
    fusion = _parse_fusion(fusion_reader)
    name, version = pack.text("name"), pack.text("version")
    description = pack.text("description", required=False)
    warnings = [w for r in (*readers.values(), fusion_reader) for w in r.unread()] + template_warnings
    known = set(REQUIRED_FILES + OPTIONAL_FILES + OTHER_FILES)
    warnings += [f"pack folder {root}: {p.name} is not a pack file (none of {', '.join(sorted(known))}); "
                 "it is ignored" for p in sorted(root.glob("*.toml")) if p.name not in known]
    return KnowledgeBase(
        name=name, version=version, description=description, path=root,
        default_flavour=default_flavour, sources=sources, flavours=flavours, rules=rules,
        limits=limits, chip=chip, ladders=ladders, strategies=strategies, presets=presets,
        starts=starts, cube=cube, files=files, ops=ops, pass_verify=pass_verify, estimate=estimate,
        roofline=roofline, verify=verify, warnings=tuple(warnings), fusion=fusion,
    )


def bundled_pack_dir(name: str = "default") -> Path:
    return BUNDLED_ROOT / name


def is_bundled(root: Path) -> bool:
    """A pack folder of the installed pypto_tui itself (not a copy, not a link to one)."""
    try:
        return not root.is_symlink() and root.resolve().parent == BUNDLED_ROOT.resolve()
    except OSError:
        return False


def resolve_pack_dir(cli_value: str | os.PathLike[str] | None = None) -> Path:
    """`--kb DIR`, then $PYPTO_TUI_KB, then the bundled default."""
    if cli_value:
        return Path(cli_value)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return bundled_pack_dir()


@lru_cache(maxsize=8)
def _cached(path: str, mtime_key: tuple[float, ...]) -> KnowledgeBase:
    return load_pack(path)


def get_kb(cli_value: str | os.PathLike[str] | None = None) -> KnowledgeBase:
    """The resolved pack, cached per folder (and reloaded when one of its files changes)."""
    root = resolve_pack_dir(cli_value)
    try:
        key = tuple(p.stat().st_mtime for p in sorted(root.glob("*.toml")))
    except OSError:
        key = ()
    return _cached(str(root), key)


Loader = Callable[[str | os.PathLike[str] | None], KnowledgeBase]


# ------------------------------------------------------------------------------------ templates
TEMPLATE_SUFFIX = ".py.tmpl"
MAX_TEMPLATE_BYTES = 64 * 1024
"""Largest kernel template a pack may hold (the bundled ones are under 2 KB)."""
MAX_TEMPLATE_FILES = 2000
"""Most entries a pack's templates/ folder may hold (the bundled pack has under 100)."""
TEMPLATE_PLACEHOLDER = r"\{([A-Za-z_][A-Za-z0-9_]*)\}"


def template_body(text: str) -> str:
    """A template's text without its leading `##` documentation lines and blank lines."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("##"):
        lines.pop(0)
    while lines and not lines[0].strip():
        lines.pop(0)
    return "".join(lines)


@lru_cache(maxsize=1)
def bundled_placeholders() -> dict[str, frozenset[str]]:
    """Per template file name, the placeholders the bundled templates of that name use: the ones the
    code generator fills for it."""
    import re

    pattern = re.compile(TEMPLATE_PLACEHOLDER)
    out: dict[str, set[str]] = {}
    for p in (bundled_pack_dir() / "templates").rglob(f"*{TEMPLATE_SUFFIX}"):
        out.setdefault(p.name, set()).update(pattern.findall(template_body(p.read_text(encoding="utf-8"))))
    return {k: frozenset(v) for k, v in out.items()}


def check_templates(root: Path) -> list[str]:
    """Validate the pack's kernel templates as its TOML files are validated, on load (PackError on
    the first bad one; returns warnings). Each `templates/<folder>/NAME.py.tmpl` must be the pack's
    own regular file (a symlink only within the pack), UTF-8, at most MAX_TEMPLATE_BYTES, Python once
    its `{placeholders}` are filled, and use only the placeholders the generator fills for NAME."""
    import re

    from pypto_tui.fileio import read_text
    from pypto_tui.source_bounds import SourceTooComplex, check_source

    tdir = root / "templates"
    if not tdir.exists() and not tdir.is_symlink():
        return []
    _require_own(root, tdir)
    if not tdir.is_dir():
        raise PackError("templates", "", "is not a folder: a pack's templates/ holds one folder per flavour")
    pattern = re.compile(TEMPLATE_PLACEHOLDER)
    known = bundled_placeholders()
    warnings: list[str] = []
    seen = 0
    for sub in sorted(tdir.iterdir()):
        _require_own(root, sub)
        if not sub.is_dir():
            continue
        for path in sorted(sub.iterdir()):
            seen += 1
            if seen > MAX_TEMPLATE_FILES:
                raise PackError("templates", "", f"holds more than {MAX_TEMPLATE_FILES} files: is it a pack?")
            if not path.name.endswith(TEMPLATE_SUFFIX):
                continue
            rel = f"templates/{sub.name}/{path.name}"
            _require_own(root, path)
            try:
                text = read_text(path, "kernel template", MAX_TEMPLATE_BYTES)
            except InputError as exc:
                raise PackError(rel, "", str(exc).replace(f"kernel template {path} ", "", 1)) from None
            body = template_body(text)
            names = set(pattern.findall(body))
            if path.name in known:
                unknown = sorted(names - known[path.name])
                if unknown:
                    fills = ", ".join(sorted(known[path.name])) or "none"
                    raise PackError(rel, "", f"unknown placeholder {{{unknown[0]}}}: the generator fills only "
                                    f"{fills} in {path.name}")
            else:
                warnings.append(f"{rel}: no kernel is written from a template of this name; it is ignored")
            source = pattern.sub(lambda m: f"__tmpl_{m.group(1)}__", body)
            try:
                err = check_source(source, rel)
            except SourceTooComplex as exc:
                raise PackError(rel, "", str(exc).replace(f"{rel} ", "", 1)) from None
            if err is not None:
                raise PackError(rel, "", f"line {err.lineno}: not Python once its placeholders are filled "
                                f"({err.msg}); write placeholders as {{name}}")
    return warnings
