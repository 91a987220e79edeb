"""The dimension plan: data-driven strategy choice, user picks and the rules they break, O3."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from pypto_tui.dims import CHECKS, DimPlan, merge_conditions, plan_dims
from pypto_tui.errors import InputError


def _rules(plan):
    return {(f.rule, f.level) for f in plan.findings}


def test_user_keeps_elementwise_2d(contracts, kb):
    plan = plan_dims(contracts["elu"], kb, strategy="single-axis-keep")
    assert plan.kernel_rank == 2 and plan.forward_reshape == [None]
    assert ("P3.flatten-elementwise", "warn") in _rules(plan)


def test_user_picks_a_valid_but_unusual_rank(contracts, kb):
    plan = plan_dims(contracts["rms_norm"], kb, strategy="single-axis-keep")
    assert plan.kernel_rank == 4
    assert ("P3.rank-strategy", "warn") in _rules(plan)


def test_user_pick_that_changes_the_semantics_is_refused(contracts, kb):
    plan = plan_dims(contracts["softmax_rows"], kb, strategy="elementwise-1d")
    assert plan.strategy == "single-axis-keep" and plan.kernel_rank == 2  # kept the table's choice
    errors = [f for f in plan.findings if f.level == "error"]
    assert errors and errors[0].rule == "P3.rank-strategy" and "different roles" in errors[0].message


def test_user_forces_merge_where_o3_fails(kb):
    from pathlib import Path

    from pypto_tui.contract.extract import extract_contract

    c = extract_contract(Path(__file__).resolve().parent.parent / "fixtures/tasks_extra/mean_nonadjacent.py", kb)
    plan = plan_dims(c, kb, strategy="multi-axis-merge")
    errors = [f for f in plan.findings if f.level == "error"]
    assert errors[0].rule == "O3.merge-reduce-axes" and "not adjacent" in errors[0].message


def test_declining_a_safe_merge_is_flagged(contracts, kb):
    plan = plan_dims(contracts["mean_spatial"], kb, strategy="single-axis-keep")
    assert plan.kernel_rank == 4 and plan.reduce_axes == [2, 3]
    assert ("O3.merge-reduce-axes", "warn") in _rules(plan)


def test_unknown_strategy_id(contracts, kb):
    with pytest.raises(InputError, match="unknown strategy"):
        plan_dims(contracts["elu"], kb, strategy="nope")


def test_strategy_table_is_data(contracts, kb):
    """Drop the elementwise row from the pack: the plan changes with no code change."""
    pack = dataclasses.replace(kb, strategies=tuple(s for s in kb.strategies if s.id != "elementwise-1d"))
    plan = plan_dims(contracts["elu"], pack)
    assert plan.strategy is None and plan.kernel_rank is None
    assert any(f.rule == "P3.rank-strategy" for f in plan.findings)
    # and a pack that sends group norms to (B, C, rest) instead
    swapped = tuple(dataclasses.replace(s, ops=("group_norm", "instance_norm", "batch_norm", "rms_norm"))
                    if s.id == "channel-norm-3d" else s for s in kb.strategies if s.id != "group-norm-2d")
    inorm = plan_dims(contracts["batch_norm"], dataclasses.replace(kb, strategies=swapped))
    assert inorm.strategy == "channel-norm-3d"
    gn = plan_dims(contracts["group_norm"], dataclasses.replace(kb, strategies=swapped))
    assert gn.strategy is None  # (B, C, rest) cannot express groups: refused, with the reason
    assert any("cannot express groups" in f.message for f in gn.findings)


def test_alternatives_are_applicable_ids(contracts, kb):
    ids = {s.id for s in kb.strategies}
    for c in contracts.values():
        plan = plan_dims(c, kb)
        assert set(plan.alternatives) <= ids and plan.strategy not in plan.alternatives
        for alt in plan.alternatives:
            assert not any(f.level == "error" for f in plan_dims(c, kb, strategy=alt).findings)


def test_merge_conditions_reasons(contracts):
    ok, why = merge_conditions(contracts["mean_spatial"])
    assert ok and "adjacent" in why
    ok, why = merge_conditions(contracts["sum_over_channels"])
    assert not ok and "not a multi-axis" in why


def test_round_trip(contracts, kb):
    for c in contracts.values():
        plan = plan_dims(c, kb)
        back = DimPlan.from_dict(plan.to_json_dict())
        assert back.to_json_dict() == plan.to_json_dict()


def test_checks_cite_their_rules():
    assert set(CHECKS) == {"dims.rank_strategy", "dims.merge_reduce"}
    assert "P3.rank-strategy" in CHECKS["dims.rank_strategy"].__cites__
    assert "O3.merge-reduce-axes" in CHECKS["dims.merge_reduce"].__cites__


def test_dims_does_not_import_libcst():
    code = ("import sys, pypto_tui.dims, pypto_tui.contract.model; "
            "bad = [m for m in ('libcst', 'textual', 'typer', 'rich', 'torch') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
