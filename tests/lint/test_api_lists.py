"""The per-release API lists of the pack (knowledge/default/api/) are true.

0.2.0's list is what `dir()` shows in the installed wheel (checked against the real package,
marker `sim`: importing pypto is all it takes, no kernel runs). 0.2.1's list is read from PyPTO's
sources by benchmarks/lint_api_profiles.py (its header names the commit), and the 0.2.1 profile
is that list joined with 0.2.0's.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_tui.kb import bundled_pack_dir, get_kb
from pypto_tui.lint.profile import lint_settings

API = bundled_pack_dir() / "api"
SOURCES = Path("/work/pypto-src")
_GENERATOR = Path(__file__).resolve().parents[2] / "benchmarks" / "lint_api_profiles.py"


def from_source(src: Path) -> tuple[list[str], list[str]]:
    """The generator's reading of a checkout (it lives with the benchmarks, outside the package)."""
    spec = importlib.util.spec_from_file_location("lint_api_profiles", _GENERATOR)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.from_source(src)  # type: ignore[no-any-return]
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


def test_the_021_list_is_read_from_the_sources_and_extends_020() -> None:
    head = (API / "pypto-0.2.1.txt").read_text(encoding="utf-8").splitlines()[:4]
    assert any("at commit " in line and "hicann/pypto" in " ".join(head) for line in head)
    names, base = _names("pypto-0.2.1.txt"), _names("pypto-0.2.0.txt")
    # what PyPTO's authors use today and the stale 0.2.1 snapshot lacked (issue 24)
    assert {"jit", "PrecisionType", "atomic_add", "experimental.online_softmax", "isnan", "error"} <= names
    profiles = lint_settings(get_kb()).profiles
    assert profiles["0.2.1"].api == base | names and profiles["0.2.0"].api == base
    assert "PrecisionType" not in profiles["0.2.0"].api


@pytest.mark.skipif(not SOURCES.is_dir(), reason="no PyPTO checkout at /work/pypto-src")
def test_the_021_list_is_what_the_generator_reads_now() -> None:
    names, jit = from_source(SOURCES)
    assert set(names) == _names("pypto-0.2.1.txt")
    assert set(jit) == lint_settings(get_kb()).profiles["0.2.1"].jit_options


def test_the_generator_reads_a_package_as_python_would(tmp_path: Path) -> None:
    pkg = tmp_path / "python" / "pypto"
    (pkg / "frontend").mkdir(parents=True)
    (pkg / "experimental").mkdir()
    (pkg / "__init__.py").write_text("from .ops import *\nfrom .enum import DT_X as DT_Y\nfrom . import frontend\n"
                                     "from . import experimental\n_hidden = 1\nVERSION = '1'\n")
    (pkg / "ops.py").write_text("import torch\nfrom typing import Any\n\ndef exp(x):\n    pass\n\n"
                                "def _private():\n    pass\n\nclass Tile:\n    pass\n")
    (pkg / "enum.py").write_text("DT_X = 1\n")
    (pkg / "error.py").write_text("class FeError(Exception):\n    pass\n")
    (pkg / "frontend" / "__init__.py").write_text("from .entry import jit\n")
    (pkg / "frontend" / "entry.py").write_text("def jit(func=None, *, new_ir=True, host_options=None):\n    pass\n")
    (pkg / "experimental" / "__init__.py").write_text("__all__ = ['online_softmax']\nfrom .a import *\n")
    names, jit = from_source(tmp_path)
    assert set(names) == {"exp", "Tile", "torch", "Any", "DT_Y", "frontend", "experimental", "ops", "enum",
                          "error", "VERSION", "frontend.jit", "frontend.entry", "experimental.online_softmax"}
    assert jit == ["host_options", "new_ir"]


def test_the_jit_keywords_differ_as_the_releases_do() -> None:
    profiles = lint_settings(get_kb()).profiles
    old, new = profiles["0.2.0"].jit_options, profiles["0.2.1"].jit_options
    assert old - new == {"use_cache", "infer_controlflow_shape"}
    assert new - old == {"new_ir", "create_new_logical_tensor"}
