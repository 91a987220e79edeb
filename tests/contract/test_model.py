"""The contract as data: JSON round trip, the CLI's JSON keys, and user edits."""

from __future__ import annotations

import json

import pytest

from pypto_tui.contract.edits import apply_edits
from pypto_tui.contract.model import Contract, Input, Reduction
from pypto_tui.dims import plan_dims
from pypto_tui.errors import InputError

ISSUE_KEYS = ["family", "op", "supported", "reason", "inputs", "init_params", "reduction", "asymmetric",
              "direction", "formula", "output_shape", "unknown", "dims"]
FAMILIES = {"elementwise", "softmax", "reduction", "norm", "loss", "matmul", "scan", "conv", "pool",
            "attention", "unknown"}
DTYPES = {"fp32", "fp16", "bf16", "int32", "int64", "bool", "fp64", "int8", "int16"}


def test_round_trip_through_json(contracts):
    for name, c in contracts.items():
        back = Contract.from_dict(json.loads(json.dumps(c.to_dict())))
        assert back == c, name


def test_cli_json_shape(contracts, kb):
    for name, c in contracts.items():
        d = json.loads(json.dumps(c.to_json_dict(plan_dims(c, kb))))
        assert list(d)[: len(ISSUE_KEYS)] == ISSUE_KEYS, name
        assert d["family"] in FAMILIES
        for i in d["inputs"]:
            assert set(i) >= {"name", "kind", "shape", "dtype"}
            assert i["kind"] in ("tensor", "scalar") and i["dtype"] in DTYPES
        if d["reduction"] is not None:
            assert set(d["reduction"]) >= {"op", "axes", "keepdim", "scaling"}
            assert all(a >= 0 for a in d["reduction"]["axes"])
            assert d["reduction"]["scaling"] in ("sum", "mean", "batchmean", "none")
        assert isinstance(d["unknown"], list)
        assert set(d["dims"]) >= {"kernel_rank", "forward_reshape", "kernel_shapes", "reduce_axis", "merged_axes"}


def test_dims_null_without_a_plan(contracts):
    assert contracts["elu"].to_json_dict()["dims"] is None


def test_edit_recomputes_dependent_fields(contracts):
    c = contracts["sum_over_channels"]
    e = apply_edits(c, {"op_args.dim": -1})
    assert e.reduction.axes == (3,) and e.output_shape == (16, 64, 256, 1)
    assert "op_args.dim" in e.edited
    assert c.reduction.axes == (1,)  # the original is untouched


def test_edit_of_reduction_fields_is_written_back(contracts):
    e = apply_edits(contracts["sum_over_channels"], {"reduction.keepdim": False})
    assert e.reduction.keepdim is False and e.output_shape == (16, 256, 256)
    e = apply_edits(contracts["mean_spatial"], {"reduction.axes": [1, 2, 3]})
    assert e.reduction.count == 64 * 128 * 128 and e.output_shape == (16,)


def test_explicit_edits_win_and_clear_unknown(kb):
    from pathlib import Path

    from pypto_tui.contract.extract import extract_contract

    task = Path(__file__).resolve().parent.parent / "fixtures" / "tasks_extra" / "unknown_op.py"
    c = extract_contract(task, kb)
    e = apply_edits(c, {"family": "reduction", "op": "max", "op_args.dim": 1, "op_args.operands": ["x"],
                      "formula": "out[i] = max_j x[i, j]"}, kb)
    assert (e.family, e.op, e.supported) == ("reduction", "max", True)
    assert e.formula == "out[i] = max_j x[i, j]"
    assert e.output_shape == (16,) and not e.unknown
    assert not any(f.rule == "P0.contract-first" for f in e.findings)


def test_input_edit_fills_an_unknown_shape(kb):
    from pathlib import Path

    from pypto_tui.contract.extract import extract_contract

    task = Path(__file__).resolve().parent.parent / "fixtures" / "tasks_extra" / "unresolved_shape.py"
    c = extract_contract(task, kb, strict=False)
    e = apply_edits(c, {"inputs.x.shape": [8, 32], "inputs.x.dtype": "fp16"}, kb)
    assert e.inputs[0].shape == (8, 32) and e.output_shape == (8, 32) and e.output_dtype == "fp16"
    assert not e.unknown


@pytest.mark.parametrize("edit", [{"nope": 1}, {"family": "banana"}, {"inputs.zz.shape": [1]},
                                  {"reduction.scaling": "avg"}, {"formula.x": "y"}])
def test_bad_edits_are_input_errors(contracts, edit):
    with pytest.raises(InputError):
        apply_edits(contracts["elu"], edit)


def test_dataclasses_from_dict_validate():
    with pytest.raises(InputError):
        Input.from_dict({"name": "x", "kind": "matrix"})
    assert Reduction.from_dict({"op": "sum", "axes": 1, "keepdim": True, "scaling": "sum"}).axes == (1,)
