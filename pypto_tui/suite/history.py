"""The run history: one SQLite file (stdlib sqlite3) that every suite run writes to.

Why SQLite and these settings:
- a suite killed with `kill -9` must lose nothing it had finished: each task's row is committed
  the moment the task ends (one short transaction), so `--resume` finds every finished task;
- several suites (or a suite and `runs show`) may use the file at once: WAL lets readers go on
  while one writer commits, `BEGIN IMMEDIATE` takes the write lock up front (no deadlock between
  two upgrading readers), and `busy_timeout` makes a writer wait for the lock instead of failing;
- a task is recorded once per run: (run_id, name) is the primary key and rows are inserted, never
  replaced, so a resumed run cannot record a task twice.

Within one process only the thread that owns the `History` writes (the suite's main loop); the
pool threads hand their records to it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pypto_tui.errors import InputError

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000
MAX_ROW_ID = 2**63 - 1
"""The largest integer SQLite stores: no run number, `last-N` or `--limit` beyond it names anything."""
MAX_PID = 2**31 - 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    command TEXT NOT NULL,
    folder TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    total INTEGER NOT NULL,
    task_args TEXT NOT NULL,
    scheduler TEXT NOT NULL,
    workers INTEGER,
    host TEXT,
    pid INTEGER,
    tool_version TEXT,
    tool_commit TEXT,
    pypto_version TEXT,
    pack_name TEXT,
    pack_version TEXT,
    criterion TEXT,
    wall_s REAL
);
CREATE TABLE IF NOT EXISTS tasks (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    verdict TEXT NOT NULL,
    exit_code INTEGER,
    errors TEXT NOT NULL,
    wall_s REAL,
    peak_rss_mb REAL,
    family TEXT,
    design TEXT NOT NULL,
    record TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    worker TEXT,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX IF NOT EXISTS tasks_by_name ON tasks(name);
"""

RUN_COLUMNS = ("id", "command", "folder", "started_at", "finished_at", "status", "total", "task_args", "scheduler",
               "workers", "host", "pid", "tool_version", "tool_commit", "pypto_version", "pack_name", "pack_version",
               "criterion", "wall_s")
TASK_COLUMNS = ("run_id", "name", "path", "verdict", "exit_code", "errors", "wall_s", "peak_rss_mb", "family",
                "design", "record", "started_at", "finished_at", "worker")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


DATA_DIR_ENV = "PYPTO_TUI_DATA_DIR"


def default_db_path() -> Path:
    """`$PYPTO_TUI_DATA_DIR/runs.sqlite`, else the platform's data folder
    (`~/.local/share/pypto-tui/runs.sqlite` on Linux)."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser() / "runs.sqlite"
    from platformdirs import user_data_dir

    return Path(user_data_dir("pypto-tui", appauthor=False)) / "runs.sqlite"


@dataclass
class TaskRow:
    """One task of one run, as stored. `record` is the single-task command's own JSON document."""

    name: str
    path: str
    verdict: str
    exit_code: int | None = None
    errors: list[str] = field(default_factory=list)
    wall_s: float | None = None
    peak_rss_mb: float | None = None
    family: str | None = None
    design: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    worker: str | None = None
    run_id: int | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskRow:
        known: dict[str, Any] = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


@dataclass
class RunInfo:
    """One suite run, as stored (see the `runs` table)."""

    id: int
    command: str
    folder: str
    started_at: str
    finished_at: str | None
    status: str
    total: int
    task_args: list[str]
    scheduler: str
    workers: int | None
    host: str | None
    pid: int | None
    tool_version: str | None
    tool_commit: str | None
    pypto_version: str | None
    pack_name: str | None
    pack_version: str | None
    criterion: str | None
    wall_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def live_status(self) -> str:
        """`status`, except that a `running` run whose process on this host is gone shows `killed`
        (kill -9 leaves no chance to write more; `--resume` finishes it)."""
        if self.status == "running" and self.host == socket.gethostname() and self.pid and not pid_alive(self.pid):
            return "killed"
        return self.status


def pid_alive(pid: int) -> bool:
    """Is process `pid` running (a zombie is not)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


class History:
    """The run history in one SQLite file. Open it with `History.open(path)` (the file and its
    folder are created), use it from one thread, close it (or use it as a context manager)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: Path | None = None) -> History:
        p = Path(path) if path is not None else default_db_path()
        if p.exists() and not p.is_file():
            raise InputError(f"--db {p}: not a file; give the path of a SQLite file (it is created if missing)")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"--db {p}: cannot open it ({exc}); give a writable path") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise InputError(f"--db {p}: written by a newer pypto-tui (schema {version}); upgrade, or use "
                                 f"another file")
            with _write(conn):
                for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                    conn.execute(stmt)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            _check_schema(conn, p)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise InputError(f"--db {p}: not a pypto-tui run history ({exc}); give another file") from None
        except InputError:
            conn.close()
            raise
        return cls(conn, p)

    @classmethod
    def open_read(cls, path: Path) -> History:
        """The history opened for reading only (`runs`, `runs show`, `runs diff`): nothing is written,
        not the schema and not the journal mode, so a read-only file, a read-only folder or an
        immutable file can be read. A WAL history in a folder where SQLite cannot create its
        shared-memory file is opened as immutable (what is committed to the file is read)."""
        p = Path(path)
        if not p.is_file():
            raise InputError(f"--db {p}: not a file; give the path of a pypto-tui run history")
        uri = p.resolve().as_uri()
        failure: sqlite3.Error | None = None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(f"{uri}?{flags}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                failure = exc
                continue
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _check_schema(conn, p)
            except sqlite3.OperationalError as exc:  # cannot open (no -shm in a read-only folder): try the next
                conn.close()
                failure = exc
                continue
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise InputError(f"--db {p}: not a pypto-tui run history ({exc}); give another file") from None
            except InputError:
                conn.close()
                raise
            return cls(conn, p)
        raise InputError(f"--db {p}: cannot read it ({failure}); check its permissions, or give another file")

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Reads of the file: a damaged page or row is one line naming the file, not an internal error."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise InputError(f"--db {self.path}: the run history is damaged ({exc}); restore it from a copy or "
                             "give another --db file") from None
        except _Damaged as exc:
            raise InputError(f"--db {self.path}: the run history is damaged ({exc}); restore it from a copy or "
                             "give another --db file") from None

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def start_run(self, *, command: str, folder: str, total: int, task_args: list[str], scheduler: str,
                  workers: int | None, meta: dict[str, Any]) -> int:
        with _write(self.conn):
            cur = self.conn.execute(
                "INSERT INTO runs (command, folder, started_at, status, total, task_args, scheduler, workers, host, "
                "pid, tool_version, tool_commit, pypto_version, pack_name, pack_version, criterion) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (command, folder, now_iso(), total, json.dumps(task_args), scheduler, workers, socket.gethostname(),
                 os.getpid(), meta.get("tool_version"), meta.get("tool_commit"), meta.get("pypto_version"),
                 meta.get("pack_name"), meta.get("pack_version"), meta.get("criterion")))
            return int(cur.lastrowid or 0)

    def reopen_run(self, run_id: int, *, scheduler: str, workers: int | None) -> None:
        """A resumed run is this process's now (its pid, so a third process can tell it is alive)."""
        with _write(self.conn):
            self.conn.execute("UPDATE runs SET status = 'running', pid = ?, host = ?, scheduler = ?, workers = ?, "
                              "finished_at = NULL WHERE id = ?",
                              (os.getpid(), socket.gethostname(), scheduler, workers, run_id))

    def record_task(self, run_id: int, row: TaskRow) -> bool:
        """Store one finished task (committed at once). False when the run already has it."""
        values = (run_id, row.name, row.path, row.verdict, row.exit_code, json.dumps(row.errors), row.wall_s,
                  row.peak_rss_mb, row.family, json.dumps(row.design, sort_keys=True),
                  json.dumps(row.record, sort_keys=True), row.started_at, row.finished_at, row.worker)
        try:
            with _write(self.conn):
                self.conn.execute(f"INSERT INTO tasks ({', '.join(TASK_COLUMNS)}) VALUES "
                                  f"({', '.join('?' * len(TASK_COLUMNS))})", values)
        except sqlite3.IntegrityError:
            return False
        return True

    def set_criterion(self, run_id: int, criterion: str) -> None:
        with _write(self.conn):
            self.conn.execute("UPDATE runs SET criterion = ? WHERE id = ? AND (criterion IS NULL OR criterion = '')",
                              (criterion, run_id))

    def finish_run(self, run_id: int, status: str, wall_s: float | None) -> None:
        with _write(self.conn):
            self.conn.execute("UPDATE runs SET status = ?, finished_at = ?, "
                              "wall_s = COALESCE(wall_s, 0) + COALESCE(?, 0) WHERE id = ?",
                              (status, now_iso(), wall_s, run_id))

    # ------------------------------------------------------------------ reading
    def runs(self, limit: int | None = None) -> list[RunInfo]:
        sql = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY id DESC"
        args: tuple[Any, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            args = (min(limit, MAX_ROW_ID),)
        with self.reading():
            return [_run(r) for r in self.conn.execute(sql, args)]

    def run(self, run_id: int) -> RunInfo:
        if not 0 <= run_id <= MAX_ROW_ID:
            raise InputError(f"run {run_id} is not in {self.path}: `pypto-tui runs` lists the runs")
        with self.reading():
            r = self.conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE id = ?", (run_id,)).fetchone()
            if r is None:
                raise InputError(f"run {run_id} is not in {self.path}: `pypto-tui runs` lists the runs")
            return _run(r)

    def resolve(self, ref: str) -> RunInfo:
        """A run named on the command line: its number, `last`, or `last-N` (N runs before the last)."""
        text = ref.strip().lower()
        how = "use a run number, `last` or `last-N` (ASCII digits)"
        if text.startswith("last"):
            back = text[4:]
            if back and not (back.startswith("-") and _ascii_digits(back[1:])):
                raise InputError(f"run {ref!r}: {how}")
            n = int(back[1:]) if back else 0
            if n > MAX_ROW_ID:
                raise InputError(f"run {ref!r}: {self.path} holds fewer runs than that; `pypto-tui runs` lists them")
            rows = self.runs(limit=n + 1)
            if len(rows) <= n:
                raise InputError(f"run {ref!r}: {self.path} holds only {len(rows)} run(s)")
            return rows[n]
        if not _ascii_digits(text):
            raise InputError(f"run {ref!r}: {how}")
        return self.run(int(text))

    def tasks(self, run_id: int) -> list[TaskRow]:
        with self.reading():
            rows = self.conn.execute(f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE run_id = ? ORDER BY rowid",
                                     (run_id,))
            return [_task(r) for r in rows]

    def finished_names(self, run_id: int) -> set[str]:
        with self.reading():
            return {r[0] for r in self.conn.execute("SELECT name FROM tasks WHERE run_id = ?", (run_id,))}

    def counts(self, run_id: int) -> dict[str, int]:
        with self.reading():
            rows = self.conn.execute("SELECT verdict, COUNT(*) FROM tasks WHERE run_id = ? GROUP BY verdict",
                                     (run_id,))
            counts = dict(rows.fetchall())
            if not all(isinstance(v, str) for v in counts):
                raise _Damaged("a task's verdict is not text")
            return counts

    def resumable(self, command: str, folder: str) -> RunInfo | None:
        """The latest run of `command` over `folder` that did not finish."""
        with self.reading():
            r = self.conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE command = ? AND folder = ? "
                                  "AND status != 'finished' ORDER BY id DESC LIMIT 1", (command, folder)).fetchone()
            return _run(r) if r is not None else None

    def hints(self, command: str, names: list[str]) -> dict[str, tuple[float | None, float | None]]:
        """Per task name: (peak MB, wall seconds) of its latest recorded run of `command`."""
        out: dict[str, tuple[float | None, float | None]] = {}
        with self.reading():
            for name in names:
                r = self.conn.execute(
                    "SELECT t.peak_rss_mb, t.wall_s FROM tasks t JOIN runs r ON r.id = t.run_id "
                    "WHERE t.name = ? AND r.command = ? ORDER BY t.run_id DESC LIMIT 1", (name, command)).fetchone()
                if r is not None:
                    out[name] = (_hint(r[0]), _hint(r[1]))
        return out


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, the lock taken at BEGIN (waits up to busy_timeout for it)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class _Damaged(Exception):
    """A row whose values are not what pypto-tui writes (see `History.reading`)."""


def _hint(value: Any) -> float | None:
    """A stored time or peak as a planning hint: None unless a finite number >= 0 (a damaged row plans nothing)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _ascii_digits(text: str) -> bool:
    """Only 0-9: `str.isdigit` also takes '²' and Arabic-Indic digits (int('١') is 1)."""
    return bool(text) and text.isascii() and text.isdigit()


_TEXT = {"command", "folder", "started_at", "finished_at", "status", "scheduler", "host", "tool_version", "tool_commit",
         "pypto_version", "pack_name", "pack_version", "criterion", "name", "path", "verdict", "family", "worker"}
_REQUIRED = {"command", "folder", "started_at", "status", "scheduler", "id", "total"}
_TASK_REQUIRED = {"run_id", "name", "path", "verdict"}
_INTS = {"id", "total", "workers", "pid", "exit_code", "run_id"}
_REALS = {"wall_s", "peak_rss_mb"}


def _checked(d: dict[str, Any], where: str, required: set[str]) -> dict[str, Any]:
    """`d` (one row) when every column holds what pypto-tui writes there; _Damaged naming the first that does not."""
    for key, value in d.items():
        if value is None:
            if key in required:
                raise _Damaged(f"{where}: {key} is empty")
            continue
        if key in _TEXT and not isinstance(value, str):
            raise _Damaged(f"{where}: {key} holds {value!r:.40}, not text")
        if key in _INTS and (not isinstance(value, int) or not 0 <= value <= MAX_ROW_ID
                             or (key == "pid" and value > MAX_PID)):
            raise _Damaged(f"{where}: {key} holds {value!r:.40}, not a count")
        if key in _REALS and (not isinstance(value, int | float) or not math.isfinite(value) or value < 0):
            raise _Damaged(f"{where}: {key} holds {value!r:.40}, not a finite number of seconds or MB")
    return d


def _json(d: dict[str, Any], key: str, kind: type[list[Any]] | type[dict[str, Any]], where: str) -> Any:
    """Column `key` of row `d` decoded from JSON; _Damaged unless it is a `kind` (of strings for a list)."""
    raw = d[key]
    if raw is None or raw == "":
        return kind()
    try:
        value = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        raise _Damaged(f"{where}: {key} is not JSON") from None
    if not isinstance(value, kind) or (kind is list and not all(isinstance(x, str) for x in value)):
        raise _Damaged(f"{where}: {key} is not a JSON {'list of text' if kind is list else 'object'}")
    return value


def _run(r: tuple[Any, ...]) -> RunInfo:
    d = _checked(dict(zip(RUN_COLUMNS, r, strict=True)), f"run {r[0]!r:.40}", _REQUIRED)
    d["task_args"] = _json(d, "task_args", list, f"run {d['id']}")
    return RunInfo(**d)


def _task(r: tuple[Any, ...]) -> TaskRow:
    d = dict(zip(TASK_COLUMNS, r, strict=True))
    d = _checked(d, f"run {d['run_id']!r:.40}, task {d['name']!r:.80}", _TASK_REQUIRED)
    where = f"run {d['run_id']}, task {d['name']!r:.80}"
    d["errors"] = _json(d, "errors", list, where)
    d["design"] = _json(d, "design", dict, where)
    d["record"] = _json(d, "record", dict, where)
    return TaskRow(**d)


def _check_schema(conn: sqlite3.Connection, p: Path) -> None:
    """InputError unless the file holds pypto-tui's tables (a foreign `runs` table is not a history)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise InputError(f"--db {p}: written by a newer pypto-tui (schema {version}); upgrade, or use another file")
    for table, columns in (("runs", RUN_COLUMNS), ("tasks", TASK_COLUMNS)):
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not set(columns) <= have:
            what = f"no {table} table" if not have else f"its {table} table is not pypto-tui's"
            raise InputError(f"--db {p}: not a pypto-tui run history ({what}); give another file")
