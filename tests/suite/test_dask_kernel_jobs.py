"""verify --per-kernel --scheduler: a module's kernel jobs on a Dask cluster. The planning is the
local one (per_kernel.JobRunner); what the cluster adds is shipping each job's files to a worker that
lacks them, results in job order whatever order they finish in, and stopping on Ctrl+C."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.sim import jobs as J
from pypto_tui.sim import runner
from pypto_tui.suite import dask_pool

distributed = pytest.importorskip("distributed")
CHAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain" / "swiglu.py"
FINISHED: list[str] = []


def _job(label: str, task_file: Path) -> J.SimJob:
    return J.SimJob(kind="cost", kernel_source="", inputs=(), label=label, task_file=str(task_file),
                    cycles_per_us=1.0)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """The worker's local pool replaced: each job records its label, task file and that file's text;
    k0 finishes last."""
    calls: list[tuple[str, str, str]] = []
    FINISHED.clear()

    def fake_run_many(sim_jobs, **_kw):
        job = sim_jobs[0]
        calls.append((job.label, job.task_file, Path(job.task_file).read_text(encoding="utf-8")))
        time.sleep(0.5 if job.label == "k0" else 0.0)
        FINISHED.append(job.label)
        return [J.SimResult(kind=job.kind, status=J.OK, label=job.label, passed=True)]

    monkeypatch.setattr(runner, "run_many", fake_run_many)
    return calls


def test_a_worker_without_the_jobs_file_gets_its_text(tmp_path: Path, seen: list[tuple[str, str, str]]) -> None:
    gone = tmp_path / "ref_k3.py"  # the path on the machine that planned the job; this worker lacks it
    result = dask_pool.run_job_on_worker(_job("k3", gone), {str(gone): "MODEL = 3\n"}, 10.0, False)
    assert result.status == J.OK
    label, used, text = seen[0]
    assert label == "k3" and used != str(gone) and Path(used).name == "ref_k3.py" and text == "MODEL = 3\n"


def test_a_worker_with_the_same_file_uses_it_in_place(tmp_path: Path, seen: list[tuple[str, str, str]]) -> None:
    here = tmp_path / "ref_k1.py"
    here.write_text("MODEL = 1\n", encoding="utf-8")
    dask_pool.run_job_on_worker(_job("k1", here), dask_pool.ship(_job("k1", here)), 10.0, False)
    assert seen == [("k1", str(here), "MODEL = 1\n")]
    stale = tmp_path / "ref_k2.py"
    stale.write_text("MODEL = 'old'\n", encoding="utf-8")  # the same path, other text: not trusted
    dask_pool.run_job_on_worker(_job("k2", stale), {str(stale): "MODEL = 2\n"}, 10.0, False)
    assert seen[1][1] != str(stale) and seen[1][2] == "MODEL = 2\n"


def test_kernel_jobs_on_a_cluster_come_back_in_job_order(tmp_path: Path, seen: list[tuple[str, str, str]]) -> None:
    files = []
    for i in range(3):
        f = tmp_path / f"ref_k{i}.py"
        f.write_text(f"MODEL = {i}\n", encoding="utf-8")
        files.append(f)
    ticks: list[int] = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=3, processes=False,
                                  dashboard_address=None) as cluster:
        run = dask_pool.DaskJobRunner(cluster.scheduler_address, timeout_s=30.0, cache=False,
                                      progress=lambda done, total, _r: ticks.append(done))
        try:
            results = run([_job(f"k{i}", f) for i, f in enumerate(files)])
        finally:
            run.close()
    assert FINISHED[-1] == "k0"  # the jobs ran side by side and k0 finished last,
    assert [r.label for r in results] == ["k0", "k1", "k2"]  # yet the results are in job order
    assert ticks == [1, 2, 3]
    assert sorted(s[2] for s in seen) == ["MODEL = 0\n", "MODEL = 1\n", "MODEL = 2\n"]


def test_stop_jobs_cancels_the_running_jobs_of_its_batch_only() -> None:
    class Signal:
        def __init__(self) -> None:
            self.why = ""

        def cancel(self, why: str) -> None:
            self.why = why

    mine, other = Signal(), Signal()
    dask_pool._STOPS.update({"batch-a": [mine], "batch-b": [other]})
    try:
        assert dask_pool.stop_jobs("batch-a") == 1
    finally:
        dask_pool._STOPS.pop("batch-a", None)
        dask_pool._STOPS.pop("batch-b", None)
    assert mine.why and not other.why


def test_scheduler_with_one_task_needs_per_kernel() -> None:
    r = CliRunner().invoke(app, ["verify", str(CHAIN), "--scheduler", "tcp://127.0.0.1:9"])
    assert r.exit_code == 2
    assert "add --per-kernel" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["verify", str(CHAIN), "--workers", "2"])
    assert r.exit_code == 2 and "suite options" in r.output


def test_an_unreachable_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_pool, "CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr("pypto_tui.cli.sim_cmd._require_sim", lambda: None)
    r = CliRunner().invoke(app, ["verify", str(CHAIN), "--per-kernel", "--scheduler", "tcp://127.0.0.1:9"])
    assert r.exit_code == 2, r.output
    last = r.output.strip().splitlines()[-1]
    assert "cannot reach a Dask scheduler" in last and "Traceback" not in r.output



@pytest.mark.sim
def test_a_modules_kernels_verify_on_a_two_worker_cluster_as_on_the_local_pool(tmp_path: Path) -> None:
    """The real compiler: swiglu's three kernels, then the module, on a Dask LocalCluster of two
    worker processes, give the local pool's verdicts (the same shapes, tiles and pass rows)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NO_COLOR": "1"}

    def verify(*extra: str) -> dict[str, object]:
        r = subprocess.run([sys.executable, "-m", "pypto_tui", "verify", str(CHAIN), "--per-kernel", "--no-cache",
                            "--json", *extra], capture_output=True, text=True, timeout=1200, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        if extra:
            assert "each kernel on Dask at" in r.stderr
        return json.loads(r.stdout)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  resources={"memory": 6000}) as cluster:
        remote = verify("--scheduler", cluster.scheduler_address)
    local = verify()
    keys = ("index", "verdict", "shapes", "pass_rows", "passes_checked", "design_kept", "tile_counts")

    def verdicts(doc: dict[str, object]) -> list[dict[str, object]]:
        rows = doc["kernel_verdicts"]
        assert isinstance(rows, list) and len(rows) == 3
        return [{k: v[k] for k in keys} for v in rows]

    assert verdicts(remote) == verdicts(local)
    assert remote["passed"] is True and all(v["verdict"] == "pass" for v in verdicts(remote))
