"""Recall of `pypto-tui lint` on classic pitfalls planted one at a time in correct expert kernels.

    .venv/bin/python benchmarks/lint_recall.py [--json OUT.json] [--pypto 0.2.0|0.2.1|auto]
        [--pypto-src CHECKOUT]

Issue 24 measured the lint this way: take kernels written the way PyPTO's own authors write them
(`tests/lint/expert/*.py`, each of which lints clean), plant one pitfall, lint, and count whether
the rule that names it fires at its severity. The plants are written out by hand below, one small
edit per kernel and pitfall, so each is a change a person could make and a reader can check; a
pitfall that cannot be planted in a kernel without rewriting it (a cube tile in a vector kernel, a
loop tail in a kernel that already handles its tail with `valid_shape`) is not counted for it.

Severities follow authority (the pack's rules): what pypto 0.2.0 refuses or computes wrongly is an
error; the rule documents' advice is a warning by default and, for nesting, reported only with
`--strict`. The table prints caught / planted per pitfall for the default and the strict setting.
`tests/lint/test_lint_recall.py` runs the same plants and requires every one caught.

`--pypto-src` plants the same pitfalls in a few of PyPTO's own examples, read from a checkout of
hicann/pypto where they lie (their code is never copied here: the plants are edits by anchor,
`PYPTO_PLANTS`), and prints their table after ours. Their kernels are library kernels (no
ModelNew), so the rule documents' advice there is what `--strict` reports.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERT = ROOT / "tests" / "lint" / "expert"


@dataclass(frozen=True)
class Pitfall:
    """A class of mistake, the rule that must name it, and the level it must have."""

    name: str
    rules: tuple[str, ...]  # any of these names it (a reduction's alignment has its own id)
    level: str  # the level by default; "strict" means reported only with --strict
    strict_level: str


PITFALLS = {
    p.name: p
    for p in (
        Pitfall("missing tile shapes", ("API.tiles-before-ops",), "error", "error"),
        Pitfall("cube tile not a multiple of 16", ("B.matmul-cube-tiles",), "error", "error"),
        Pitfall("tile over budget", ("P4.tile-budget",), "warn", "error"),
        Pitfall("tile over the unified buffer", ("HW.ub-capacity",), "error", "error"),
        Pitfall("in-kernel reshape", ("P2.no-kernel-reshape",), "warn", "error"),
        Pitfall("last tile dim under 32 bytes", ("P4.last-dim-align", "HW.concat-reduce-align"), "error", "error"),
        Pitfall("misspelled pyto.", ("API.known-module",), "error", "error"),
        Pitfall("loop count leaves a tail", ("P6.loop-tail",), "error", "error"),
        Pitfall("loop inside a loop", ("P6.no-nested-loops",), "strict", "error"),
    )
}


def drop_tile_calls(src: str) -> str:
    """Every `set_vec_tile_shapes` / `set_cube_tile_shapes` line removed."""
    out = re.sub(r"^[ \t]*pypto\.set_(?:vec|cube)_tile_shapes\(.*\)[ \t]*\n", "", src, flags=re.M)
    if out == src:
        raise PlantError("no tile call to remove")
    return out


def nest_first_loop(src: str) -> str:
    """The first `for ... in pypto.loop(...)` wrapped in a one-trip outer `pypto.loop`: the body is
    the same, the loop is now inside a loop."""
    lines = src.splitlines(keepends=True)
    for i, line in enumerate(lines):
        found = re.match(r"^([ \t]*)for .* in pypto\.loop\(", line)
        if not found:
            continue
        indent = found.group(1)
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith(indent + " ")):
            end += 1
        body = ["    " + x if x.strip() else x for x in lines[i:end]]
        return "".join([*lines[:i], f"{indent}for outer in pypto.loop(1):\n", *body, *lines[end:]])
    raise PlantError("no pypto.loop to nest")


class PlantError(ValueError):
    """A plant whose text is not in the kernel: the kernel changed and the plant must follow."""


def replace_once(src: str, old: str, new: str) -> str:
    if src.count(old) != 1:
        raise PlantError(f"{old!r} occurs {src.count(old)} times, not once")
    return src.replace(old, new)


def edits(*pairs: tuple[str, str]):
    def plant(src: str) -> str:
        for old, new in pairs:
            src = replace_once(src, old, new)
        return src
    return plant


# kernel stem -> pitfall name -> the edit. Sizes in comments are what the edit makes.
PLANTS = {
    "blocked_exp": {
        "missing tile shapes": drop_tile_calls,
        # blocks of 64 x 512 under a (64, 512) tile: 32768 elements, 128 KiB a buffer
        "tile over budget": edits(("BR, BC = 32, 256", "BR, BC = 64, 512"), ("(16, BC)", "(64, BC)")),
        "in-kernel reshape": edits(("[i * BR, j * BC])\n", "[i * BR, j * BC])\n"
                                    "            block = pypto.reshape(block, [BR * BC])\n")),
        "last tile dim under 32 bytes": edits(("(16, BC)", "(16, 4)")),
        "misspelled pyto.": edits(("pypto.exp(block)", "pyto.exp(block)")),
        # 64 rows in blocks of 24: two trips cover 48
        "loop count leaves a tail": edits(("BR, BC = 32, 256", "BR, BC = 24, 256")),
    },
    "exp_any_rank": {
        "missing tile shapes": drop_tile_calls,
        "tile over budget": edits(("set_vec_tile_shapes(16, 512)", "set_vec_tile_shapes(16, 2048)"),
                                  ("[16, 512], [b * 16, 0], valid_shape=[valid, 512]",
                                   "[16, 2048], [b * 16, 0], valid_shape=[valid, 2048]")),
        "tile over the unified buffer": edits(("set_vec_tile_shapes(16, 512)", "set_vec_tile_shapes(16, 4096)"),
                                              ("[16, 512], [b * 16, 0], valid_shape=[valid, 512]",
                                               "[16, 4096], [b * 16, 0], valid_shape=[valid, 4096]")),
        "in-kernel reshape": edits(("valid_shape=[valid, 512])\n", "valid_shape=[valid, 512])\n"
                                    "        block = pypto.reshape(block, [16 * 512])\n")),
        "last tile dim under 32 bytes": edits(("(16, 512)", "(16, 4)")),
        "misspelled pyto.": edits(("pypto.exp(block)", "pyto.exp(block)")),
        "loop inside a loop": nest_first_loop,
    },
    "exp_reshape_tail": {
        "missing tile shapes": drop_tile_calls,
        "last tile dim under 32 bytes": edits(("pypto.set_vec_tile_shapes(8, C)\n        flat",
                                               "pypto.set_vec_tile_shapes(8, 4)\n        flat")),
        "misspelled pyto.": edits(("pypto.exp(flat)", "pyto.exp(flat)")),
        "loop inside a loop": nest_first_loop,
    },
    "exp_shared_tile": {
        "missing tile shapes": drop_tile_calls,
        # the whole (32, 1024) input under the shared (64, 1024) tile: clipped to 32768 elements
        "tile over budget": edits(("SHAPE = (8, 1024)", "SHAPE = (32, 1024)")),
        "in-kernel reshape": edits(("out.move(pypto.exp(x))",
                                    "out.move(pypto.reshape(pypto.exp(pypto.reshape(x, [8 * 1024])), [8, 1024]))")),
        "last tile dim under 32 bytes": edits(("SHARED_TILE = (64, 1024)", "SHARED_TILE = (64, 4)")),
        "misspelled pyto.": edits(("pypto.exp(x)", "pyto.exp(x)")),
    },
    "halves_from_shape": {
        "missing tile shapes": drop_tile_calls,
        "in-kernel reshape": edits(("half = pypto.view(x, [rows, width], [0, p * width])\n",
                                    "half = pypto.view(x, [rows, width], [0, p * width])\n"
                                    "        half = pypto.reshape(half, [rows * width])\n")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(16, width)", "set_vec_tile_shapes(16, 4)")),
        "misspelled pyto.": edits(("pypto.exp(half)", "pyto.exp(half)")),
    },
    "layer_norm_unrolled": {
        "missing tile shapes": drop_tile_calls,
        # rows of 4096 features under a (8, 4096) tile
        "tile over budget": edits(("R, C = 64, 512", "R, C = 64, 4096")),
        "in-kernel reshape": edits(("        mean = ", "        part = pypto.reshape(part, [n * ROWS * C])\n"
                                    "        mean = ")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(ROWS, C)", "set_vec_tile_shapes(ROWS, 4)")),
        "misspelled pyto.": edits(("pypto.rsqrt(", "pyto.rsqrt(")),
        # 64 rows in blocks of 24 (unrolled 4 and 1): two trips cover 48
        "loop count leaves a tail": edits(("ROWS = 8\n", "ROWS = 24\n")),
    },
    "matmul_m_loop": {
        "missing tile shapes": drop_tile_calls,
        "cube tile not a multiple of 16": edits(("[64, 64], [64, 128, 256]", "[64, 72], [64, 128, 256]")),
        "misspelled pyto.": edits(("pypto.matmul(", "pyto.matmul(")),
        # 128 rows in blocks of 48: two trips cover 96
        "loop count leaves a tail": edits(("MB = 64\n", "MB = 48\n")),
        "loop inside a loop": nest_first_loop,
    },
    "matmul_b_trans": {
        "missing tile shapes": drop_tile_calls,
        # kL0 = 40: not a multiple of the cube's 16 elements
        "cube tile not a multiple of 16": edits(("[64, 256], [64, 128]", "[40, 200], [64, 128]")),
        "misspelled pyto.": edits(("pypto.matmul(", "pyto.matmul(")),
    },
    "bmm_batch_loop": {
        "missing tile shapes": drop_tile_calls,
        # nL0 = 56
        "cube tile not a multiple of 16": edits(("[64, 128], [64, 64])", "[64, 128], [56, 56])")),
        "misspelled pyto.": edits(("pypto.matmul(", "pyto.matmul(")),
        "loop inside a loop": nest_first_loop,
    },
    "matmul_relu_epilogue": {
        "missing tile shapes": drop_tile_calls,
        # nL0 = 120
        "cube tile not a multiple of 16": edits(("[64, 256], [128, 128]", "[64, 256], [120, 120]")),
        # a (128, 256) fp32 vec tile: 32768 elements
        "tile over budget": edits(("set_vec_tile_shapes(64, 128)", "set_vec_tile_shapes(128, 256)")),
        # a (128, 512) fp32 tile: 256 KiB a buffer
        "tile over the unified buffer": edits(("set_vec_tile_shapes(64, 128)", "set_vec_tile_shapes(128, 512)")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(64, 128)", "set_vec_tile_shapes(64, 4)")),
        "misspelled pyto.": edits(("pypto.relu(", "pyto.relu(")),
    },
    "attention_scores": {
        "missing tile shapes": drop_tile_calls,
        # kL0 = 24
        "cube tile not a multiple of 16": edits(("[32, 32], [64, 64]", "[24, 24], [64, 64]")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(1, 1, 64, 64)",
                                                "set_vec_tile_shapes(1, 1, 64, 4)")),
        "misspelled pyto.": edits(("pypto.matmul(", "pyto.matmul(")),
    },
    "matmul_n_loop": {
        "missing tile shapes": drop_tile_calls,
        # nL0 = 120
        "cube tile not a multiple of 16": edits(("[128, 256])", "[120, 240])")),
        "misspelled pyto.": edits(("pypto.matmul(", "pyto.matmul(")),
        # 1024 weight rows in blocks of 384: two trips cover 768
        "loop count leaves a tail": edits(("NB = 256\n", "NB = 384\n")),
        "loop inside a loop": nest_first_loop,
    },
    "matmul_k_chunks": {
        "missing tile shapes": drop_tile_calls,
        # kL0 = 72
        "cube tile not a multiple of 16": edits(("[64, 256], [128, 128]", "[72, 216], [128, 128]")),
        "tile over budget": edits(("set_vec_tile_shapes(64, 256)", "set_vec_tile_shapes(128, 256)")),
        "misspelled pyto.": edits(("pypto.zeros(", "pyto.zeros(")),
        # K = 1024 in chunks of 384: two trips cover 768
        "loop count leaves a tail": edits(("KB = 256\n", "KB = 384\n")),
        "loop inside a loop": nest_first_loop,
    },
    "linear_bias_relu": {
        "missing tile shapes": drop_tile_calls,
        # nL0 = 100
        "cube tile not a multiple of 16": edits(("[64, 128], [128, 128])", "[64, 128], [100, 100])")),
        "tile over budget": edits(("set_vec_tile_shapes(64, 256)", "set_vec_tile_shapes(128, 256)")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(64, 256)", "set_vec_tile_shapes(64, 4)")),
        "misspelled pyto.": edits(("pypto.relu(", "pyto.relu(")),
    },
    "relu_narrow_rows": {
        "missing tile shapes": drop_tile_calls,
        # 8192 rows of 4 under a (8192, 4) tile
        "tile over budget": edits(("set_vec_tile_shapes(512, C)", "set_vec_tile_shapes(8192, C)"),
                                  ("R, C = 4096, 4", "R, C = 8192, 4")),
        "in-kernel reshape": edits(("out.move(pypto.relu(x))",
                                    "out.move(pypto.reshape(pypto.relu(pypto.reshape(x, [R * C])), [R, C]))")),
        "misspelled pyto.": edits(("pypto.relu(x)", "pyto.relu(x)")),
    },
    "rms_norm_helpers": {
        "missing tile shapes": drop_tile_calls,
        "tile over budget": edits(("R, C = 64, 512", "R, C = 64, 2048")),
        "in-kernel reshape": edits(("    ms = pypto.sum(", "    block = pypto.reshape(block, [ROWS * C])\n"
                                    "    ms = pypto.sum(")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(ROWS, C)", "set_vec_tile_shapes(ROWS, 4)")),
        "misspelled pyto.": edits(("pypto.rsqrt(", "pyto.rsqrt(")),
        # 64 rows in blocks of 24: two trips cover 48
        "loop count leaves a tail": edits(("ROWS = 16\n", "ROWS = 24\n")),
        "loop inside a loop": nest_first_loop,
    },
    "softmax_dynamic_rows": {
        "missing tile shapes": drop_tile_calls,
        "tile over budget": edits(("COLS = 512\n", "COLS = 4096\n")),
        "in-kernel reshape": edits(("    peak = pypto.amax(", "    block = pypto.reshape(block, [BLOCK * COLS])\n"
                                    "    peak = pypto.amax(")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(8, COLS)", "set_vec_tile_shapes(8, 4)")),
        "misspelled pyto.": edits(("pypto.exp(", "pyto.exp(")),
        "loop inside a loop": nest_first_loop,
    },
}


# PyPTO's examples (hicann/pypto @ 883e7dfb0): path in the checkout -> pitfall -> the edit.
_ADD = "examples/01_beginner/transform/add_scalar_loop_view_assemble.py"
_SOFTMAX = "examples/02_intermediate/operators/softmax/softmax.py"
_LAYER_NORM = "examples/02_intermediate/basic_nn/layer_normalization/layer_norm.py"
_MATMUL = "examples/01_beginner/compute/matmul_ops.py"
_MM_HEAD = ("def matmul_kernel(\n    a: pypto.Tensor([], pypto.DT_FP32), b: pypto.Tensor([], pypto.DT_FP32), "
            "out: pypto.Tensor([], pypto.DT_FP32)\n):\n")
_MM_TILE = "    pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])\n"
PYPTO_PLANTS = {
    _ADD: {
        "missing tile shapes": drop_tile_calls,
        # the views of the inputs flattened for the add and back
        "in-kernel reshape": edits(("t3_sub = t0_sub + t1_sub",
                                    "t3_sub = pypto.reshape(pypto.reshape(t0_sub, [n * s * d]) + "
                                    "pypto.reshape(t1_sub, [n * s * d]), [tile_b, n, s, d])")),
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(1, 4, 1, 64)", "set_vec_tile_shapes(1, 4, 1, 4)")),
        "misspelled pyto.": edits(("pypto.view(input1", "pyto.view(input1")),
        # 32 batches in blocks of 3: ten trips cover 30
        "loop count leaves a tail": edits(("tile_b = 1\n", "tile_b = 3\n")),
        "loop inside a loop": nest_first_loop,
    },
    _SOFTMAX: {
        "missing tile shapes": drop_tile_calls,
        # the rows of 4 fp32 softmax reduces along: 16 bytes
        "last tile dim under 32 bytes": edits(("set_vec_tile_shapes(1, 4, 1, 64)", "set_vec_tile_shapes(1, 4, 1, 4)")),
        "misspelled pyto.": edits(("pypto.exp(sub)", "pyto.exp(sub)")),
    },
    _LAYER_NORM: {
        "missing tile shapes": drop_tile_calls,
        "misspelled pyto.": edits(("    std = pypto.sqrt(var_eps)", "    std = pyto.sqrt(var_eps)")),
        # the rows of 4 fp32 layer norm reduces along: 16 bytes
        "last tile dim under 32 bytes": edits(("    pypto.set_vec_tile_shapes(64, 128)\n    out = layernorm_core(",
                                               "    pypto.set_vec_tile_shapes(64, 4)\n    out = layernorm_core(")),
    },
    _MATMUL: {
        "missing tile shapes": drop_tile_calls,
        # in the first kernel, matmul_kernel (anchored by its signature)
        "cube tile not a multiple of 16": edits((_MM_HEAD + _MM_TILE,
                                                 _MM_HEAD + _MM_TILE.replace("[64, 64])", "[64, 40])"))),
        "misspelled pyto.": edits((_MM_HEAD + _MM_TILE + "    out[:] = pypto.matmul(",
                                   _MM_HEAD + _MM_TILE + "    out[:] = pyto.matmul(")),
    },
}


@dataclass(frozen=True)
class Outcome:
    kernel: str
    pitfall: str
    default_level: str | None  # the planted rule's level by default (None: not reported)
    strict_level: str | None
    clean_before: bool  # the rule was silent on the correct kernel

    @property
    def caught(self) -> bool:
        want = PITFALLS[self.pitfall]
        default_ok = self.default_level is None if want.level == "strict" else self.default_level == want.level
        return self.clean_before and default_ok and self.strict_level == want.strict_level


def _level(findings, rules: tuple[str, ...]) -> str | None:
    levels = {f.level for f in findings if f.rule in rules}
    for level in ("error", "warn", "info"):
        if level in levels:
            return level
    return None


def measure(pypto: str = "0.2.0", pypto_src: Path | None = None) -> list[Outcome]:
    """Every plant linted by default and with --strict (PyPTO's examples' plants with `pypto_src`)."""
    sys.path.insert(0, str(ROOT))
    from pypto_tui.kb import get_kb
    from pypto_tui.lint import lint_source

    kb = get_kb()
    out = []
    sources = ({rel: pypto_src / rel for rel in PYPTO_PLANTS} if pypto_src is not None
               else {stem: EXPERT / f"{stem}.py" for stem in PLANTS})
    for stem, path in sources.items():
        plants = PYPTO_PLANTS[stem] if pypto_src is not None else PLANTS[stem]
        clean = path.read_text(encoding="utf-8")
        for name, plant in plants.items():
            rule = PITFALLS[name].rules
            broken = plant(clean)
            before = lint_source(clean, str(path), kb, pypto=pypto, strict=True)
            out.append(Outcome(
                stem, name,
                _level(lint_source(broken, str(path), kb, pypto=pypto, strict=False), rule),
                _level(lint_source(broken, str(path), kb, pypto=pypto, strict=True), rule),
                _level(before, rule) is None,
            ))
    return out


def table(outcomes: list[Outcome]) -> str:
    rows = ["| pitfall | rule | caught / planted | default level | strict level |", "|---|---|---|---|---|"]
    for name, p in PITFALLS.items():
        mine = [o for o in outcomes if o.pitfall == name]
        if not mine:
            continue
        caught = sum(o.caught for o in mine)
        default = p.level if p.level != "strict" else "(not reported)"
        rules = ", ".join(f"`{r}`" for r in p.rules)
        rows.append(f"| {name} | {rules} | {caught}/{len(mine)} | {default} | {p.strict_level} |")
    missed = [o for o in outcomes if not o.caught]
    for o in missed:
        rows.append(f"\nMISSED {o.kernel} / {o.pitfall}: default {o.default_level}, strict {o.strict_level}, "
                    f"silent on the correct kernel: {o.clean_before}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pypto", default="0.2.0")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pypto-src", type=Path, help="a checkout of hicann/pypto: plant in its examples too")
    args = parser.parse_args()
    outcomes = measure(args.pypto)
    print(table(outcomes))
    total = sum(o.caught for o in outcomes)
    print(f"\n{total}/{len(outcomes)} plants caught at their severity (pypto {args.pypto})")
    if args.pypto_src is not None:
        theirs = measure(args.pypto, args.pypto_src)
        print("\nPyPTO's examples:\n" + table(theirs))
        caught = sum(o.caught for o in theirs)
        print(f"\n{caught}/{len(theirs)} plants in PyPTO's examples caught at their severity (pypto {args.pypto})")
        outcomes = outcomes + theirs
        total += caught
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ | {"caught": o.caught} for o in outcomes], indent=1))
    return 0 if total == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
