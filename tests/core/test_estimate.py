"""The cost estimate (SIM.cost-estimate): its features, the pack data, the ranking hook, the fit
and the pack `kb calibrate` writes. No compiler: the fit is checked on runs made up from a known
model, and the ranking on packs built here."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.errors import PackError
from pypto_tui.estimate import Point, estimator_for, features, lower_bound, rank_by_estimate
from pypto_tui.estimate_fit import FIT_FEATURES, Sample, _design, _loto, estimate_toml, fit, pick_regret
from pypto_tui.kb import CostFit, bundled_pack_dir, load_pack
from pypto_tui.loops import plan_loops
from pypto_tui.tiles import rank_candidates
from pypto_tui.vocabulary import ESTIMATE_FEATURES

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def write_pack(tmp: Path, fits: dict[str, CostFit], ranking: str) -> Path:
    from pypto_tui.sim.calibrate import write_pack as write

    write(tmp, fits, "0.2.0", ["t"], ranking)
    return tmp


def softmax_fit(**coefficients: float) -> CostFit:
    return CostFit("softmax", "0.2.0", coefficients, error=0.1, samples=10, tasks=("a", "b"))


def test_features_count_what_the_design_decides():
    f = features(Point((16, 16384), 4, (1,), (2, 4096)), cores=48)
    assert set(f) == set(ESTIMATE_FEATURES)
    assert math.exp(f["tiles"]) == pytest.approx(32)          # 8 x 4 tiles
    assert math.exp(f["segments"]) == pytest.approx(4)        # the reduce axis in 4 tiles
    assert math.exp(f["groups"]) == pytest.approx(8)
    assert math.exp(f["rows"]) == pytest.approx(2)
    assert f["iterations"] == 0.0 and f["waves"] == 0.0
    looped = features(Point((128, 524288), 4, (1,), (1, 8192), 0, 16), cores=48)
    assert math.exp(looped["iterations"]) == pytest.approx(16)
    assert math.exp(looped["waves"]) == pytest.approx(1)      # 8 rows a chunk: one wave of 8 groups
    assert features(Point((16, 16384), 4, (1,), (2, 8192)), 48)["big_split"] > 0   # 64 KB tiles, 2 segments
    assert features(Point((16, 16384), 4, (1,), (1, 16384)), 48)["big_split"] == 0  # one segment: no split
    # BatchNorm's statistics run over batch and space (ops.toml reduce_axes): one group per channel
    bn = features(Point((8, 32, 4096), 4, (0, 2), (2, 1, 1024)), 48)
    assert math.exp(bn["groups"]) == pytest.approx(32) and math.exp(bn["segments"]) == pytest.approx(16)


def test_rank_by_estimate_keeps_the_documents_order_on_ties_and_puts_unpriced_last():
    r = rank_by_estimate(["a", "b", "c", "d"], {"a": 3.0, "b": None, "c": 1.0, "d": 3.0}.get)
    assert r.best == 2 and r.order == (2, 0, 3, 1)
    none = rank_by_estimate(["a"], None, "why")
    assert none.best is None and none.note == "why"


def test_lower_bound_widens_with_error_and_few_runs():
    one, many = lower_bound(10.0, 1.0, 0.2, 1), lower_bound(10.0, 1.0, 0.2, 9)
    assert one < many < 10.0
    assert lower_bound(10.0, 1.0, 0.0, 1) == lower_bound(10.0, 1.0, 0.1, 1) < 10.0   # the floor
    assert lower_bound(10.0, 2.0, 0.3, 1) > lower_bound(10.0, 1.0, 0.3, 1)


def test_default_pack_keeps_the_documents_order(kb):
    """Without a decision for the family (a bare price, no fit), the default pack recommends in the
    documents' order, whatever the estimate says ("auto" decides per family: test_ranking_default.py)."""
    assert kb.estimate is None or kb.estimate.ranking in ("rules", "auto")
    plan = rank_candidates(kb, (16, 16384), "fp32", 1, top=500, estimate=lambda t: 100.0 / t[0])
    tiles = [c.tile for c in plan.candidates]
    assert plan.ranking == "rules" and plan.recommended.tile == plan.best_by_rules.tile
    assert tiles.index((1, 8192)) < tiles.index((2, 4096)) < tiles.index((4, 4096))
    assert plan.best_by_estimate is not None and plan.best_by_estimate.tile != plan.recommended.tile
    preset = rank_candidates(kb, (16, 256, 256), "fp32", 1, top=3, estimate=lambda t: 1.0 / t[1])
    assert preset.recommended.tile == (1, 16, 256) and preset.best_by_estimate.tile[1] > 16


def test_calibrated_pack_changes_the_ranking_and_never_lifts_an_unqualified_tile(tmp_path):
    pack = load_pack(write_pack(tmp_path, {"softmax": softmax_fit(rows=-1.0, segments=0.5)}, "estimate"))
    fam = pack.estimate.fit_for("softmax")
    assert fam is not None and pack.estimate.ranking == "estimate"
    est, why = estimator_for(pack, "softmax")
    assert est is not None and not why

    def price(tile):
        return est.us(Point((16, 16384), 4, (1,), tile))

    plan = rank_candidates(pack, (16, 16384), "fp32", 1, top=500, estimate=price)
    assert plan.ranking == "estimate"
    assert plan.recommended is plan.best_by_estimate and plan.recommended.tile != plan.best_by_rules.tile
    assert plan.best_by_rules.tile == (1, 16384)
    # more rows is cheaper in this made-up fit: the most rows that still qualify win
    assert plan.recommended.tile[0] > 1 and plan.recommended.qualified
    firsts = [c.qualified for c in plan.candidates]
    assert firsts == sorted(firsts, reverse=True), "an unqualified tile was ranked above a qualified one"
    priced = [c.estimate_us for c in plan.candidates if c.qualified]
    assert priced == sorted(priced)


def test_calibrated_pack_changes_the_loop_recommendation(tmp_path):
    pack = load_pack(write_pack(tmp_path, {"norm": CostFit("norm", "0.2.0", {"iterations": 0.5})}, "estimate"))
    est, _ = estimator_for(pack, "norm")

    def price(n):
        return est.us(Point((128, 524288), 4, (1,), (1, 8192), 0, n))

    rules = plan_loops(load_pack(bundled_pack_dir()), (128, 524288), "fp32", (1, 8192), 0, None, "auto", price)
    ranked = plan_loops(pack, (128, 524288), "fp32", (1, 8192), 0, None, "auto", price)
    assert rules.recommended.loop_count == 16 and rules.ranking == "rules"
    assert ranked.recommended.loop_count == 8 == ranked.best_by_estimate.loop_count and ranked.ranking == "estimate"
    assert ranked.best_by_rules.loop_count == 16


def test_a_family_without_a_fit_keeps_the_documents_order_and_says_so(tmp_path):
    pack = load_pack(write_pack(tmp_path, {"softmax": softmax_fit(rows=-1.0)}, "estimate"))
    est, why = estimator_for(pack, "conv")
    assert est is None and "no fitted estimate" in why and "conv" in why
    p = Pipeline(pack, Design(task=str(TASKS / "max_over_dim.py")))
    plan = p.tile_plan()
    assert plan.ranking == "rules" and plan.best_by_estimate is None and "reduction" in plan.estimate_note
    assert plan.recommended.tile == (1, 16, 256)


def test_the_pipeline_prices_each_tile_with_its_own_loop(tmp_path):
    pack = load_pack(write_pack(tmp_path, {"norm": CostFit("norm", "0.2.0", {"iterations": 1.0, "tiles": 0.1})},
                                "rules"))
    p = Pipeline(pack, Design(task=str(TASKS / "group_norm.py")))
    plan = p.tile_plan(top=None)
    priced = {c.tile: c.estimate_us for c in plan.candidates if c.estimate_us is not None}
    assert priced and all(c.qualified for c in plan.candidates if c.estimate_us is not None)
    # group_norm holds 4 tile-sized buffers: a (1, 16384) tile cannot compile, so it is not priced
    assert (1, 16384) not in priced and (1, 8192) in priced
    assert p.loop_plan().best_by_estimate is not None


@pytest.mark.parametrize("text, where", [
    ('[estimate]\nranking = "fastest"\n', "ranking"),
    ('[fit.softmax]\npypto = "0.2.0"\n[fit.softmax.coefficients]\nspeed = 1.0\n', "speed"),
    ('[fit.softmax]\npypto = "0.2.0"\n[fit.softmax.coefficients]\nrows = "a"\n', "rows"),
    ('[fit.softmax]\npypto = "0.2.0"\nerror = -1\n[fit.softmax.coefficients]\nrows = 1.0\n', "error"),
    ('[fit.softmax]\n[fit.softmax.coefficients]\nrows = 1.0\n', "pypto"),
])
def test_a_bad_estimate_file_is_refused_with_its_key(tmp_path, text, where):
    shutil.copy(bundled_pack_dir() / "pack.toml", tmp_path / "pack.toml")
    (tmp_path / "pack.toml").write_text('[pack]\nname = "x"\nversion = "1"\nschema = 1\nextends = "default"\n')
    (tmp_path / "estimate.toml").write_text(text if text.startswith("[estimate]") else '[estimate]\n' + text)
    with pytest.raises(PackError) as e:
        load_pack(tmp_path)
    assert "estimate.toml" in str(e.value) and where in str(e.value)


def _made_up_runs() -> list[Sample]:
    """Runs of three softmax-like tasks from a known model: log us = 0.8 segments + 0.3 rows + noise."""
    true = {"segments": 0.8, "rows": 0.3}
    out = []
    for i, (shape, rows) in enumerate((((16, 16384), 16), ((32, 8192), 32), ((64, 4096), 64))):
        for r in (1, 2, 4, 8):
            if r > rows:
                continue
            for cols in (256, 512, 1024, 2048, 4096):
                if r * cols >= 16384 or cols > shape[1]:   # under half the unified buffer: no big split
                    continue
                p = Point(shape, 4, (1,), (r, cols))
                f = features(p, 48)
                wobble = 0.02 * math.sin(7 * r + cols)
                us = math.exp(1.0 + i + sum(c * f[n] for n, c in true.items()) + wobble)
                out.append(Sample(f"task{i}", "softmax", "softmax", p, us))
    return out


def test_a_reduction_over_tiles_filling_half_the_buffer_is_handed_out_a_task_per_step():
    """The cost model's task count grows for such tiles (max_over_dim (1,64,256): 48 tasks, against
    16 for (1,32,256)); the balance feature counts a task per extra segment there, not below."""
    def tasks(tile):
        return round(math.exp(features(Point((16, 256, 256), 4, (1,), tile), 48)["balance"]))

    assert tasks((1, 32, 256)) == 16                   # 32 KB tiles: one task per group
    assert tasks((1, 64, 256)) == 16 + 16 * 3          # 64 KB tiles, 4 segments: a task per extra step
    assert tasks((1, 256, 64)) == 64 * 1               # 64 KB but one segment: nothing to split


def test_the_fit_recovers_a_known_model_and_its_error():
    f = fit(_made_up_runs(), "softmax", "0.2.0", 48)
    assert f.samples == len(_made_up_runs()) and len(f.tasks) == 3
    assert f.elements == (16 * 16384, 16 * 16384)  # the tensors measured: what the ranking trusts it on
    assert f.error < 0.05 and f.worst < 0.15

    est = __import__("pypto_tui.estimate", fromlist=["Estimator"]).Estimator(f, 48)
    runs = [s for s in _made_up_runs() if s.task == "task1"]
    pick = min(runs, key=lambda s: est.us(s.point))
    assert pick.e2e_us <= min(s.e2e_us for s in runs) * 1.05


def test_a_pick_is_scored_among_the_qualified_runs_only():
    """The estimate ranks (0) first, but the rules reject it: the recommendation picks (2), twice
    as slow as the fastest qualified run (1); counting the rejected run would call the pick perfect."""
    y, guess = np.log([1.0, 2.0, 4.0]), np.array([0.0, 2.0, 1.0])
    assert pick_regret(y, guess, np.array([False, True, True])) == pytest.approx(math.log(2))
    assert pick_regret(y, guess, np.array([True, True, True])) == 0.0
    assert pick_regret(y, guess, np.array([False, False, False])) == 0.0   # none marked: all count


def test_the_fit_selection_ignores_a_fast_run_the_rules_reject():
    """Each made-up task gains a rejected run twice as fast as any other, which the model ranks
    last: scored with it, every held-out pick looks log(2) off; scored among the qualified runs
    (what calibrate marks), the fit that recovers the model picks each task's best."""
    runs = _made_up_runs()
    extra = []
    for task in ("task0", "task1", "task2"):
        mine = [s for s in runs if s.task == task]
        slowest = max(mine, key=lambda s: features(s.point, 48)["segments"])
        fastest = min(s.e2e_us for s in mine)
        extra.append(Sample(task, "softmax", "softmax", slowest.point, fastest / 2, qualified=False))
    marked = _design(runs + extra, FIT_FEATURES, 48, (0.0, 0.0))
    unmarked = _design(runs + [Sample(s.task, s.family, s.op, s.point, s.e2e_us) for s in extra],
                       FIT_FEATURES, 48, (0.0, 0.0))
    assert _loto(marked, 1.0)[1] < 0.02
    assert _loto(unmarked, 1.0)[1] > 0.5


def test_pick_error_is_the_spread_near_each_tasks_best():
    """Every other run of each made-up task's slow tail gets 50% slower, which the model cannot know:
    the spread over all runs (error) grows with it, the spread among runs within 1.5x of the best
    (pick_error, what the guided tile sweep trusts) stays the model's small noise."""
    runs = _made_up_runs()
    best = {t: min(s.e2e_us for s in runs if s.task == t) for t in ("task0", "task1", "task2")}
    wobbled = [s if s.e2e_us < 1.5 * best[s.task] else
               Sample(s.task, s.family, s.op, s.point, s.e2e_us * 1.5 ** (i % 2)) for i, s in enumerate(runs)]
    f = fit(wobbled, "softmax", "0.2.0", 48)
    assert f.error > 0.15
    assert 0 < f.pick_error < 0.06


def test_the_written_estimate_loads_back(tmp_path):
    f = fit(_made_up_runs(), "softmax", "0.2.0", 48)
    (tmp_path / "pack.toml").write_text('[pack]\nname = "x"\nversion = "1"\nschema = 1\nextends = "default"\n')
    (tmp_path / "estimate.toml").write_text(estimate_toml({"softmax": f}, "estimate", 'a "quoted" note'))
    pack = load_pack(tmp_path)
    back = pack.estimate.fits["softmax"]
    assert back.coefficients == pytest.approx(f.coefficients) and back.error == f.error and back.tasks == f.tasks
    assert back.pick_error == f.pick_error > 0 and back.loop_error == f.loop_error
    assert pack.estimate.ranking == "estimate" and pack.estimate.note == 'a "quoted" note'
