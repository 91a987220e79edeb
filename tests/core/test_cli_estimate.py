"""The CLI side of the cost estimate: both picks in `tile --json` and `loop --json`, `--family`,
and `kb calibrate`'s refusals (exit 2, one line, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.kb import CostFit

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "120"}
TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


def calibrated(tmp_path: Path, ranking: str) -> Path:
    from pypto_tui.sim.calibrate import write_pack

    fit = CostFit("softmax", "0.2.0", {"segments": 1.0, "balance": 0.3}, error=0.1)
    write_pack(tmp_path / ranking, {"softmax": fit}, "0.2.0", ["t"], ranking)
    return tmp_path / ranking


def test_tile_json_shows_both_picks_and_what_decides(tmp_path):
    r = run("tile", "--shape", "16,16384", "--reduce-dim", "1", "--family", "softmax", "--json",
            "--kb", str(calibrated(tmp_path, "rules")))
    d = json.loads(r.stdout)
    assert r.exit_code == 0
    assert {"best_by_rules", "best_by_estimate", "ranking", "estimate_note", "recommended"} <= set(d)
    assert d["ranking"] == "rules" and d["recommended"]["tile"] == d["best_by_rules"]["tile"] == [1, 16384]
    assert d["best_by_estimate"]["estimate_us"] > 0 and "softmax" in d["estimate_note"]
    est = json.loads(run("tile", "--shape", "16,16384", "--reduce-dim", "1", "--family", "softmax", "--json",
                         "--kb", str(calibrated(tmp_path, "estimate"))).stdout)
    assert est["ranking"] == "estimate" and est["recommended"]["tile"] == est["best_by_estimate"]["tile"]


def test_tile_without_a_family_says_how_to_get_the_estimate():
    d = json.loads(run("tile", "--shape", "16,16384", "--reduce-dim", "1", "--json").stdout)
    assert d["best_by_estimate"] is None and "--family" in d["estimate_note"]
    assert d["best_by_rules"]["tile"] == d["recommended"]["tile"]


def test_tile_with_a_task_prices_with_its_family(tmp_path):
    d = json.loads(run("tile", str(TASKS / "softmax_rows.py"), "--json", "--kb",
                       str(calibrated(tmp_path, "rules"))).stdout)
    assert d["best_by_estimate"] is not None


def test_loop_json_shows_both_picks(tmp_path):
    from pypto_tui.sim.calibrate import write_pack

    write_pack(tmp_path / "p", {"elementwise": CostFit("elementwise", "0.2.0", {"iterations": 1.0})}, "0.2.0", ["t"],
               "rules")
    r = run("loop", "--shape", "67108864", "--tile", "8192", "--family", "elementwise", "--json", "--kb",
            str(tmp_path / "p"))
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["best_by_rules"]["loop_count"] == 16 and d["best_by_estimate"]["loop_count"] == 8
    assert d["recommended"]["loop_count"] == 16 and d["ranking"] == "rules"


@pytest.mark.parametrize(("args", "needle"), [
    (["tile", "--shape", "16,256", "--family", "telepathy"], "--family"),
    (["kb", "calibrate", "/nonexistent/task.py", "--out", "OUT"], "no such task file"),
    (["kb", "calibrate", str(TASKS / "elu.py"), "--out", "OUT", "--sweep", "all"], "--sweep"),
    (["kb", "calibrate", str(TASKS / "elu.py"), "--out", "OUT", "--ranking", "fastest"], "--ranking"),
])
def test_bad_input_exits_2(args, needle, tmp_path):
    r = run(*[str(tmp_path / "out") if a == "OUT" else a for a in args])
    assert r.exit_code == 2, r.output
    assert needle in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


def test_calibrate_never_overwrites_a_pack_without_force(tmp_path):
    out = tmp_path / "pack"
    out.mkdir()
    (out / "pack.toml").write_text("mine")
    r = run("kb", "calibrate", str(TASKS / "elu.py"), "--out", str(out))
    assert r.exit_code == 2 and "--force" in r.stderr
    assert (out / "pack.toml").read_text() == "mine"
