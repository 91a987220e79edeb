"""The measurements behind the lint's severities, re-run on the real compiler (marker `sim`).

Each probe in `probes/kernels.py` is one way of writing the same exp kernel; pypto 0.2.0 either
verifies it against the torch baseline or refuses it with the message checked here. When a
probe's verdict changes (a new pypto), the severity the pack gives its rule is due for review.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import lint_probes, selected_params

from pypto_tui.sim import jobs, runner
from pypto_tui.sim.cache import ResultCache

pytestmark = pytest.mark.sim

PROBE_DIR = Path(__file__).parent / "probes"
TASK = PROBE_DIR / "exp_task.py"
PROBES, probe_source = lint_probes().PROBES, lint_probes().probe_source


@pytest.fixture(scope="module")
def probe_results(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
                  ) -> dict[str, jobs.SimResult]:
    specs = [
        jobs.SimJob(kind="verify", kernel_source=probe_source(name), inputs=(jobs.InputSpec((64, 512), "fp32"),),
                    task_file=str(TASK), label=name)
        for name in selected_params(request, "test_probe_verdict", "name")
    ]
    results = runner.run_many(specs, jobs=2, timeout_s=300, cache=ResultCache(tmp_path_factory.mktemp("probes")))
    return {r.label: r for r in results}


@pytest.mark.parametrize("name", list(PROBES))
def test_probe_verdict(probe_results: dict[str, jobs.SimResult], name: str) -> None:
    r = probe_results[name]
    expected = PROBES[name][2]
    if expected == "ok":
        assert r.status == jobs.OK and r.passed, (r.status, r.error, r.reason)
        return
    statuses, _, fragment = expected.partition(": ")
    assert r.status in statuses.split("|"), (r.status, r.error, r.reason)
    assert fragment in f"{r.error or ''} {r.reason or ''}", (r.error, r.reason)
