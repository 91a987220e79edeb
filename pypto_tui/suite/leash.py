"""Start a suite's task command so that it ends when the suite's process dies, even by kill -9.

`python -m pypto_tui.suite.leash PARENT_PID -- ARGV...` asks Linux to send this process SIGTERM
when its parent dies (prctl PR_SET_PDEATHSIG, which survives exec), then becomes ARGV. A verify
or sim command turns SIGTERM into a clean stop that kills its own compiler workers, so a killed
suite leaves no task running under init. Where prctl is missing (not Linux) it just becomes ARGV.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(143)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m pypto_tui.suite.leash PARENT_PID -- ARGV...\n")
        raise SystemExit(2)
    _die_with_parent(int(argv[0]))
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
