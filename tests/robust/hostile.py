"""Hostile inputs, generated on demand: task files, file-system traps and fuzzed argument vectors.

Shared by the regression tests in this folder and by `benchmarks/fuzz_cli.py` (which measures the
fuzz figures of issue 15). Nothing here is a committed fixture: every hostile file is written into
a folder the caller owns, so no multi-megabyte file lives in the repository.

The argument grammar draws through a tiny `Chooser` interface, so the same grammar runs under
`random.Random` (the benchmark: 10,000 reproducible vectors) and under hypothesis (the CI test:
shrinking to the smallest failing vector).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tests" / "fixtures" / "tasks"
TASKS_EXTRA = REPO / "tests" / "fixtures" / "tasks_extra"


def bundled_pack() -> Path:
    """The default pack of the pypto_tui being fuzzed (PYTHONPATH may point at another checkout,
    e.g. main before the fixes): a pack from this checkout may name checks that code lacks."""
    from pypto_tui.kb import bundled_pack_dir

    return bundled_pack_dir()

T = TypeVar("T")

MODEL_HEAD = "import torch\nimport torch.nn as nn\n\n"
MODEL_TAIL = (
    "\n\nclass Model(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n\n"
    "    def forward(self, x):\n        return torch.relu(x)\n\n\n"
    "def get_init_inputs():\n    return []\n"
)


# ------------------------------------------------------------------------------- hostile task files
def task_with_inputs(expr: str) -> str:
    """A well-formed task whose get_inputs() returns `expr`."""
    return MODEL_HEAD + f"def get_inputs():\n    return [{expr}]\n" + MODEL_TAIL


def nested_parens(depth: int = 10_000) -> str:
    return task_with_inputs("torch.randn(" + "(" * depth + "16" + ")" * depth + ")")


def nested_brackets(depth: int = 5_000) -> str:
    return MODEL_HEAD + "X = " + "[" * depth + "]" * depth + "\n" + task_with_inputs("torch.randn(16)")[
        len(MODEL_HEAD):]


def long_sum(terms: int = 10_000) -> str:
    return MODEL_HEAD + "N = " + "+".join(["1"] * terms) + "\n" + task_with_inputs("torch.randn(N)")[
        len(MODEL_HEAD):]


def big_list(megabytes: float = 25.0) -> str:
    items = int(megabytes * 1024 * 1024 / 2)
    return MODEL_HEAD + "DATA = [" + "0," * items + "]\n" + task_with_inputs("torch.randn(16)")[len(MODEL_HEAD):]


def high_rank_randn(rank: int = 200) -> str:
    return task_with_inputs("torch.randn(" + ", ".join(["2"] * rank) + ")")


def huge_dims_randn() -> str:
    return task_with_inputs("torch.randn(2**62, 128)")


FIXABLE_KERNEL = (
    "import pypto as pt\n\nN = 16384\n\n\n@pt.frontend.jit\n"
    "def kernel(x: pt.Tensor((N,), pt.DT_FP32), out: pt.Tensor((N,), pt.DT_FP32)):\n"
    "    pt.set_vec_tile_shapes(8192)\n    out.move(1.0 - x)\n"
    "\n\nclass ModelNew:\n    def forward(self, x):\n        return x\n"
)
"""A KernelBench module with one mechanical lint finding (a scalar on the left of `-`, the documents'
advice for a ModelNew module): lint --fix rewrites it."""

HOSTILE_TASKS: dict[str, Callable[[], str]] = {
    "nested_parens.py": nested_parens,
    "nested_brackets.py": nested_brackets,
    "long_sum.py": long_sum,
    "big_list.py": big_list,
    "high_rank.py": high_rank_randn,
    "huge_dims.py": huge_dims_randn,
}


# ------------------------------------------------------------------------------- the sandbox
@dataclass
class Sandbox:
    """A folder of inputs for the fuzz: good tasks, hostile files, traps, packs, output targets."""

    root: Path
    tasks: list[str] = field(default_factory=list)
    hostile: list[str] = field(default_factory=list)
    traps: list[str] = field(default_factory=list)
    packs: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)

    @property
    def out(self) -> Path:
        return self.root / "out"

    def output_targets(self) -> list[str]:
        """Where -o may point: fresh names, existing files, and the traps (all inside the sandbox)."""
        o = self.out
        return [str(o / "new.py"), str(o / "deep" / "er" / "new.py"), str(o / "existing.py"), str(o / "fifo"),
                str(o / "null"), str(o / "dangling"), str(o / "folder"), str(o / "ro" / "x.py"), str(o),
                str(o / "new\nline.py")]


def build_sandbox(root: Path, *, with_device: bool = True) -> Sandbox:
    """Write every hostile input under `root` (never outside it) and return the pools."""
    root.mkdir(parents=True, exist_ok=True)
    sb = Sandbox(root)
    good = root / "tasks"
    good.mkdir(exist_ok=True)
    for name in ("softmax_rows.py", "kl_div_batchmean.py", "matmul_tall.py", "sum_over_channels.py", "elu.py"):
        shutil.copy(TASKS / name, good / name)
    for name in ("syntax_error.py", "no_model.py", "unresolved_shape.py", "unknown_op.py"):
        shutil.copy(TASKS_EXTRA / name, good / name)
    sb.tasks = sorted(str(p) for p in good.iterdir())
    sb.folders = [str(good), str(root / "empty_dir")]
    (root / "empty_dir").mkdir(exist_ok=True)

    bad = root / "hostile"
    bad.mkdir(exist_ok=True)
    for name, make in HOSTILE_TASKS.items():
        (bad / name).write_text(make(), encoding="utf-8")
    (bad / "binary.py").write_bytes(bytes(range(256)) * 64)
    (bad / "latin1.py").write_bytes(b"# caf\xe9\n" + task_with_inputs("torch.randn(16)").encode())
    (bad / "empty.py").write_text("", encoding="utf-8")
    (bad / "nul.py").write_bytes(b"x = 1\x00\n")
    sb.hostile = sorted(str(p) for p in bad.iterdir())

    traps = root / "traps"
    traps.mkdir(exist_ok=True)
    _mkfifo(traps / "fifo.py")
    _symlink("missing-target.py", traps / "dangling.py")
    _symlink("loop_b.py", traps / "loop_a.py")
    _symlink("loop_a.py", traps / "loop_b.py")
    sb.traps = [str(traps / "fifo.py"), str(traps / "dangling.py"), str(traps / "loop_a.py"),
                str(root / "does-not-exist.py"), str(good), ""]

    out = sb.out
    out.mkdir(exist_ok=True)
    (out / "existing.py").write_text("# the user's work\n", encoding="utf-8")
    _mkfifo(out / "fifo")
    _symlink("nowhere.py", out / "dangling")
    (out / "folder").mkdir(exist_ok=True)
    (out / "ro").mkdir(exist_ok=True)
    os.chmod(out / "ro", 0o555)
    if with_device:
        _mknull(out / "null")

    kernels = root / "kernels"
    kernels.mkdir(exist_ok=True)
    (kernels / "k.py").write_text(FIXABLE_KERNEL, encoding="utf-8")
    sb.kernels = [str(kernels / "k.py"), str(kernels)]

    packs = root / "packs"
    packs.mkdir(exist_ok=True)
    broken = packs / "broken"
    pack = bundled_pack()
    if not broken.exists():
        shutil.copytree(pack, broken, ignore=shutil.ignore_patterns("examples", "templates"))
        (broken / "limits.toml").write_text("[limits]\nmax_elements = 'lots'\n", encoding="utf-8")
    absurd = packs / "absurd"
    if not absurd.exists():
        shutil.copytree(pack, absurd)
        text = (absurd / "limits.toml").read_text(encoding="utf-8")
        (absurd / "limits.toml").write_text(text.replace("max_vec_rank = 4", "max_vec_rank = 100000"),
                                            encoding="utf-8")
    sb.packs = [str(pack), str(broken), str(absurd), str(root / "no-pack"), str(good / "elu.py")]
    return sb


def _mkfifo(path: Path) -> None:
    if not path.exists():
        os.mkfifo(path)


def _symlink(target: str, link: Path) -> None:
    if not link.is_symlink():
        link.symlink_to(target)


def _mknull(path: Path) -> None:
    """A character device like /dev/null, inside the sandbox (root only; skipped otherwise)."""
    if path.exists() or path.is_symlink():
        return
    with contextlib.suppress(OSError):
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


# ------------------------------------------------------------------------------- the argv grammar
class Chooser(Protocol):
    def choice(self, options: Sequence[T]) -> T: ...
    def integer(self, lo: int, hi: int) -> int: ...
    def coin(self, p: float) -> bool: ...


class RandomChooser:
    """The benchmark's chooser: a seeded random.Random."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.r.randrange(len(options))]

    def integer(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def coin(self, p: float) -> bool:
        return self.r.random() < p


SIZES = [0, 1, 2, 3, 7, 8, 16, 64, 100, 255, 256, 1000, 1024, 4095, 4096, 16384, 99999, 2**31, 2**62, 2**63 - 1,
         10**23, -1, -256]
JUNK = ["", " ", "abc", "1,,2", "1e3", "0x10", "1_000", "١٦,٢٥٦", "16\n256", "(((", "]]", "16;rm -rf /", "∞",
        "\x1b[31mred", "-", "--", "nan", "None", "16 256", "16x256", "(16, 256)", "[1]", "9" * 400]
DTYPES = ["fp32", "fp16", "bf16", "int8", "int32", "float32", "fp8", "", "FP32", "fp32\n", "x" * 200]
RULES = ["P4.tile-budget", "O1.contiguous-1kb", "P99.nothing", "", "p4", "\n", "P4.tile-budget\nX"]
STRATEGIES = ["merge", "keep", "flatten", "nonsense", "", "\n"]
FLAVOURS = ["pypto-0.2.0", "pypto-9", "", "\t"]
STEPS = ["contract", "dims", "tiles", "loops", "kernel", "x", ""]

STATIC_COMMANDS = ("tile", "loop", "contract", "scaffold", "export", "lint", "kb list", "kb show", "kb validate",
                   "kb checks", "junk")
EXEC_COMMANDS = ("contract --run", "sim", "verify")


def _shape(c: Chooser) -> str:
    if c.coin(0.15):
        return c.choice(JUNK)
    rank = c.choice([0, 1, 2, 3, 4, 4, 5, 8, 16, 200]) if c.coin(0.3) else c.integer(1, 4)
    dims = [str(c.choice(SIZES)) if c.coin(0.4) else str(c.choice([1, 4, 16, 64, 256, 1024, 4096]))
            for _ in range(rank)]
    sep = c.choice([",", ",", ", ", "x"])
    return sep.join(dims)


def _int(c: Chooser) -> str:
    if c.coin(0.2):
        return c.choice(JUNK)
    return str(c.choice([*SIZES, 0, 1, 2, 5, 10, -2, -5]))


def _float(c: Chooser) -> str:
    return c.choice(["0", "0.001", "1", "2", "1e9", "-1", "nan", "inf", "abc", ""])


def _path(c: Chooser, sb: Sandbox) -> str:
    pool = c.choice([sb.tasks, sb.tasks, sb.hostile, sb.traps, sb.folders, sb.kernels])
    return c.choice(pool)


def _maybe(c: Chooser, argv: list[str], p: float, *items: str) -> None:
    if c.coin(p):
        argv.extend(items)


def argv_for(c: Chooser, sb: Sandbox, command: str) -> list[str]:
    """One argument vector for `command` (options in random order, some values hostile)."""
    words = command.split()
    argv: list[str] = [w for w in words if w != "--run"]
    opts: list[list[str]] = []

    def opt(p: float, *items: str) -> None:
        if c.coin(p):
            opts.append(list(items))

    kb = c.choice(sb.packs)
    if command in ("tile", "loop"):
        if c.coin(0.25):
            argv.append(_path(c, sb))
        opt(0.8, "--shape", _shape(c))
        opt(0.3, "--dtype", c.choice(DTYPES))
        opt(0.6, "--tile", _shape(c))
        if command == "tile":
            opt(0.4, "--reduce-dim", _int(c))
            opt(0.2, "--top", _int(c))
            opt(0.3, c.choice(["--candidates", "--no-candidates"]))
        else:
            opt(0.3, "--axis", _int(c))
            opt(0.3, "--loop-count", _int(c))
            opt(0.3, "--matmul")
    elif command.startswith("contract"):
        argv.append(_path(c, sb))
        if "--run" in words:
            opts.append(["--run"])
            opt(0.5, "--timeout", c.choice(["1", "2", "5", "0", "-1", "abc"]))
        opt(0.2, "--strategy", c.choice(STRATEGIES))
    elif command == "scaffold":
        argv.append(_path(c, sb))
        opt(0.7, "-o", c.choice(sb.output_targets()))
        opt(0.5, "--force")
        opt(0.2, "--flavour", c.choice(FLAVOURS))
    elif command == "export":
        argv.append(c.choice([*sb.folders, *sb.traps]))
        opt(0.9, "-o", c.choice(sb.output_targets()))
        opt(0.5, "--force")
    elif command == "lint":
        for _ in range(c.integer(0, 3)):
            argv.append(c.choice([*sb.kernels, *sb.hostile, *sb.traps, *sb.tasks]))
        opt(0.2, "--task", _path(c, sb))
        opt(0.1, "--flavour", c.choice(FLAVOURS))
        # --fix rewrites files: only ever on copies the sandbox owns (the kernels folder).
        opt(0.2, "--fix")
    elif command == "kb list":
        opt(0.4, "--step", c.choice(STEPS))
    elif command == "kb show":
        argv.append(c.choice(RULES))
    elif command == "kb validate":
        if c.coin(0.6):
            argv.append(c.choice(sb.packs))
    elif command in ("sim", "verify"):
        argv.append(_path(c, sb))
        opt(0.3, "--tile", _shape(c))
        opt(0.2, "--loop-count", _int(c))
        opt(0.8, "--timeout", c.choice(["2", "5", "abc", "0"]))
        if command == "sim":
            opt(0.2, "--sweep", c.choice(["tiles", "loops", "both", "x"]))
            opt(0.3, "--budget", c.choice(["1", "2", "0", "x"]))
        else:
            opt(0.3, "--scale", c.choice(["small", "full", "x"]))
    elif command == "junk":
        argv = [c.choice(["tiles", "--shape", "-x", "kb", "kb nothing", "\n", "lint", "tile"])]
        if c.coin(0.5):
            argv.append(c.choice(JUNK))
    if command not in ("kb checks", "junk"):
        opt(0.15, "--kb", kb)
    opt(0.4, "--json")
    opt(0.05, c.choice(["--bogus", "-q", "--help", "--json=1", "--shape"]))
    for i in range(len(opts)):  # shuffle the options with the chooser (reproducible under both drivers)
        j = c.integer(i, len(opts) - 1)
        opts[i], opts[j] = opts[j], opts[i]
    for o in opts:
        argv.extend(o)
    return argv


def draw_argv(c: Chooser, sb: Sandbox, commands: Sequence[str] = STATIC_COMMANDS) -> list[str]:
    return argv_for(c, sb, c.choice(list(commands)))


# ------------------------------------------------------------------------------- judging one run
@dataclass
class Verdict:
    """What one CLI run did wrong (empty `problems`: it kept every promise)."""

    argv: list[str]
    rc: int | None
    problems: list[str]
    stderr_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"argv": self.argv, "rc": self.rc, "problems": self.problems, "stderr": self.stderr_tail}


PROBLEMS = ("traceback", "hang", "crash", "bad-exit-code", "multi-line-error", "no-json-error", "silent-exit-2")


def judge(argv: Sequence[str], rc: int | None, stdout: str, stderr: str, *, hung: bool = False,
          signal_no: int | None = None) -> Verdict:
    """The CLI's public promises, checked on one run: exit 0/1/2, never a traceback, bad input is one
    line on stderr, and with --json even a bad input prints one JSON document with "error"."""
    problems: list[str] = []
    if hung:
        problems.append("hang")
    elif signal_no is not None:
        problems.append("crash")
    else:
        if "Traceback (most recent call last)" in stderr:
            problems.append("traceback")
        if rc not in (0, 1, 2):
            problems.append("bad-exit-code")
        asks_help = any(a in ("-h", "--help") for a in argv)
        if rc == 2 and not asks_help:
            lines = [ln for ln in stderr.splitlines()
                     if ln.strip() and not ln.startswith(("pypto-tui: note: ", "pypto-tui: warning: "))]
            if not lines:
                problems.append("silent-exit-2")
            elif len(lines) > 1 and "traceback" not in problems:
                problems.append("multi-line-error")
            if _asks_json(argv) and not _json_error(stdout):
                problems.append("no-json-error")
    tail = "\n".join(stderr.strip().splitlines()[-3:])
    return Verdict(list(argv), rc, problems, tail)


VALUE_OPTIONS = frozenset(("--shape", "--tile", "--dtype", "-o", "--output", "--kb", "--task", "--flavour", "--step",
                           "--strategy", "--reduce-dim", "--top", "--axis", "--loop-count", "--timeout", "--sweep",
                           "--budget", "--scale", "--memory-mb", "--session"))


def _asks_json(argv: Sequence[str]) -> bool:
    """Whether `--json` is the flag (not the value of an option like `--shape --json`, nor a file
    name after `--`)."""
    for i, a in enumerate(argv):
        if a == "--":
            return False
        if a == "--json" and not (i > 0 and argv[i - 1] in VALUE_OPTIONS):
            return True
    return False


def _json_error(stdout: str) -> bool:
    import json

    try:
        doc = json.loads(stdout)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("error"), str)


def one_error_line(stderr: str) -> str:
    """The single `pypto-tui: error:` line of a refused run (other lines may only be notes/warnings)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("pypto-tui: error: ")]
    others = [ln for ln in lines if not ln.startswith(("pypto-tui: error: ", "pypto-tui: note: ",
                                                       "pypto-tui: warning: "))]
    assert len(errors) == 1 and not others, stderr
    return errors[0]
