"""The real compiler on the CPU: pypto 0.2.0 in SIM mode through the runner and the worker.

Skipped unless pypto 0.2.0 and torch are installed (marker `sim`). The first verify on a machine
builds pypto's calculator library (30-60 s, once; it is cached in the user cache folder).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_tui.sim import jobs, runner
from pypto_tui.sim.cache import ResultCache

pytestmark = pytest.mark.sim

SOFTMAX_INPUT = (jobs.InputSpec((16, 16384), "fp32"),)


def softmax_job(kernel_source: Callable[..., str], tile: tuple[int, int], cols: int = 16384) -> jobs.SimJob:
    return jobs.SimJob(
        kind="cost",
        kernel_source=kernel_source("softmax_kernel", COLS=cols, TILE=tile),
        inputs=(jobs.InputSpec((16, cols), "fp32"),),
        label=f"tile {tile}",
    )


def test_softmax_tiles_rank_as_the_documents_say(kernel_source, tmp_path: Path) -> None:
    tiles = [(1, 8192), (2, 4096), (4, 4096)]
    seen: list[int] = []
    results = runner.run_many(
        [softmax_job(kernel_source, t) for t in tiles], jobs=2, timeout_s=180,
        cache=ResultCache(tmp_path), progress=lambda d, t, r: seen.append(d),
    )
    assert seen == [1, 2, 3]
    for r in results:
        assert r.status == jobs.OK, (r.label, r.error, r.reason)
        assert r.compile_s is not None and r.sim_s is not None and r.wall_s is not None
    e2e = [r.e2e_us for r in results]
    assert e2e[0] < e2e[1] < e2e[2]
    # The cost model is deterministic (research note 3.5): 8.80 / 16.21 / 46.30 us.
    assert e2e == pytest.approx([8.80, 16.21, 46.30], abs=0.01)
    assert [r.tasks for r in results] == [16, 8, 40]


def test_compile_errors_carry_the_real_reason(kernel_source, tmp_path: Path) -> None:
    ub = softmax_job(kernel_source, (1, 32768), cols=32768)
    bad_style = jobs.SimJob(
        kind="cost",
        kernel_source=kernel_source("softmax_kernel").replace(
            "out: pypto.Tensor((rows, cols), pypto.DT_FP32),\n    ):",
            "out: pypto.Tensor((rows, cols), pypto.DT_FP32),\n    ) -> pypto.Tensor((rows, cols), pypto.DT_FP32):",
        ),
        inputs=SOFTMAX_INPUT,
    )
    broken_forward = jobs.SimJob(
        kind="cost",
        kernel_source=kernel_source("softmax_kernel").replace("assert tuple(x.shape)", "assert 0 and tuple(x.shape)"),
        inputs=SOFTMAX_INPUT,
    )
    r_ub, r_style, r_fwd = runner.run_many(
        [ub, bad_style, broken_forward], jobs=2, timeout_s=180, cache=ResultCache(tmp_path)
    )
    assert r_ub.status == jobs.COMPILE_ERROR
    assert "exceeds MEM_UB size" in (r_ub.reason or ""), r_ub.reason
    assert "Run pass failed" in (r_ub.error or "")  # all Python gets to see
    assert r_style.status == jobs.COMPILE_ERROR
    assert "Return annotation is not allowed" in (r_style.reason or ""), r_style
    assert r_fwd.status == jobs.ERROR  # not the compiler's fault: forward() itself raised
    assert (r_fwd.error or "").startswith("could not run ModelNew.forward: AssertionError")
    assert "(kernel line " in (r_fwd.error or "")


SMALL = (4, 1024)


@pytest.fixture(scope="session")  # session: xdist may leave the module and come back
def verify_results(kernel_source, task_file, tmp_path_factory: pytest.TempPathFactory) -> dict[str, jobs.SimResult]:
    """Three verify jobs in one batch (two workers in parallel)."""
    elu_in = (jobs.InputSpec(SMALL, "fp32"),)
    amax_in = (jobs.InputSpec((2, 64, 64), "fp32"),)
    specs = {
        "elu": jobs.SimJob(kind="verify", kernel_source=kernel_source("elu_kernel", SHAPE=SMALL),
                           inputs=elu_in, init_args=(1.0,), task_file=task_file("elu"), seed=1),
        "elu_wrong_sign": jobs.SimJob(kind="verify", kernel_source=kernel_source("elu_kernel", SHAPE=SMALL, SIGN=-1.0),
                                      inputs=elu_in, init_args=(1.0,), task_file=task_file("elu"), seed=1),
        "amax_wrong_axis": jobs.SimJob(kind="verify", kernel_source=kernel_source("amax_kernel", AXIS=2),
                                       inputs=amax_in, init_args=(1,), task_file=task_file("max_over_dim"), seed=2),
    }
    results = runner.run_many(list(specs.values()), jobs=2, timeout_s=600,
                              cache=ResultCache(tmp_path_factory.mktemp("verify-cache")))
    return dict(zip(specs, results, strict=True))


def test_verify_correct_elu_passes(verify_results) -> None:
    r = verify_results["elu"]
    assert r.status == jobs.OK and r.passed, (r.error, r.reason)
    (out,) = r.outputs
    assert out["passed"] and out["max_abs_err"] < 1e-5 and out["dtype"] == "fp32"
    assert r.inputs_clobbered is False  # the CopyToHost shim keeps the inputs intact
    assert r.e2e_us and r.e2e_us > 0  # the cost model runs in verify mode too


def test_verify_wrong_sign_fails(verify_results) -> None:
    r = verify_results["elu_wrong_sign"]
    assert r.status == jobs.MISMATCH and r.passed is False, (r.error, r.reason)
    assert "elements outside atol 0.0001 + rtol 0.0001" in (r.reason or "")
    assert r.outputs[0]["fail_share"] > 0.3  # about half the inputs are negative


def test_verify_amax_over_the_wrong_axis_fails(verify_results) -> None:
    r = verify_results["amax_wrong_axis"]
    assert r.status == jobs.MISMATCH and r.passed is False, (r.error, r.reason)


def test_a_cache_hit_is_instant_and_spawns_nothing(kernel_source, tmp_path: Path, monkeypatch) -> None:
    store = ResultCache(tmp_path)
    job = jobs.SimJob(kind="cost", kernel_source=kernel_source("elu_kernel", SHAPE=SMALL),
                      inputs=(jobs.InputSpec(SMALL, "fp32"),), init_args=(1.0,))
    first = runner.run_one(job, cache=store, timeout_s=180)
    assert first.status == jobs.OK and not first.cached and first.e2e_us

    def no_spawn(*a, **k):
        raise AssertionError("a cache hit started a worker")

    monkeypatch.setattr(runner, "run_in_subprocess", no_spawn)
    t0 = time.perf_counter()
    second = runner.run_one(job, cache=store)
    elapsed = time.perf_counter() - t0
    assert second.cached and second.e2e_us == first.e2e_us and second.key == first.key
    assert elapsed < 0.5
