"""The one-shot CLI: JSON keys (a public contract), human output, and every exit code."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app

runner = CliRunner()
ENV = {"NO_COLOR": "1", "TERMINAL_WIDTH": "120"}


def run(*args: str):
    return runner.invoke(app, list(args), env=ENV)


def run_json(*args: str):
    r = run(*args, "--json")
    return r, json.loads(r.stdout)


def test_tile_evaluation_json_contract():
    r, d = run_json("tile", "--shape", "16,256,256", "--dtype", "fp32", "--reduce-dim", "1", "--tile", "1,16,256")
    assert r.exit_code == 0
    assert {"shape", "dtype", "reduce_dim", "evaluation", "candidates", "recommended"} <= set(d)
    e = d["evaluation"]
    assert {"tile", "prod", "auto_tiles", "contiguous_bytes", "reduce_segments", "needs_loop", "findings"} <= set(e)
    assert (e["prod"], e["auto_tiles"], e["contiguous_bytes"], e["reduce_segments"]) == (4096, 256, 1024, 16)
    assert all({"rule", "level", "message"} <= set(f) for f in e["findings"])


def test_tile_candidates_json_contract():
    r, d = run_json("tile", "--shape", "16,256,256", "--reduce-dim", "1", "--top", "5")
    assert r.exit_code == 0
    assert d["evaluation"] is None
    assert len(d["candidates"]) == 5
    assert d["recommended"]["tile"] == [1, 16, 256]
    assert {"tile", "prod", "auto_tiles", "contiguous_bytes", "reduce_segments", "needs_loop", "findings",
            "reasons", "rank"} <= set(d["candidates"][0])


def test_tile_with_error_exits_1():
    r, d = run_json("tile", "--shape", "16,70", "--tile", "16,7")
    assert r.exit_code == 1
    assert any(f["rule"] == "P4.last-dim-align" and f["level"] == "error" for f in d["evaluation"]["findings"])
    r2 = run("tile", "--shape", "4096,4096", "--tile", "1,32768")
    assert r2.exit_code == 1 and "P4.tile-budget" in r2.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["tile", "--shape", "16,0,4"], "positive"),
    (["tile", "--shape", "16,-3"], "positive"),
    (["tile", "--shape", "16,abc"], "not a whole number"),
    (["tile", "--shape", "16,256", "--tile", "1,2,3"], "3 dims"),
    (["tile", "--shape", "16,256", "--dtype", "fp8"], "unknown dtype"),
    (["tile", "--shape", "16,256", "--reduce-dim", "2"], "out of range"),
    (["tile"], "no shape"),
    (["loop", "--shape", "16,256"], "no tile"),
    (["loop", "--shape", "16,256", "--tile", "1,256", "--loop-count", "0"], "positive"),
    (["loop", "--shape", "16,256", "--tile", "1,256", "--axis", "5"], "out of range"),
    (["tile", "--shape", "16,256", "--kb", "/nonexistent/pack"], "knowledge pack"),
    (["kb", "show", "P99.nothing"], "no rule"),
])
def test_bad_input_exits_2_with_one_line(args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert needle in r.stderr
    assert "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) == 1


def test_loop_json_contract():
    r, d = run_json("loop", "--shape", "16384,1024", "--tile", "128,128", "--matmul")
    assert r.exit_code == 0
    assert {"needs_loop", "reason", "axis", "candidates", "recommended"} <= set(d)
    c = d["candidates"][0]
    assert {"loop_count", "basic_batch", "num_iters", "tail", "view_shape", "auto_tiles_per_iter", "findings"} <= set(c)
    assert d["needs_loop"] is True and d["recommended"]["loop_count"] == 16


def test_loop_tail_exits_1():
    r, d = run_json("loop", "--shape", "1000,4096", "--tile", "1,4096", "--loop-count", "16")
    assert r.exit_code == 1
    c = d["candidates"][0]
    assert (c["basic_batch"], c["num_iters"], c["tail"]) == (63, 16, 55)


def test_human_output_is_a_table():
    r = run("tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,256,64")
    assert r.exit_code == 0
    assert "O1.contiguous-1kb" in r.stdout and "prod" in r.stdout
    r = run("loop", "--shape", "67108864", "--tile", "8192")
    assert r.exit_code == 0 and "BASIC_BATCH" in r.stdout


def test_kb_commands(tmp_path):
    r, d = run_json("kb", "list")
    assert r.exit_code == 0 and len(d["rules"]) >= 50
    rule = next(x for x in d["rules"] if x["id"] == "P4.tile-budget")
    assert rule["enforced_by"] == ["tiles.prod_budget", "lint.literal_tiles"] and rule["where"]
    r = run("kb", "show", "O1.contiguous-1kb")
    assert r.exit_code == 0 and "1 KB" in r.stdout
    r, d = run_json("kb", "validate")
    assert r.exit_code == 0 and d["valid"] is True
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pack.toml").write_text("[pack]\nname = 'x'\n")
    r = run("kb", "validate", str(bad))
    assert r.exit_code == 2 and "pack.toml" in r.stderr


def test_kb_ops_lists_each_operator_with_its_spellings_and_aten_names():
    """The list a refused task's 'not in the operator registry' points to: every registry kind once, with
    the names the two front ends read it by."""
    from pypto_tui.ops.registry import REGISTRY

    r, doc = run_json("kb", "ops")
    assert r.exit_code == 0
    names = [o["name"] for o in doc["ops"]]
    assert sorted(names) == sorted(REGISTRY) and len(set(names)) == len(names)
    relu = next(o for o in doc["ops"] if o["name"] == "relu")
    assert relu["role"] == "elementwise" and "aten.relu.default" in relu["aten"] and "ReLU" in relu["modules"]
    text = run("kb", "ops")
    assert text.exit_code == 0 and any(line.split()[:2] == ["conv", "conv"] for line in text.output.splitlines())


def test_kb_swap_changes_cli_verdict(tmp_path):
    from pathlib import Path

    minimal = Path(__file__).resolve().parents[1] / "fixtures" / "kb_minimal"
    ok = run("tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,64,256")
    over = run("tile", "--shape", "16,256,256", "--reduce-dim", "1", "--tile", "1,64,256", "--kb", str(minimal))
    assert ok.exit_code == 0 and over.exit_code == 1
