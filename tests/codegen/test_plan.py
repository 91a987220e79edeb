"""Step 5 renders the plan: what the Tiles and Loops steps show is exactly what the kernel uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = [*sorted((FIX / "tasks").glob("*.py")), FIX / "tasks_extra" / "cumsum_dim.py"]


@pytest.mark.parametrize("task", TASKS, ids=lambda p: p.stem)
def test_kernel_constants_are_the_plans_choices(kb, task):
    p = Pipeline(kb, Design(task=str(task)))
    k = kernel_of(p)
    assert k.supported, k.reason
    plan = p.kernel_plan()
    for choice in plan.tiles:
        if choice.role.constant in k.constants:
            assert tuple(k.constants[choice.role.constant]["value"]) == choice.tile
    # a matmul writes cube tiles; its vec tile only sizes the M loop
    assert plan.cube is not None or plan.tiles[0].role.constant in k.constants
    assert plan.tiles[0].tile == p.chosen_tile()
    loop = p.loop_choice()
    if loop is None:
        assert "LOOP_COUNT" not in k.constants
    else:
        assert k.constants["LOOP_COUNT"]["value"] == loop.count == p.chosen_loop_count()
        assert k.constants["LOOP_COUNT"]["numbers"]["axis"] == p.loop_plan().axis
    if plan.cube is not None:
        assert k.constants["CUBE_M"]["value"] == list(plan.cube.evaluation.m)


def test_batch_norm_step_down_is_decided_by_the_tile_step(kb_rules):
    """BatchNorm's 4 live buffers (ops.toml) make the tile step shrink the documents' pick and say so
    there; the loop step then plans the channel loop (ops.toml loop_axis) on the tile the kernel uses."""
    p = Pipeline(kb_rules, Design(task=str(FIX / "tasks" / "batch_norm.py")))
    main = p.tile_choices()[0]
    assert main.source == "stepped-down" and main.requested is not None
    assert main.tile != main.requested and any(f.rule == "O1.ub-step-down" for f in main.findings)
    assert p.loop_plan().axis == 1 and p.loop_plan().tile == main.tile


def test_a_users_tile_is_kept_and_warned_about(kb):
    p = Pipeline(kb, Design(task=str(FIX / "tasks" / "batch_norm.py"), tile=[1, 1, 16384]))
    main = p.tile_choices()[0]
    assert main.source == "user" and main.tile == (1, 1, 16384)
    assert [f.level for f in main.findings if f.rule == "O1.ub-step-down"] == ["warn"]


def test_triplet_phase2_tile_is_a_planned_role(kb):
    p = Pipeline(kb, Design(task=str(FIX / "tasks" / "triplet_margin.py")))
    roles = [c.role.name for c in p.tile_choices()]
    assert roles == ["main", "phase2"]
    assert p.kernel_plan().tile("phase2").role.shape == (p.geometry().shape[0],)


def test_divisor_tail_preference_is_decided_by_the_loop_step(kb, tmp_path):
    task = tmp_path / "scale.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return x * 3.0\n\n\n"
                    "def get_inputs():\n    return [torch.randn(1000, 3001)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    p = Pipeline(kb, Design(task=str(task), tile=[1024], loop_count=16, loop_tail="divisor"))
    choice = p.loop_choice()
    assert choice is not None and not choice.candidate.has_tail
    assert choice.total % choice.count == 0 and choice.count != 16
    assert kernel_of(p).constants["LOOP_COUNT"]["value"] == choice.count


def test_unknown_operator_blocks_the_plan_with_the_reason(kb):
    p = Pipeline(kb, Design(task=str(FIX / "tasks_extra" / "unrecognised_op.py")))
    plan = p.kernel_plan()
    assert plan.blocked and not kernel_of(p).supported


def test_step_down_continues_below_the_ladder_and_fills_the_padded_rows(kb):
    """cumsum holds 3 buffers of >= 16 rows (ops.toml): on a 32768-wide row the ladder's last rung
    (1, 4096) still holds 786432 B, so the step keeps halving to (1, 1024), then gives the tile the
    16 rows it pays for anyway: (16, 1024), 16x fewer tiles in the same unified buffer."""
    from pypto_tui.plan import TileRole
    from pypto_tui.tiles import choose_tile, held_bytes

    role = TileRole("main", "TILE_SHAPE", (32768, 32768), "fp32", 1, live_buffers=3, min_rows=16)
    choice = choose_tile(kb, role)
    assert choice is not None and choice.tile == (16, 1024) and choice.source == "stepped-down"
    assert held_bytes(kb, choice.tile, "fp32", 3, 16) <= kb.chip.ub_bytes
    assert held_bytes(kb, (1, 4096), "fp32", 3, 16) > kb.chip.ub_bytes


def test_a_loop_past_the_ladders_end_keeps_every_iteration_within_the_tile_limit(kb):
    """When no ladder count keeps auto_tiles per iteration under the limit, the smallest count past
    the ladder that does is used (never silently the ladder's first count, whose chunks overflow)."""
    from pypto_tui.loops import choose_loop, plan_loops

    plan = plan_loops(kb, (32768, 32768), "fp32", (1, 1024), 0)
    assert plan.recommended is None
    loop = choose_loop(kb, plan)
    assert loop is not None and loop.count == 512
    assert loop.candidate.auto_tiles_per_iter <= kb.limits.max_auto_tiles
    assert any(f.rule == "O2.loop-log-scale" and "512" in f.message for f in loop.findings)


def test_a_where_counts_its_padded_mask_and_scratch_and_a_narrow_tile_steps_down(kb):
    """pypto 0.2.0 refused level-2 task 51's last kernel (an exact GELU on (2048, 2) fp32) at tile (2048, 8):
    "WHERE_TT in/output total size [209056] exceeds MEM_UB size [196608]". The model reproduces that
    count, keeps the wide tiles a where builds with, and steps the narrow one down."""
    from pypto_tui.plan import TileRole
    from pypto_tui.tiles import choose_tile, held_bytes

    assert held_bytes(kb, (2048, 8), "fp32", 1, select_mask=True) == 209056
    assert held_bytes(kb, (16384,), "fp32", 1, select_mask=True) <= kb.chip.ub_bytes  # standalone GELU's tile
    assert held_bytes(kb, (16, 1024), "fp32", 1, select_mask=True) <= kb.chip.ub_bytes
    assert held_bytes(kb, (2048, 8), "fp32", 1) <= kb.chip.ub_bytes  # without the mask it looked fine
    role = TileRole("main", "TILE_SHAPE", (2048, 2), "fp32", None, select_mask=True)
    choice = choose_tile(kb, role, user_tile=None)
    assert choice is not None and held_bytes(kb, choice.tile, "fp32", 1, select_mask=True) <= kb.chip.ub_bytes
    # the task: a GELU over a narrow tensor selects, so its kernel's tile is stepped down
    task = FIX / "tasks_extra" / "narrow_gelu.py"
    k = kernel_of(Pipeline(kb, Design(task=str(task))))
    assert k.supported, k.reason
    import re

    tile = tuple(int(v) for v in re.search(r"TILE_SHAPE = \(([^)]*)\)", k.source).group(1).split(",") if v.strip())
    assert held_bytes(kb, tile, "fp32", 1, select_mask=True) <= kb.chip.ub_bytes, tile
    assert tile == (1024, 8) and "a where's two value tiles" in k.source  # stepped down from (2048, 8)


def test_a_max_pools_select_holds_three_tiles_beside_its_mask(kb):
    """A 2-D max pool combines its taps with where(gt(win, acc), win, acc): three value tiles, the mask and
    the scratch. Measured with pypto 0.2.0 on a 3x3 pool of (2, 3, 128, 128): (1, 104, 128) builds, (1, 112,
    128) and the budget's (1, 128, 128) fail a pass; the window tile steps down below them."""
    from pypto_tui.tiles import held_bytes

    assert held_bytes(kb, (1, 104, 128), "fp32", 3, select_mask=True) == 185504 <= kb.chip.ub_bytes
    assert held_bytes(kb, (1, 112, 128), "fp32", 3, select_mask=True) == 198816 > kb.chip.ub_bytes
    k = kernel_of(Pipeline(kb, Design(task=str(FIX / "tasks_extra" / "maxpool2d_3x3_same.py"))))
    assert k.supported, k.reason
    import re

    tile = tuple(int(x) for x in re.search(r"^TILE = \(([\d, ]+)\)", k.source, re.M).group(1).split(", "))
    assert held_bytes(kb, tile, "fp32", 3, select_mask=True) <= kb.chip.ub_bytes and tile[-1] * tile[-2] >= 8192
