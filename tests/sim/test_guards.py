"""availability, the shim's version guard, jobs JSON and the result cache (no pypto needed)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from pypto_tui.errors import InputError
from pypto_tui.sim import availability, jobs, shim
from pypto_tui.sim.cache import ResultCache, cache_key, cache_root


def _fake_install(monkeypatch: pytest.MonkeyPatch, versions: dict[str, str | None]) -> None:
    real_find, real_version = importlib.util.find_spec, importlib.metadata.version

    def find_spec(name: str, *a: object):
        if name in versions:
            return object() if versions[name] else None
        return real_find(name, *a)

    def version(name: str) -> str:
        if name in versions:
            if versions[name] is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return versions[name]  # type: ignore[return-value]
        return real_version(name)

    monkeypatch.setattr(availability.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(availability.importlib.metadata, "version", version)


def test_nothing_installed_says_both_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_install(monkeypatch, {"torch": None, "pypto": None})
    a = availability.check_sim()
    assert not a.ok and "\n" not in a.message
    # the extra as this install takes it: the package, or in a clone the clone itself (issue 25)
    assert availability.install_sim_command() in a.message and "pip install torch==2.13.0" in a.message
    with pytest.raises(availability.SimUnavailable) as exc:
        availability.require_sim()
    assert isinstance(exc.value, InputError)


def test_only_torch_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_install(monkeypatch, {"torch": None, "pypto": "0.2.0"})
    a = availability.check_sim()
    assert not a.ok and "torch==2.13.0" in a.message and "pypto-tui[sim]" not in a.message


def test_wrong_pypto_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_install(monkeypatch, {"torch": "2.13.0+cpu", "pypto": "0.3.1"})
    a = availability.check_sim()
    assert not a.ok and "0.3.1" in a.message and "only pypto 0.2.0" in a.message
    with pytest.raises(availability.UnsupportedPypto):
        availability.require_sim()


def test_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_install(monkeypatch, {"torch": "2.13.0+cpu", "pypto": "0.2.0"})
    a = availability.check_sim()
    assert a.ok and a.pypto_version == "0.2.0" and a.torch_version == "2.13.0+cpu"


def test_check_sim_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    had = {m for m in ("torch", "pypto") if m in sys.modules}
    availability.check_sim()
    assert {m for m in ("torch", "pypto") if m in sys.modules} == had


def test_shim_refuses_other_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim, "pypto_version", lambda: "0.3.0")
    with pytest.raises(availability.UnsupportedPypto, match="0.2.0"):
        shim.install_copy_to_host_shim()
    with pytest.raises(availability.UnsupportedPypto):
        shim.ensure_calculator(Path("/nonexistent"))


def test_calculator_dir_under_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path
    assert shim.calculator_dir("2.13.0+cpu") == tmp_path / "calculator" / "2.13.0+cpu"


def test_job_json_round_trip() -> None:
    job = jobs.SimJob(
        kind="verify", kernel_source="x = 1\n", task_file="/t.py", init_args=[1.0],  # type: ignore[arg-type]
        inputs=({"shape": [4, 8], "dtype": "float32"}, {"scalar": 0.5}, jobs.InputSpec((3,), "int32", "randint", 0, 5)),  # type: ignore[arg-type]
    )
    assert job.inputs[0] == jobs.InputSpec((4, 8), "fp32")
    assert job.inputs[1].is_scalar
    again = jobs.SimJob.from_json(job.to_json())
    assert again == job


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "run", "kernel_source": "", "inputs": []},
        {"kind": "verify", "kernel_source": "", "inputs": []},
        {"kind": "cost", "kernel_source": "", "inputs": [{"shape": [2], "dtype": "fp99"}]},
        {"kind": "cost", "kernel_source": "", "inputs": [{"dtype": "fp32"}]},
        {"kind": "cost", "kernel_source": "", "inputs": [], "bogus": 1},
        {"kind": "cost", "inputs": []},
    ],
)
def test_bad_jobs_are_input_errors(bad: dict) -> None:
    with pytest.raises(InputError):
        jobs.SimJob.from_json(bad)


def test_result_round_trip_and_cacheable() -> None:
    r = jobs.SimResult(kind="cost", status=jobs.OK, e2e_us=8.8, tasks=16)
    assert jobs.SimResult.from_json(r.to_json()) == r and r.ok and r.cacheable
    assert not jobs.SimResult(kind="cost", status=jobs.TIMEOUT).cacheable


def test_cache_key_depends_on_what_matters(tmp_path: Path) -> None:
    base = jobs.SimJob(kind="cost", kernel_source="a", inputs=(jobs.InputSpec((4,)),))
    k = cache_key(base.cache_material("0.2.0"))
    assert k == cache_key(jobs.SimJob(kind="cost", kernel_source="a", inputs=(jobs.InputSpec((4,)),), label="x",
                                      work_dir="/elsewhere").cache_material("0.2.0"))
    assert k != cache_key(base.cache_material("0.2.1"))
    assert k != cache_key(jobs.SimJob(kind="cost", kernel_source="b", inputs=base.inputs).cache_material("0.2.0"))
    other_inputs = jobs.SimJob(kind="cost", kernel_source="a", inputs=(jobs.InputSpec((5,)),))
    assert k != cache_key(other_inputs.cache_material("0.2.0"))
    task = tmp_path / "t.py"
    verify = jobs.SimJob(kind="verify", kernel_source="a", inputs=(), task_file=str(task))
    task.write_text("A")
    v1 = cache_key(verify.cache_material("0.2.0"))
    task.write_text("B")
    v2 = cache_key(verify.cache_material("0.2.0"))
    assert v1 != v2 != k


def test_result_cache_put_get_clear(tmp_path: Path) -> None:
    c = ResultCache(tmp_path)
    assert c.get("ab" * 32) is None
    c.put("ab" * 32, {"status": "ok"})
    assert c.get("ab" * 32) == {"status": "ok"}
    assert not list(tmp_path.rglob(".tmp-*"))
    assert c.clear() == 1 and c.get("ab" * 32) is None


def test_cycles_per_us_defaults_to_the_pack() -> None:
    from pypto_tui.kb import get_kb

    job = jobs.SimJob(kind="cost", kernel_source="", inputs=())
    assert job.cycles_per_us == get_kb().chip.cycles_per_us == 1800
    assert jobs.SimJob(kind="cost", kernel_source="", inputs=(), cycles_per_us=1000).cycles_per_us == 1000
    with pytest.raises(InputError):
        jobs.SimJob(kind="cost", kernel_source="", inputs=(), cycles_per_us=0)
