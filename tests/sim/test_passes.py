"""The pass check on pass-verify's rows (no pypto): every expected pass at every checked place,
a failing pass named, a missing row never taken for a pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.sim import jobs as J
from pypto_tui.sim.passes import check_passes, fold_into, parse_brief, read_rows

PASSES = ("Pass_04_ExpandFunction", "Pass_14_SplitK", "Pass_17_L1CopyInReuseMerge", "Pass_26_InferDynShape",
          "Pass_28_InferParamIndex", "Pass_36_CodegenPreproc")
HEADER = ("funcID,passName,referPassName,verifyType,loopInfo,ioflag,outputShape,outputValidShape,outputDtype,"
          "outputTensor,goldenTensor,verifyResult,rtol,atol,maxAbsDiff,maxRelDiff,averageAbsDiff,averageRelDiff,"
          "errorCount,errorRatio,zeroCount,zeroRatio,timeStamp")


def brief(rows: list[tuple[str, str, str]], func: str = "TENSOR_f") -> str:
    """A brief CSV: one line per (pass, loop info, result)."""
    lines = [HEADER]
    for i, (name, loop, result) in enumerate(rows, 1):
        bad = result != "PASS"
        lines.append(f'{i},{name},tensor_graph,{func},{loop},output0,"[4]","[4]",DT_FP32,a.data,b.data,{result},'
                     f'0.001,0.001,{44.0 if bad else 0.0},2.0,0,0,{2016 if bad else 0},0.1,0,0,{i}')
    return "\n".join(lines) + "\n"


def all_rows(loops: int = 1, fail: dict[str, str] | None = None, drop: set[str] = frozenset()) -> list:
    out = []
    for name in PASSES:
        for it in range(loops):
            if (name, it) in drop or name in drop:
                continue
            out.append((name, f"bi={it}@loop_idx_0=0", (fail or {}).get(name, "PASS")))
    return out


def check(text: str, launches: int = 1, reference_ok: bool | None = True):
    return check_passes(parse_brief(text, "0"), 1, launches, PASSES, "tensor_graph", reference_ok)


def test_every_pass_at_every_iteration_verifies() -> None:
    c = check(brief(all_rows(loops=16)))
    assert c.verified and c.first_failing is None and c.missing == []
    assert c.checked == ["tensor_graph", *PASSES] and c.rows == 96 and c.sites == 16


def test_the_first_failing_pass_in_pipeline_order_is_named() -> None:
    c = check(brief(all_rows(fail={"Pass_36_CodegenPreproc": "FAILED", "Pass_28_InferParamIndex": "FAILED"})))
    assert not c.verified and c.first_failing == "Pass_28_InferParamIndex"
    assert "2016 element(s)" in c.reason and "max abs diff 44" in c.reason


def test_no_rows_is_not_a_pass() -> None:
    c = check(brief([]))
    assert not c.verified and c.missing == list(PASSES) and c.checked == ["tensor_graph"]
    assert "not a pass" in c.reason


def test_one_missing_row_in_one_iteration_is_not_a_pass() -> None:
    c = check(brief(all_rows(loops=4, drop={("Pass_17_L1CopyInReuseMerge", 2)})))
    assert not c.verified and c.missing == ["Pass_17_L1CopyInReuseMerge"]
    assert "at 1 of 4" in c.reason


def test_a_kernel_call_without_its_file_is_not_a_pass() -> None:
    c = check(brief(all_rows()), launches=2)
    assert not c.verified and c.missing == list(PASSES)


def test_the_reference_stage_failing_comes_first() -> None:
    c = check(brief(all_rows(fail={"Pass_04_ExpandFunction": "FAILED"})), reference_ok=False)
    assert c.first_failing == "tensor_graph" and not c.verified


def test_a_pack_without_passes_verifies_nothing() -> None:
    c = check_passes(parse_brief(brief(all_rows()), "0"), 1, 1, (), "tensor_graph", True)
    assert not c.verified and "passes.toml" in c.reason


def test_read_rows_finds_every_brief_file(tmp_path: Path) -> None:
    for run in ("output_1/verify_a", "output_2/verify_b"):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "verify_result_brief.csv").write_text(brief(all_rows()))
    rows, files = read_rows(tmp_path)
    assert files == 2 and len(rows) == 12
    assert len({r.site for r in rows}) == 2  # the same function in two launches stays two places


@pytest.mark.parametrize(("status", "verified", "want_status"), [
    (J.OK, True, J.OK), (J.OK, False, J.UNVERIFIED), (J.MISMATCH, True, J.MISMATCH),
])
def test_fold_into_a_result(status: str, verified: bool, want_status: str) -> None:
    r = J.SimResult(kind="verify", status=status, passed=status == J.OK)
    rows = all_rows() if verified else all_rows(drop={"Pass_14_SplitK"})
    fold_into(r, check(brief(rows), reference_ok=status == J.OK))
    assert r.status == want_status and r.passed is (want_status == J.OK)
    assert r.passes_expected == ["tensor_graph", *PASSES]


def test_the_default_pack_lists_the_measured_passes() -> None:
    pv = get_kb().pass_verify
    assert pv is not None and pv.passes == PASSES and pv.reference == "tensor_graph"
    assert len(pv.stages) == 7
    rule = get_kb().rule(pv.rule)
    assert rule is not None and rule.authority == "compiler" and rule.severity == "error"


def test_verify_jobs_carry_the_pack_passes_and_old_verdicts_are_not_reused() -> None:
    j = J.SimJob(kind="verify", kernel_source="x", inputs=(J.InputSpec((4,)),), task_file="t.py")
    assert j.passes == PASSES and j.reference == "tensor_graph"
    assert J.SimJob.from_json(j.to_json()) == j
    material = j.cache_material("0.2.0")
    assert material["passes"] == list(PASSES) and material["pass_check"] == J.PASS_CHECK_FORMAT
    cost = J.SimJob(kind="cost", kernel_source="x", inputs=(J.InputSpec((4,)),))
    assert cost.passes is None and "passes" not in cost.cache_material("0.2.0")
