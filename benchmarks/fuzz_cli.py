"""Fuzz the CLI with reproducible argument vectors and count broken promises (issue 15).

    python benchmarks/fuzz_cli.py --n 10000 --seed 15            # the static commands
    python benchmarks/fuzz_cli.py --n 200 --exec --timeout 120   # contract --run, sim, verify
    python benchmarks/fuzz_cli.py --replay report.json --timeout 60 --workers 1   # re-run its failures

Each vector runs in a forked child of this process (the CLI already imported, so a run costs
milliseconds, not an interpreter start), with its own process group, stdout/stderr in files, a
4 GB address-space cap (a memory bomb becomes a MemoryError, not an OOM of the machine) and a
wall-clock limit. Counted: tracebacks, hangs (over --timeout), crashes (killed by a signal), exit
codes other than 0/1/2, exit-2 errors longer than one line, `--json` runs with exit 2 and no
`{"error": ...}` document. Every input lives in a sandbox folder (see tests/robust/hostile.py);
the fuzz never writes outside it. Not a test: the figures go into the issue's closing note;
tests/robust/test_fuzz_cli.py is the CI version (hypothesis, in-process).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "robust"))

from hostile import EXEC_COMMANDS, PROBLEMS, STATIC_COMMANDS, RandomChooser, build_sandbox, draw_argv, judge

MEMORY_CAP = 4 << 30


def _child(argv: list[str], out: Path, err: Path, cwd: Path) -> None:
    """Runs in the forked child: become a process group, redirect, run the CLI, exit with its code."""
    os.setpgid(0, 0)
    fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fd_in = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd_in, 0)
    os.dup2(fd_out, 1)
    os.dup2(fd_err, 2)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    os.chdir(cwd)
    code = 1
    try:
        from pypto_tui.cli import main

        sys.argv = ["pypto-tui", *argv]
        main()
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
    os._exit(code & 0xFF)


def run(n: int, seed: int, timeout: float, workers: int, commands: tuple[str, ...], report: Path | None,
        replay: Path | None = None) -> dict:
    import pypto_tui.cli  # noqa: F401  (imported once, before the forks)

    root = Path(tempfile.mkdtemp(prefix="pypto-tui-fuzz-"))
    sb = build_sandbox(root / "sandbox")
    state = root / "state"
    state.mkdir()
    os.environ.update(PYPTO_TUI_STATE_DIR=str(state), NO_COLOR="1", COLUMNS="100")
    os.environ.pop("PYPTO_TUI_KB", None)
    if replay is not None:  # the failing vectors of an earlier report, with this run's sandbox paths
        old = json.loads(replay.read_text(encoding="utf-8"))
        vectors = [_rebase(f["argv"], sb.root) for f in old["failures"]]
        n = len(vectors)
    else:
        chooser = RandomChooser(seed)
        vectors = [draw_argv(chooser, sb, commands) for _ in range(n)]
    counts: collections.Counter[str] = collections.Counter()
    rcs: collections.Counter[str] = collections.Counter()
    failures: list[dict] = []
    running: dict[int, tuple[int, list[str], float, Path, Path]] = {}
    next_i = 0
    t0 = time.perf_counter()
    slowest = 0.0
    while next_i < len(vectors) or running:
        while next_i < len(vectors) and len(running) < workers:
            argv = vectors[next_i]
            out, err = root / f"out{next_i % 64}", root / f"err{next_i % 64}"
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(argv, out, err, sb.root)
            running[pid] = (next_i, argv, time.perf_counter(), out, err)
            next_i += 1
        pid, status = os.waitpid(-1, os.WNOHANG)
        now = time.perf_counter()
        if pid == 0:
            for cpid, (_i, argv, started, _out, err) in list(running.items()):
                if now - started > timeout:
                    _kill(cpid)
                    os.waitpid(cpid, 0)
                    del running[cpid]
                    _record(judge(argv, None, "", _read(err), hung=True), counts, rcs, failures)
            time.sleep(0.002)
            continue
        if pid not in running:
            continue
        _i, argv, started, out, err = running.pop(pid)
        slowest = max(slowest, now - started)
        _kill(pid)  # whatever the run left behind in its group
        if os.WIFSIGNALED(status):
            v = judge(argv, None, _read(out), _read(err), signal_no=os.WTERMSIG(status))
        else:
            v = judge(argv, os.WEXITSTATUS(status), _read(out), _read(err))
        _record(v, counts, rcs, failures)
        done = sum(rcs.values())
        if done % 500 == 0:
            print(f"  {done}/{n} runs, {dict(counts)}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    summary = {"inputs": n, "seed": seed, "timeout_s": timeout, "commands": list(commands),
               "seconds": round(seconds, 1), "slowest_run_s": round(slowest, 2),
               "problems": {p: counts.get(p, 0) for p in PROBLEMS},
               "runs_with_a_problem": len(failures), "exit_codes": dict(rcs)}
    if report is not None:
        report.write_text(json.dumps({"summary": summary, "failures": failures}, indent=1), encoding="utf-8")
    _chmod_back(sb.out / "ro")
    return summary


def _rebase(argv: list[str], sandbox: Path) -> list[str]:
    """An argv from another run's report, its sandbox paths moved into this run's sandbox."""
    out = []
    for a in argv:
        if "/sandbox/" in a and a.startswith(tempfile.gettempdir()):
            a = str(sandbox / a.split("/sandbox/", 1)[1])
        elif a.endswith("/sandbox") and a.startswith(tempfile.gettempdir()):
            a = str(sandbox)
        out.append(a)
    return out


def _record(v, counts, rcs, failures) -> None:  # type: ignore[no-untyped-def]
    for p in v.problems:
        counts[p] += 1
    rcs["hang" if "hang" in v.problems else ("signal" if v.rc is None else str(v.rc))] += 1
    if v.problems:
        failures.append(v.to_dict())


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read(path: Path) -> str:
    try:
        return path.read_bytes()[-20000:].decode("utf-8", errors="replace")
    except OSError:
        return ""


def _chmod_back(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o755)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a run counts as a hang")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--exec", action="store_true", help="fuzz the commands that execute the task file")
    ap.add_argument("--report", type=Path, help="write the summary and every failing vector (JSON)")
    ap.add_argument("--replay", type=Path, help="run again only the failing vectors of an earlier --report")
    a = ap.parse_args()
    commands = EXEC_COMMANDS if a.exec else STATIC_COMMANDS
    summary = run(a.n, a.seed, a.timeout, a.workers, commands, a.report, a.replay)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
