"""A whole model's generated module is far larger than a task file (KernelBench level-3 ResNet101:
312 kernels, 1.24 MB, 205,443 syntax nodes): the linter reads kernel modules under their own bounds,
while the static reader keeps a task file's."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.errors import InputError
from pypto_tui.source_bounds import MAX_BYTES, MAX_KERNEL_BYTES

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "elu.py"


def _big_module(min_bytes: int) -> str:
    """The golden ELU module followed by enough distinct helper functions to pass `min_bytes`."""
    text = GOLDEN.read_text(encoding="utf-8")
    parts, size, i = [text], len(text), 0
    while size <= min_bytes:
        part = (f"\n\ndef helper_{i}(a, b):\n    \"\"\"Filler: a generated module's size.\"\"\"\n"
                f"    return a * {i} + b - ({i} % 7)\n")
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


@pytest.mark.slow  # libcst over 320 KB: about 10 s
def test_a_kernel_module_over_the_task_file_bound_is_linted(tmp_path: Path) -> None:
    f = tmp_path / "model_pypto.py"
    f.write_text(_big_module(MAX_BYTES + 64 * 1024), encoding="utf-8")
    r = CliRunner().invoke(app, ["lint", str(f), "--json"])
    assert "io-error" not in r.output and "cannot lint" not in r.output, r.output[-500:]
    assert r.exit_code == 0, r.output[-500:]


def test_a_kernel_module_over_its_own_bound_is_one_finding(tmp_path: Path) -> None:
    f = tmp_path / "huge_pypto.py"
    f.write_text(_big_module(MAX_KERNEL_BYTES + 1024), encoding="utf-8")
    r = CliRunner().invoke(app, ["lint", str(f)])
    assert r.exit_code != 0 and "reads at most" in r.output and "Traceback" not in r.output


def test_a_task_file_keeps_the_task_bound(tmp_path: Path, kb) -> None:
    from pypto_tui.contract.extract import extract_contract

    task = tmp_path / "task.py"
    task.write_text(_big_module(MAX_BYTES + 1024), encoding="utf-8")
    with pytest.raises(InputError, match="reads at most"):
        extract_contract(task, kb)
