"""The one-shot commands stay light: tile/loop import neither Textual nor libcst nor torch."""

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
print(__import__("json").dumps(heavy))
"""


@pytest.mark.parametrize("argv", [
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--json"],
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--family", "reduction", "--json"],
    ["loop", "--shape", "67108864", "--tile", "8192", "--family", "elementwise", "--json"],
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,16,256", "--json"],
    ["loop", "--shape", "67108864", "--tile", "8192", "--json"],
    ["kb", "list", "--json"],
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
