"""The wheel ships screens/ and knowledge/ (through the package symlinks), and so does the sdist."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.packaging


def _build(kind: str, src: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "--outdir", str(out), str(src)],
                   check=True, capture_output=True, timeout=300)
    return next(out.glob("*.whl" if kind == "wheel" else "*.tar.gz"))


def _assert_trees(names: list[str]) -> None:
    assert "pypto_tui/screens/app.py" in names
    assert "pypto_tui/knowledge/default/pack.toml" in names
    assert "pypto_tui/knowledge/default/rules.toml" in names
    assert "pypto_tui/kb.py" in names


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_wheel_and_sdist_carry_both_trees(tmp_path):
    pytest.importorskip("build")
    pytest.importorskip("hatchling")
    wheel = _build("wheel", ROOT, tmp_path / "w")
    _assert_trees(zipfile.ZipFile(wheel).namelist())
    sdist = _build("sdist", ROOT, tmp_path / "s")
    import tarfile

    with tarfile.open(sdist) as tf:
        tf.extractall(tmp_path / "x", filter="data")
    src = next((tmp_path / "x").iterdir())
    wheel2 = _build("wheel", src, tmp_path / "w2")
    _assert_trees(zipfile.ZipFile(wheel2).namelist())
