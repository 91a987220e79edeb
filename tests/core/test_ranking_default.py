"""The better pick by default (issue 22): with `ranking = "auto"` the estimate decides a family's
tiles or loop counts only where the pack's measured picks say it lands closer to the optimum than
the documents' order; the documents' pick is shown beside it with its rules and its expected loss;
a pack can still say `ranking = "rules"`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.estimate import rank_decision
from pypto_tui.kb import CostFit, PickRecord, load_pack

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
runner = CliRunner()


def pack_ranking(tmp_path: Path, kb, ranking: str) -> Path:  # type: ignore[no-untyped-def]
    """The default pack with its estimate.toml's ranking switched."""
    own = tmp_path / ranking
    own.mkdir()
    (own / "pack.toml").write_text(f'[pack]\nname = "{ranking}"\nversion = "1"\nschema = 1\nextends = "default"\n')
    text = (Path(kb.path) / "estimate.toml").read_text()
    assert 'ranking = "auto"' in text
    (own / "estimate.toml").write_text(text.replace('ranking = "auto"', f'ranking = "{ranking}"', 1))
    return own


def test_rank_decision_follows_the_measured_picks(kb):
    fit = CostFit("f", "0.2.0", {"balance": 1.0}, picks={
        "tiles": PickRecord(1.0, 1.3, 3), "loops": PickRecord(1.05, 1.04, 4)})
    assert kb.estimate.ranking == "auto"
    tiles, loops = rank_decision(kb, fit, "tiles"), rank_decision(kb, fit, "loops")
    assert tiles.estimate_decides and "1.300x" in tiles.why
    assert not loops.estimate_decides and "1.040x" in loops.why
    unmeasured = CostFit("g", "0.2.0", {"balance": 1.0})
    assert not rank_decision(kb, unmeasured, "tiles").estimate_decides
    assert not rank_decision(kb, None, "tiles").estimate_decides


def test_default_pack_lets_the_estimate_pick_a_reductions_tile(kb):
    """The reduction fit's tile picks measured 1.000x against the documents' 1.355x: the estimate's
    pick is recommended, the documents' pick shown beside it with its rules and expected loss."""
    p = Pipeline(kb, Design(task=str(TASKS / "max_over_dim.py")))
    plan = p.tile_plan()
    assert plan.ranking == "estimate" and "the estimate decides" in plan.ranking_note
    assert plan.recommended.tile == plan.best_by_estimate.tile != plan.best_by_rules.tile
    assert p.chosen_tile() == plan.best_by_estimate.tile
    d = plan.to_dict()
    assert "O1.reduce-sweet-spot" in d["rules_pick_rules"]
    assert d["rules_pick_expected_loss"] > 1.0
    assert d["rules_pick_expected_loss"] == plan.best_by_rules.estimate_us / plan.best_by_estimate.estimate_us


def test_default_pack_keeps_the_documents_tile_where_the_estimate_did_not_beat_it(kb):
    """Softmax: both orders measured 1.000x of the optimum, so the documents' order keeps deciding."""
    plan = Pipeline(kb, Design(task=str(TASKS / "softmax_rows.py"))).tile_plan()
    assert plan.ranking == "rules" and plan.recommended.tile == plan.best_by_rules.tile
    assert "the documents' order decides" in plan.ranking_note


def test_a_pack_can_still_choose_the_rules(kb, tmp_path):
    rules = load_pack(pack_ranking(tmp_path, kb, "rules"))
    plan = Pipeline(rules, Design(task=str(TASKS / "max_over_dim.py"))).tile_plan()
    assert plan.ranking == "rules" and plan.recommended.tile == plan.best_by_rules.tile == (1, 16, 256)
    assert plan.best_by_estimate.tile != plan.recommended.tile


def test_loop_counts_follow_the_estimate_for_losses(kb, tmp_path):
    """The loss fit's loop picks measured 1.000x against the documents' 1.767x. A loss of 1-D operands
    still flattens and loops (a 2-D one lays out rows, LOSS.scalar-rows, and needs no loop here)."""
    task = tmp_path / "mse_1d.py"
    flat = "torch.randn(batch_size * input_shape[0])"
    task.write_text((TASKS / "mse_loss.py").read_text().replace("torch.randn(batch_size, *input_shape)", flat))
    assert flat in task.read_text()
    assert Pipeline(kb, Design(task=str(task))).dims().strategy == "simple-loss-1d"
    assert Pipeline(kb, Design(task=str(TASKS / "mse_loss.py"))).dims().strategy == "simple-loss-rows"
    auto = Pipeline(kb, Design(task=str(task))).loop_plan()
    rules = Pipeline(load_pack(pack_ranking(tmp_path, kb, "rules")), Design(task=str(task)))
    documents = rules.loop_plan()
    assert auto is not None and documents is not None
    assert documents.ranking == "rules"
    assert auto.best_by_estimate is not None and auto.ranking == "estimate"
    assert auto.recommended.loop_count == auto.best_by_estimate.loop_count
    assert "loop-count" in auto.ranking_note


def test_tile_json_adds_the_decision_and_keeps_its_keys():
    r = runner.invoke(app, ["tile", str(TASKS / "max_over_dim.py"), "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 0
    assert {"best_by_rules", "best_by_estimate", "ranking", "estimate_note", "recommended", "candidates"} <= set(d)
    assert d["ranking"] == "estimate" and d["recommended"]["tile"] == d["best_by_estimate"]["tile"]
    assert d["rules_pick_rules"] and d["rules_pick_expected_loss"] > 1.0 and d["ranking_note"]
    text = runner.invoke(app, ["tile", str(TASKS / "max_over_dim.py")], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "expects the rules' pick to take" in text.output and "O1.reduce-sweet-spot" in text.output


def test_far_below_the_sizes_a_fit_was_measured_on_the_documents_order_decides(kb, tmp_path):
    """The norm fit (tensors of 262144-67108864 elements) picked (4, 128) for PyPTO's (32, 128) bf16 RMSNorm
    example, 3.42 us in SIM against 2.01 us for the example and 1.53 us for the documents' (32, 128)
    (benchmarks/bench_peers.py): a 4096-element tensor is 64x below what the fit saw."""
    from pypto_tui.estimate import RANGE_SLACK

    fit = CostFit("f", "0.2.0", {"balance": 1.0}, picks={"tiles": PickRecord(1.0, 1.3, 3)},
                  elements=(262144, 67108864))
    low = rank_decision(kb, fit, "tiles", 4096)
    assert not low.estimate_decides and "4096 elements is far below the 262144-67108864" in low.why
    assert rank_decision(kb, fit, "tiles", 262144 // RANGE_SLACK).estimate_decides  # within the slack
    assert rank_decision(kb, fit, "tiles", 2_000_000_000).estimate_decides  # above: throughput, picks held
    assert rank_decision(kb, fit, "tiles").estimate_decides  # no size given: as before
    # the shipped norm fit says what it was measured on, and the tiny bf16 RMSNorm gets the documents' tile
    assert kb.estimate.fits["norm"].elements == (262144, 67108864)
    r = runner.invoke(app, ["tile", "--shape", "32,128", "--dtype", "bf16", "--family", "norm", "--reduce-dim", "1",
                            "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert tuple(doc["recommended"]["tile"]) == (32, 128), doc["recommended"]


def test_a_fits_measured_sizes_are_written_read_back_and_checked(kb, tmp_path):
    from pypto_tui.estimate_fit import estimate_toml

    fit = CostFit("norm", "0.2.0", {"balance": 0.5}, samples=3, tasks=("a",), elements=(1024, 65536))
    text = estimate_toml({"norm": fit}, "auto", "test")
    assert "elements = [1024, 65536]" in text
    own = tmp_path / "p"
    own.mkdir()
    (own / "pack.toml").write_text('[pack]\nname = "p"\nversion = "1"\nschema = 1\nextends = "default"\n')
    (own / "estimate.toml").write_text(text)
    assert load_pack(own).estimate.fits["norm"].elements == (1024, 65536)
    (own / "estimate.toml").write_text(text.replace("elements = [1024, 65536]", "elements = [65536, 1024]"))
    r = runner.invoke(app, ["tile", "--shape", "32,128", "--kb", str(own)])
    assert r.exit_code == 2 and "elements" in r.output and "smallest, largest" in r.output
    assert "Traceback" not in r.output
