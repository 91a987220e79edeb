"""Reading and writing the user's files safely: bounded reads, atomic writes, in-place fixes.

Three rules, one per function:
- `read_text` reads only a regular file, at most `max_bytes`, as UTF-8 (a FIFO would block,
  a device never ends, a 25 MB "task file" is not one); every refusal is one InputError line.
- `write_atomic` writes a temporary file beside the target and renames it over: a crash never
  leaves half a file. It never replaces anything but a regular file, with or without `force`
  (`--force` must not turn /dev/null into a regular file), treats a dangling symlink as an
  existing file, writes through a symlink to its target (but never out of the folder `within`
  the caller names: a link planted in an export folder must not aim the write elsewhere), replaces
  a file with other hard links rather than writing into it (the name written gets the new file;
  the other names keep the old content: a hard link planted in an export folder must not carry
  the write to a file outside it, and a full disk must not leave every name on half a file), and
  cleans the temporary files a killed run left behind.
- `rewrite_in_place` (lint --fix) changes a file's content and nothing else: same inode, mode,
  owner and hard links; a symlink is followed to the file it names. The space the new content
  needs is reserved before the first byte is written, so a full disk refuses the fix instead of
  leaving half a file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from pathlib import Path

from pypto_tui.errors import InputError

MAX_SOURCE_BYTES = 2 * 1024 * 1024
"""Largest task or kernel file read (a KernelBench task is a few KB; a 2 MB one is not a task)."""

STALE_TMP_SECONDS = 3600
"""A temporary file of ours with no live writer, older than this, is a leftover of a killed run."""

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symlink"}


CACHE_DIR_ENV = "PYPTO_TUI_CACHE_DIR"


def cache_root() -> Path:
    """`$PYPTO_TUI_CACHE_DIR`, else the user cache folder for pypto-tui: the compiler's results
    (`sim.cache`) and the tracer's graphs (`trace`, a layer below the design pipeline) live under it."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("pypto-tui"))


def kind_of(mode: int) -> str:
    """'a FIFO', 'a character device', ... for a stat mode (what the user pointed at, in words)."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


# ------------------------------------------------------------------------------------ reading
def _no_nul(p: str, what: str) -> None:
    """A path with a NUL byte names no file (the system calls refuse it with ValueError): say so."""
    if "\0" in p:
        shown = p.replace("\0", "\\0")
        raise InputError(f"{what} path '{shown}' contains a NUL byte: no file has such a name; give the path again")


def require_file(path: str | os.PathLike[str], what: str = "file") -> None:
    """InputError unless `path` is a regular file (symlinks followed), saying what it is instead."""
    p = os.fspath(path)
    _no_nul(p, what)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        kind = " (a dangling symlink)" if os.path.islink(p) else ""
        raise InputError(f"{what} {p} does not exist{kind}") from None
    except OSError as exc:
        raise InputError(f"{what} {p} cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{what} {p} is a folder: give a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {p} is {kind_of(st.st_mode)}, not a regular file: give a file")


def read_bytes(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file, refusing anything else and anything larger than `max_bytes`.

    The file is opened non-blocking and checked with fstat on the open descriptor, so a FIFO (or
    a file swapped for one after a check) is refused instead of blocking forever.
    """
    p = os.fspath(path)
    _no_nul(p, what)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        kind = " (a dangling symlink)" if os.path.islink(p) else ""
        raise InputError(f"{what} {p} does not exist{kind}") from None
    except IsADirectoryError:
        raise InputError(f"{what} {p} is a folder: give a file") from None
    except OSError as exc:
        raise InputError(f"{what} {p} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {p} is {kind_of(st.st_mode)}, not a regular file: give a file")
        if st.st_size > max_bytes:
            raise InputError(f"{what} {p} is {st.st_size} bytes: pypto-tui reads at most {max_bytes} here; "
                             "point at a source file")
        data = _read_all(fd, max_bytes)
        if data is None:
            raise InputError(f"{what} {p} is over {max_bytes} bytes: pypto-tui reads at most {max_bytes} here; "
                             "point at a source file")
        return data
    except OSError as exc:
        raise InputError(f"{what} {p} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _read_all(fd: int, max_bytes: int | None = None) -> bytes | None:
    """Everything left in an open file; None when it is longer than `max_bytes`."""
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 16):
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_SOURCE_BYTES) -> str:
    """`read_bytes` decoded as UTF-8 (a source file that is not UTF-8 is refused, not guessed)."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {os.fspath(path)} is not UTF-8 text (byte {exc.start}): "
                         "save it as UTF-8") from None


# ------------------------------------------------------------------------------------ writing
def _target_of(path: Path) -> tuple[Path, os.stat_result | None]:
    """Where a write to `path` lands (symlinks followed) and what is there now (None: nothing).

    A symlink, even a dangling one, counts as something that exists."""
    real = Path(os.path.realpath(path))
    try:
        return real, os.stat(real)
    except FileNotFoundError:
        return real, None


def check_writable(path: str | os.PathLike[str], force: bool = False) -> tuple[Path, os.stat_result | None]:
    """Refuse a write to `path` before any work is done: anything that is not a regular file
    (even with `force`), or an existing file (a dangling symlink included) without `force`.
    Returns where the write lands (symlinks followed) and what is there now."""
    path = Path(path)
    real, st = _target_of(path)
    exists = st is not None or path.is_symlink()
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path} is {kind_of(st.st_mode)}: pypto-tui only writes regular files, "
                         "even with --force; pick a file name")
    if exists and not force:
        what = "exists (a dangling symlink)" if st is None else "exists"
        raise InputError(f"{path} {what}: pass --force to overwrite it")
    return real, st


def write_atomic(path: str | os.PathLike[str], text: str, force: bool = False,
                 within: str | os.PathLike[str] | None = None) -> Path:
    """Write via a temporary file in the same folder and rename: a crash never leaves half a file.

    Refuses to replace an existing file unless `force` (nothing the user saved is lost silently),
    and refuses to replace anything that is not a regular file even with `force`. An existing
    file keeps its mode; a new one gets the mode a plain open() gives. With `within`, a write
    that would land outside that folder (through a symlink) is refused. A file with other hard
    links is replaced, never written into: the other names keep what they held. Returns `path`.
    """
    path = Path(path)
    real, st = check_writable(path, force)
    if within is not None:
        check_within(path, real, Path(within))
    folder = real.parent
    try:
        if path.is_symlink():
            if not folder.is_dir():
                raise InputError(f"{path} is a symlink to {real}, whose folder does not exist")
        else:
            folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write {path}: cannot create the folder {folder} ({exc.strerror})") from None
    clean_stale_temporaries(real)
    import tempfile  # here, not at the top: every read goes through this module, few writes do

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror} in {folder}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:  # mkstemp makes the file private (0600); give it the mode a plain open() would have.
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check_within(path: Path, real: Path, folder: Path) -> None:
    """InputError when the write to `path` (landing on `real`) leaves `folder` (symlinks followed)."""
    base = Path(os.path.realpath(folder))
    if real != base and base not in real.parents:
        raise InputError(f"{path} is a symlink to {real}, outside the output folder {folder}: pypto-tui does not "
                         "write through a link out of the folder it was given; remove the link or pick another folder")


def clean_stale_temporaries(target: Path) -> list[Path]:
    """Remove the temporary files an interrupted write of `target` left beside it.

    Ours are named `.NAME.PID.XXXX.tmp`: one whose writer is gone is removed at once; one in the
    older form (no pid) only once it is an hour old. Failures are ignored (best effort)."""
    removed: list[Path] = []
    prefix = f".{target.name}."
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        middle = name[len(prefix):-len(".tmp")]
        pid_text = middle.split(".", 1)[0] if "." in middle else ""
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if pid_text.isdigit():
                stale = not _pid_alive(int(pid_text))
            else:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# ------------------------------------------------------------------------------------ fixing in place
def rewrite_in_place(path: str | os.PathLike[str], old: str | None, new: str) -> Path:
    """Replace the content of the file at `path` (symlinks followed) by `new`, keeping its inode,
    mode, owner and hard links. Refuses when the file is not regular or changed since it was read
    as `old` (None: whatever it holds is replaced). Returns the file written (the symlink's target
    for a symlink).

    One write of the whole content, then a truncate when it shrank: the window in which a kill
    could leave a mix of both is a single system call."""
    p = Path(path)
    verb = "fix" if old is not None else "write"
    real = Path(os.path.realpath(p))
    data = new.encode("utf-8")
    try:
        fd = os.open(real, os.O_RDWR | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"cannot {verb} {p}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"cannot {verb} {p}: it is {kind_of(st.st_mode)}, not a regular file")
        current = (_read_all(fd) or b"") if old is not None else None
        if current is not None and old is not None and current != old.encode("utf-8"):
            raise InputError(f"cannot {verb} {p}: it changed while it was being linted; run lint --fix again")
        _reserve(fd, len(data), st.st_size)
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if current is None or len(data) < len(current):
            os.ftruncate(fd, len(data))
        with contextlib.suppress(OSError):
            os.fsync(fd)
    except OSError as exc:
        raise InputError(f"cannot {verb} {p}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return real


def _reserve(fd: int, size: int, current: int) -> None:
    """Allocate the blocks a rewrite to `size` bytes needs before anything is written: on a full
    disk (or past a file-size limit) the rewrite is refused with the file as it was. Where the
    file system cannot reserve space (EOPNOTSUPP, EINVAL), the rewrite goes on unreserved."""
    if size <= current or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return
        raise
