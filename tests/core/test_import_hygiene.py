"""The one-shot commands stay light: tile/loop/kb import neither Textual nor libcst nor torch nor rich
(with --json), and no other command's module (commands are built when invoked, cli.guard.LAZY)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import sys, io, contextlib
from pypto_tui.cli import app
argv = {argv!r}
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app(argv)
    except SystemExit:
        pass
heavy = sorted(m for m in ("textual", "libcst", "torch", "pypto", "rich") if m in sys.modules)
others = sorted(m for m in sys.modules if m.startswith("pypto_tui.cli.") and m.endswith("_cmd")
                and m != f"pypto_tui.cli.{{argv[0]}}_cmd")
print(__import__("json").dumps(heavy + others))
"""


@pytest.mark.parametrize("argv", [
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--json"],
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--family", "reduction", "--json"],
    ["loop", "--shape", "67108864", "--tile", "8192", "--family", "elementwise", "--json"],
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,16,256", "--json"],
    ["loop", "--shape", "67108864", "--tile", "8192", "--json"],
    ["tile", "--shape", "16,256,256", "--submodule", "layer1.0", "--json"],  # refused (no task) before any import
    ["kb", "list", "--json"],
    ["kb", "ops", "--json"],
])
def test_one_shot_commands_stay_light(argv):
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                         timeout=60, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_core_modules_import_no_ui():
    code = ("import sys; import pypto_tui.tiles, pypto_tui.loops, pypto_tui.kb, pypto_tui.design; "
            "print([m for m in ('textual','typer','rich','libcst') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


TILE_PROBE = """
import sys, io, contextlib
from pypto_tui.cli import app
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app({argv!r})
    except SystemExit:
        pass
print(__import__("json").dumps(sorted(m for m in sys.modules if m.startswith("pypto_tui"))))
"""
TILE_MODULES = {  # what `tile --shape ...` uses: the tile ranking, its plan records, the pack, the CLI shell
    "pypto_tui", "pypto_tui.catalogue", "pypto_tui.cli", "pypto_tui.cli.calc", "pypto_tui.cli.common",
    "pypto_tui.cli.guard", "pypto_tui.errors", "pypto_tui.estimate", "pypto_tui.examples", "pypto_tui.fileio",
    "pypto_tui.findings", "pypto_tui.kb", "pypto_tui.ops", "pypto_tui.ops.roles", "pypto_tui.plan",
    "pypto_tui.shapes", "pypto_tui.tile_space", "pypto_tui.tiles", "pypto_tui.vocabulary",
}  # not source_bounds: the bundled pack's templates are not parsed again on every run (kb validate does)


@pytest.mark.parametrize(("argv", "extra"), [
    (["tile", "--shape", "16,256,256", "--dtype", "fp32", "--reduce-dim", "1", "--json"], set()),
    (["tile", "--shape", "16,256,256", "--dtype", "fp32", "--reduce-dim", "1"],
     {"pypto_tui.cli.render", "pypto_tui.cli.views"}),  # the tables
])
def test_the_tile_command_imports_only_what_it_uses(argv, extra):
    """No operator registry (ops/__init__ loads it on first use), no loop planner, no cost pricing
    without a family, no contract reader, no design pipeline."""
    out = subprocess.run([sys.executable, "-c", TILE_PROBE.format(argv=argv)], capture_output=True, text=True,
                         timeout=60, check=True)
    imported = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert imported == TILE_MODULES | extra, (sorted(imported - TILE_MODULES - extra),
                                              sorted(TILE_MODULES | extra - imported))


def test_the_operator_registry_loads_on_first_use():
    code = ("import sys, pypto_tui.ops as ops, pypto_tui.ops.roles; before = 'pypto_tui.ops.registry' in sys.modules; "
            "n = len(ops.REGISTRY); print(before, n > 10, ops.kind is sys.modules['pypto_tui.ops.registry'].kind)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def test_a_pack_outside_the_package_still_has_its_templates_checked(tmp_path):
    """Only the installed pack's own folder skips the template parse; a copy of it (or any user
    pack) is checked on every load, and `kb validate` checks the bundled one too."""
    import shutil

    from pypto_tui.kb import PackError, bundled_pack_dir, is_bundled, load_pack

    assert is_bundled(bundled_pack_dir())
    copy = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), copy)
    assert not is_bundled(copy)
    broken = next((copy / "templates").rglob("*.py.tmpl"))
    broken.write_text("def broken(:\n", encoding="utf-8")
    with pytest.raises(PackError):
        load_pack(copy)
    link = tmp_path / "link"
    link.symlink_to(bundled_pack_dir(), target_is_directory=True)
    assert not is_bundled(link)
