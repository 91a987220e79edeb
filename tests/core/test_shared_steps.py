"""A kernel repeated in a model (DenseNet's layers of one block) ranks its tiles once per process: two
pipelines with the same pack, contract and decisions get the same ranking object, and a different pack,
a different shape or a user's loop count is ranked anew."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.design import Design, Pipeline
from pypto_tui.kb import bundled_pack_dir, load_pack

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def _plan(kb, task: str, **design):
    return Pipeline(kb, Design(task=str(FIX / task), **design)).tile_plan()


def test_the_same_kernel_is_ranked_once_and_another_pack_ranks_its_own(kb) -> None:
    first = _plan(kb, "softmax_rows.py")
    assert _plan(kb, "softmax_rows.py") is first
    other = load_pack(bundled_pack_dir())  # the bundled pack loaded again: another object
    assert other is not kb
    again = _plan(other, "softmax_rows.py")
    assert again is not first and again == first


def test_another_shape_or_loop_count_is_ranked_anew(kb) -> None:
    first = _plan(kb, "softmax_rows.py")
    edited = Pipeline(kb, Design(task=str(FIX / "softmax_rows.py"), contract_edits={"inputs.x.shape": [64, 512]}))
    assert edited.tile_plan() is not first
    assert edited.tile_plan().candidates != first.candidates
    assert _plan(kb, "softmax_rows.py", loop_count=2) is not first
