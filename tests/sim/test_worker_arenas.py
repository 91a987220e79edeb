"""A verify worker's address-space cap is spent on memory, not on malloc arenas (no pypto).

glibc gives each new thread a malloc arena that reserves 64 MB of address space; RLIMIT_AS counts
the reservation. pypto's compiler threads ran capped workers out of their 8 GB with 'Resource
temporarily unavailable' (KernelBench level-2 3, 10, 36, 53, ...). The worker limits the arenas
before it caps the address space; here 16 threads under a cap of 400 MB over the start start
with the limit and fail without it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc arenas")

PROGRAM = textwrap.dedent("""
    import resource, sys, threading
    from pypto_tui.sim import worker
    if sys.argv[1] == "few":
        worker.few_malloc_arenas()

    def vm_mb():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmSize"))

    resource.setrlimit(resource.RLIMIT_AS, ((vm_mb() + 400) << 20, resource.RLIM_INFINITY))
    failed = []
    together, done = threading.Barrier(16), threading.Barrier(16)

    def work():
        try:
            together.wait(timeout=3)
            held = [bytes(600) for _ in range(2000)]
            done.wait(timeout=3)
        except Exception as exc:
            failed.append(repr(exc))

    threads = []
    for _ in range(16):
        t = threading.Thread(target=work)
        try:
            t.start()
            threads.append(t)
        except RuntimeError as exc:
            failed.append(repr(exc))
    for t in threads:
        t.join(timeout=30)
    print(len(failed))
""")


def _failures(mode: str) -> int:
    r = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip().splitlines()[-1])


def test_threads_start_under_the_cap_once_the_arenas_are_few() -> None:
    assert _failures("few") == 0


def test_without_the_limit_the_same_threads_run_out_of_address_space() -> None:
    """The control: the cap above is tight enough to matter."""
    assert _failures("many") > 0
