"""Static checks run with the tests: the import contracts (import-linter) and ruff.

The tools are dev dependencies (`pip install -e '.[dev]'`): a missing one fails these tests, it
does not skip them, so CI can never pass without checking the layers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    found = str(exe) if exe.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: it is a dev dependency (pip install -e '.[dev]')")
    return found


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def test_import_contracts_hold():
    """The layers (no circles), no UI library in the core, and code generation that does not re-plan."""
    out = _lint_imports(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A copy of the package (links resolved) with the project's import-linter configuration."""
    shutil.copytree(ROOT / "pypto_tui", tmp_path / "pypto_tui", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.tcss", "examples", "templates", "*.toml"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _broken(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode != 0, out.stdout[-2000:]
    return out.stdout


def test_layers_contract_catches_an_upward_import(tree_copy: Path):
    """The old circle: code generation importing the pipeline (design) breaks two contracts."""
    gen = tree_copy / "pypto_tui" / "codegen" / "generate.py"
    gen.write_text(gen.read_text() + "\nfrom pypto_tui.design import Pipeline  # noqa\n")
    text = _broken(_lint_imports(tree_copy, tree_copy))
    assert "Layers: each part of pypto_tui imports only the parts below it BROKEN" in text
    assert "Code generation renders the KernelPlan and does not re-plan BROKEN" in text
    assert "pypto_tui.codegen.generate -> pypto_tui.design" in text


def test_layers_contract_catches_a_low_layer_reaching_up(tree_copy: Path):
    probe = tree_copy / "pypto_tui" / "contract" / "probe.py"
    probe.write_text("import pypto_tui.tiles  # noqa\n")
    text = _broken(_lint_imports(tree_copy, tree_copy))
    assert "pypto_tui.contract.probe -> pypto_tui.tiles" in text


def test_layers_contract_refuses_an_unplaced_module(tree_copy: Path):
    """Exhaustive: a new top-level module must be given a layer before the contract passes."""
    (tree_copy / "pypto_tui" / "newthing.py").write_text("X = 1\n")
    text = _broken(_lint_imports(tree_copy, tree_copy))
    assert "newthing" in text


def test_the_core_may_not_import_a_ui_library(tree_copy: Path):
    plan = tree_copy / "pypto_tui" / "plan.py"
    plan.write_text(plan.read_text() + "\nimport rich  # noqa\n")
    text = _broken(_lint_imports(tree_copy, tree_copy))
    assert "Only the CLI and the app import a UI library BROKEN" in text


def test_ruff_is_clean():
    out = subprocess.run([_tool("ruff"), "check", "pypto_tui", "screens", "tests", "benchmarks"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]


CIRCLES = """
import grimp
g = grimp.build_graph("pypto_tui", exclude_type_checking_imports=True)
seen = set()
for m in sorted(g.modules):
    for imp in g.find_modules_directly_imported_by(m):
        if g.chain_exists(importer=imp, imported=m):
            seen.add(" <-> ".join(sorted((m, imp))))
print("\\n".join(sorted(seen)))
"""


def _circles(pythonpath: Path) -> list[str]:
    """Pairs of modules that import each other, directly or through others, late imports included
    (imports under TYPE_CHECKING are not run, so they are left out)."""
    out = subprocess.run([sys.executable, "-c", CIRCLES], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(pythonpath)}, cwd=pythonpath)
    assert out.returncode == 0, out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if line]


def test_no_module_imports_itself_back():
    """Issue 21: no import circles, within a layer too (module_test and verification were one)."""
    assert _circles(ROOT) == []


def test_a_late_import_back_is_a_circle(tree_copy: Path):
    scaled = tree_copy / "pypto_tui" / "sim" / "scaled.py"
    scaled.write_text(scaled.read_text() + "\n\ndef _late():\n    from pypto_tui.sim import verification\n"
                      "    return verification\n")
    assert "pypto_tui.sim.scaled <-> pypto_tui.sim.verify_shapes" in _circles(tree_copy)
