"""Writes never go through a hard link and never leave half a file.

`scaffold -o FILE --force` onto a hard-linked file used to rewrite it in place: on a full disk both
names were left holding the first 4096 bytes. `export -o DIR --force` wrote through a hard link in
DIR into a file outside it. A "full disk" here is a file-size limit (RLIMIT_FSIZE) on the CLI's
process: a write past it fails with EFBIG as a full disk fails with ENOSPC, and no root is needed."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

from hostile import FIXABLE_KERNEL, one_error_line
from support import PYPTO_TUI

GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "softmax_rows.py"
OLD = "# the user's kernel\n"
LIMIT = 4096


def _run_limited(*args: str, cwd: Path, limit: int = LIMIT) -> tuple[int, str, str]:
    """The CLI with files capped at `limit` bytes (a full disk for anything longer)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([PYPTO_TUI, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
                          preexec_fn=cap, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def test_scaffold_onto_a_hard_link_on_a_full_disk_leaves_both_names_whole(tmp_path: Path, run_cli) -> None:
    rc, out, _ = run_cli("scaffold", str(GOOD))
    limit = len(out.encode()) // 2
    assert rc == 0 and limit > len(OLD)  # the module is longer than the "disk" takes
    first, second = tmp_path / "kernel.py", tmp_path / "kernel_link.py"
    first.write_text(OLD)
    os.link(first, second)
    rc, _, err = _run_limited("scaffold", str(GOOD), "-o", str(first), "--force", cwd=tmp_path, limit=limit)
    assert rc == 2 and "cannot write" in one_error_line(err)
    assert first.read_text() == OLD and second.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.py", "kernel_link.py"]  # no temporary left


def test_export_does_not_write_through_a_hard_link_out_of_its_folder(tmp_path: Path, run_cli) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    tasks.mkdir()
    out.mkdir()
    shutil.copy(GOOD, tasks / "softmax_rows.py")
    victim = tmp_path / "victim.py"
    victim.write_text(OLD)
    os.link(victim, out / "softmax_rows.py")
    rc, _, err = run_cli("export", str(tasks), "-o", str(out), "--force")
    assert rc == 0, err
    assert victim.read_text() == OLD and victim.stat().st_nlink == 1
    assert "class ModelNew" in (out / "softmax_rows.py").read_text()


def test_lint_fix_on_a_full_disk_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """lint --fix keeps the inode (and so the hard links): the space the fix needs is reserved
    before the first byte is written. The fix here grows the file past the limit."""
    kernel = tmp_path / "k.py"
    padded = FIXABLE_KERNEL + "\n#" + "-" * (LIMIT - len(FIXABLE_KERNEL) - 3) + "\n"
    assert len(padded.encode()) == LIMIT
    kernel.write_text(padded)
    hard = tmp_path / "hard.py"
    os.link(kernel, hard)
    rc, _, err = _run_limited("lint", "--fix", str(kernel), cwd=tmp_path)
    assert rc == 2 and "cannot fix" in one_error_line(err)
    assert kernel.read_text() == padded and hard.read_text() == padded
    rc, _, err = _run_limited("lint", "--fix", str(kernel), cwd=tmp_path, limit=2 * LIMIT)  # room: fixed
    assert rc == 0, err
    assert "1.0 - x" not in kernel.read_text() and hard.read_text() == kernel.read_text()
