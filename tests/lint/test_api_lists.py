"""The per-release API lists of the pack (knowledge/default/api/) are true.

0.2.0's list is what `dir()` shows in the installed wheel (checked against the real package,
marker `sim`: importing pypto is all it takes, no kernel runs). 0.2.1's file lists only what that
release adds, so the 0.2.1 profile is a superset of 0.2.0.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pypto_tui.kb import bundled_pack_dir, get_kb
from pypto_tui.lint.profile import lint_settings

API = bundled_pack_dir() / "api"
_DIR_SCRIPT = """
import pypto
names = [n for n in dir(pypto) if not n.startswith("_")]
for ns in ("frontend", "experimental"):
    names += [f"{ns}.{n}" for n in dir(getattr(pypto, ns)) if not n.startswith("_")]
print("\\n".join(sorted(names)))
"""


_JIT_SCRIPT = """
import inspect, pypto
print(" ".join(p.name for p in inspect.signature(pypto.frontend.jit).parameters.values() if p.kind == p.KEYWORD_ONLY))
"""


def _names(file: str) -> set[str]:
    lines = (API / file).read_text(encoding="utf-8").splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


@pytest.mark.sim
def test_the_020_list_is_the_installed_wheels_namespace() -> None:
    # a child process: importing pypto sets up logging and loads its native library
    out = subprocess.run([sys.executable, "-c", _DIR_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert set(out.split()) == _names("pypto-0.2.0.txt")


@pytest.mark.sim
def test_the_020_jit_keywords_are_the_installed_decorators() -> None:
    out = subprocess.run([sys.executable, "-c", _JIT_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert set(out.split()) == lint_settings(get_kb()).profiles["0.2.0"].jit_options


def test_the_021_file_only_adds_names() -> None:
    added, base = _names("pypto-0.2.1-added.txt"), _names("pypto-0.2.0.txt")
    assert added and not added & base
    assert "jit" in added  # the pypto.jit alias
    profiles = lint_settings(get_kb()).profiles
    assert profiles["0.2.1"].api == base | added and profiles["0.2.0"].api == base


def test_the_jit_keywords_differ_as_the_releases_do() -> None:
    profiles = lint_settings(get_kb()).profiles
    old, new = profiles["0.2.0"].jit_options, profiles["0.2.1"].jit_options
    assert old - new == {"use_cache", "infer_controlflow_shape"} and new - old == {"new_ir"}
