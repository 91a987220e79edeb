"""Issue 15, items 1, 8 and 9: writing never replaces what is not a regular file, lint --fix edits in
place, temporary leftovers are cleaned, reads never block on a FIFO."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from hostile import FIXABLE_KERNEL, TASKS, one_error_line

from pypto_tui.errors import InputError
from pypto_tui.fileio import clean_stale_temporaries, read_text, rewrite_in_place, write_atomic

TASK = str(TASKS / "softmax_rows.py")


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _mknull(path: Path) -> bool:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        return False
    return True


# ------------------------------------------------------------------------------- write_atomic
def test_fifo_is_never_replaced_with_or_without_force(tmp_path: Path) -> None:
    fifo = tmp_path / "out.py"
    os.mkfifo(fifo)
    for force in (False, True):
        with pytest.raises(InputError, match="a FIFO: pypto-tui only writes regular files"):
            write_atomic(fifo, "x = 1\n", force=force)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_device_node_is_never_replaced(tmp_path: Path, run_cli) -> None:
    """`scaffold T -o /dev/null --force` as root replaced the system's /dev/null (here: a copy)."""
    null = tmp_path / "null"
    if not _mknull(null):
        pytest.skip("creating a device node needs root")
    rc, _, err = run_cli("scaffold", TASK, "-o", str(null), "--force")
    assert rc == 2 and "character device" in one_error_line(err)
    assert stat.S_ISCHR(os.lstat(null).st_mode)


def test_dangling_symlink_counts_as_existing(tmp_path: Path, run_cli) -> None:
    link = tmp_path / "kernel.py"
    link.symlink_to(tmp_path / "elsewhere.py")
    rc, _, err = run_cli("scaffold", TASK, "-o", str(link))
    assert rc == 2 and "exists (a dangling symlink): pass --force" in one_error_line(err)
    assert link.is_symlink() and not (tmp_path / "elsewhere.py").exists()
    rc, _, err = run_cli("scaffold", TASK, "-o", str(link), "--force")
    assert rc == 0, err
    assert link.is_symlink() and "class ModelNew" in (tmp_path / "elsewhere.py").read_text()


def test_force_writes_through_a_symlink_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.py"
    link.symlink_to("real.py")
    write_atomic(link, "new\n", force=True)
    assert link.is_symlink() and target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_unwritable_folder_names_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refuse(**kw: object) -> None:
        raise PermissionError(13, "Permission denied", str(Path(str(kw["dir"])) / ".out.py.123.abc.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "out.py"
    with pytest.raises(InputError) as exc:
        write_atomic(target, "x\n")
    assert str(exc.value).startswith(f"cannot write {target}: Permission denied")
    assert ".tmp" not in str(exc.value)


def test_stale_temporaries_of_a_killed_run_are_cleaned(tmp_path: Path) -> None:
    target = tmp_path / "out.py"
    dead = tmp_path / f".out.py.{_dead_pid()}.x1y2.tmp"
    alive = tmp_path / f".out.py.{os.getppid()}.x1y2.tmp"
    old_style = tmp_path / ".out.py.k3j4h5g6.tmp"
    young_old_style = tmp_path / ".out.py.a1b2c3d4.tmp"
    other = tmp_path / ".other.py.1.tmp"
    for p in (dead, alive, old_style, young_old_style, other):
        p.write_text("half a file")
    hour_ago = time.time() - 7200
    os.utime(old_style, (hour_ago, hour_ago))
    write_atomic(target, "x = 1\n")
    left = {p.name for p in tmp_path.iterdir()}
    assert dead.name not in left and old_style.name not in left
    assert {alive.name, young_old_style.name, other.name, "out.py"} <= left
    assert clean_stale_temporaries(target) == []


def test_existing_file_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "mine.py"
    target.write_text("# mine\n")
    with pytest.raises(InputError, match="exists: pass --force"):
        write_atomic(target, "x\n")
    assert target.read_text() == "# mine\n"


# ------------------------------------------------------------------------------- reading
def test_reading_a_fifo_does_not_block(tmp_path: Path, run_cli) -> None:
    fifo = tmp_path / "task.py"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        read_text(fifo, "task file")
    for args in (("contract", str(fifo)), ("tile", str(fifo)), ("scaffold", str(fifo))):
        rc, _, err = run_cli(*args, timeout=30)
        assert rc == 2 and "FIFO" in one_error_line(err), (args, err)
    rc, out, err = run_cli("lint", str(fifo), timeout=30)
    assert rc == 1 and "io-error" in out and "FIFO" in out
    assert time.monotonic() - t0 < 30


def test_read_text_bounds_and_encoding(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * 3000)
    with pytest.raises(InputError, match="reads at most 1000"):
        read_text(big, "task file", max_bytes=1000)
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_text(latin, "task file")


# ------------------------------------------------------------------------------- lint --fix
def test_lint_fix_keeps_mode_inode_links_and_follows_symlinks(tmp_path: Path, run_cli) -> None:
    real = tmp_path / "kernel.py"
    real.write_text(FIXABLE_KERNEL)
    os.chmod(real, 0o750)
    hard = tmp_path / "hard.py"
    os.link(real, hard)
    link = tmp_path / "link.py"
    link.symlink_to("kernel.py")
    inode = real.stat().st_ino
    rc, out, err = run_cli("lint", "--fix", str(link))
    assert rc == 0, out + err
    assert "fixed:" in err and "1.0 - x" not in real.read_text()
    assert link.is_symlink()
    st = real.stat()
    assert st.st_ino == inode and stat.S_IMODE(st.st_mode) == 0o750 and st.st_nlink == 2
    assert hard.read_text() == real.read_text()


def test_rewrite_in_place_refuses_a_file_that_changed(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text("a = 1\n")
    with pytest.raises(InputError, match="changed while it was being linted"):
        rewrite_in_place(f, "a = 2\n", "a = 3\n")
    assert f.read_text() == "a = 1\n"
    rewrite_in_place(f, "a = 1\n", "b = 22222\n")
    rewrite_in_place(f, "b = 22222\n", "c\n")  # shrinking truncates
    assert f.read_text() == "c\n"


def test_lint_fix_on_a_non_utf8_file_is_a_finding_not_a_traceback(tmp_path: Path, run_cli) -> None:
    bad = tmp_path / "k.py"
    bad.write_bytes(FIXABLE_KERNEL.encode() + b"# caf\xe9\n")
    rc, out, err = run_cli("lint", "--fix", str(bad))
    assert rc == 1 and "Traceback" not in err
    assert "io-error" in out and "not UTF-8" in out


def test_lint_dir_counts_unreadable_files(tmp_path: Path, run_cli) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "gone.py").symlink_to("nowhere.py")
    (tmp_path / "bin.py").write_bytes(bytes(range(256)))
    rc, out, err = run_cli("lint", str(tmp_path), timeout=30)
    assert rc == 1, err
    flagged = {line.split(":")[0] for line in out.splitlines() if "io-error" in line}
    assert {str(tmp_path / n) for n in ("pipe.py", "gone.py", "bin.py")} == flagged
    assert "clean" not in err


def test_lint_task_binary_is_bad_input(tmp_path: Path, run_cli) -> None:
    k = tmp_path / "k.py"
    k.write_text(FIXABLE_KERNEL)
    task = tmp_path / "task.py"
    task.write_bytes(bytes(range(256)))
    rc, _, err = run_cli("lint", str(k), "--task", str(task))
    assert rc == 2 and "not UTF-8" in one_error_line(err)


def test_lint_an_empty_path_is_refused_not_read_as_this_folder(tmp_path: Path, run_cli) -> None:
    """Path("") is ".": `lint "" --fix` used to fix every module of the current folder."""
    k = tmp_path / "k.py"
    k.write_text(FIXABLE_KERNEL)
    rc, _, err = run_cli("lint", "", str(k), "--fix", cwd=tmp_path)
    assert rc == 2 and "an argument is empty" in one_error_line(err)
    assert k.read_text() == FIXABLE_KERNEL
