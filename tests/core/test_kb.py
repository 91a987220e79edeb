"""The knowledge pack: schema validation, resolution order, and swapping packs changes verdicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pypto_tui.errors import PackError
from pypto_tui.kb import bundled_pack_dir, get_kb, load_pack, resolve_pack_dir
from pypto_tui.loops import plan_loops
from pypto_tui.tiles import evaluate_tile, rank_candidates


def test_default_pack_loads(kb):
    assert kb.name == "default"
    assert kb.limits.max_elements == 16384 and kb.limits.max_auto_tiles == 2048
    assert kb.limits.contiguous_bytes == 1024 and kb.limits.last_dim_align_bytes == 32
    assert kb.limits.max_vec_rank == 4
    assert set(kb.limits.dtype_bytes) >= {"fp32", "fp16", "bf16", "int8", "int16", "int32", "int64", "fp64", "bool"}
    assert kb.chip.ub_bytes == 196608
    assert kb.ladders.reduce_axis == (16, 32, 64)
    assert kb.ladders.loop_order == (16, 32, 8, 64, 1, 128)
    assert kb.ladders.ub_step_down == (16384, 8192, 4096)
    assert {"pypto-0.2.0", "docs"} <= set(kb.flavours) and kb.default_flavour == "pypto-0.2.0"


def test_every_rule_is_checked_applied_or_advice(kb):
    for rule in kb.rules.values():
        assert rule.enforced_by or rule.applied_by or rule.advice, rule.id
        assert rule.statement and rule.explanation
        assert rule.authority in ("compiler", "pypto-docs", "rule-docs")


def test_rule_ids_cover_both_documents(kb):
    prefixes = {r.split(".")[0] for r in kb.rules}
    assert {"P0", "P1", "P2", "P3", "P4", "P5", "P6", "A", "B", "C", "D", "E", "O1", "O2", "O3", "CL"} <= prefixes


def test_minimal_pack_changes_verdicts_without_code_change(kb, kb_minimal):
    # prod 16384 is fine by the default pack and over budget in the minimal one
    default = evaluate_tile(kb, (16, 256, 256), "fp32", (1, 64, 256), 1)
    minimal = evaluate_tile(kb_minimal, (16, 256, 256), "fp32", (1, 64, 256), 1)
    assert not default.findings or all(f.level != "error" for f in default.findings)
    assert any(f.rule == "P4.tile-budget" and f.level == "error" for f in minimal.findings)
    # 1 KB contiguous passes by default, fails the minimal pack's 2 KB threshold
    wide = (16, 256, 1024)
    assert {f.level for f in evaluate_tile(kb, wide, "fp32", (1, 16, 256), 1).findings
            if f.rule == "O1.contiguous-1kb"} == {"ok"}
    assert {f.level for f in evaluate_tile(kb_minimal, wide, "fp32", (1, 16, 256), 1).findings
            if f.rule == "O1.contiguous-1kb"} == {"warn"}
    # auto_tiles 1024 needs no loop by default, a loop with a 512 cap
    assert not evaluate_tile(kb, (16, 256, 256), "fp32", (1, 4, 256), 1).needs_loop
    assert evaluate_tile(kb_minimal, (16, 256, 256), "fp32", (1, 4, 256), 1).needs_loop
    # the ranked candidates follow the minimal pack's ladders and budget
    top = rank_candidates(kb_minimal, (16, 256, 256), "fp32", 1, top=3)
    assert top.candidates[0].tile == (1, 32, 256)  # the minimal pack tries 32 before 16
    assert rank_candidates(kb, (16, 256, 256), "fp32", 1, top=3).candidates[0].tile == (1, 16, 256)
    assert all(c.evaluation.prod <= 8192 for c in top.candidates)
    loops = plan_loops(kb_minimal, (16384, 1024), "fp32", (128, 128), why="matmul")
    assert [c.loop_count for c in loops.candidates] == [8, 16, 4, 32]


def _copy_pack(tmp_path: Path) -> Path:
    dst = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), dst)
    return dst


@pytest.mark.parametrize(("file", "old", "new", "where"), [
    ("limits.toml", "max_elements = 16384", "max_elements = \"lots\"", "tile.max_elements"),
    ("limits.toml", "max_elements = 16384", "max_elements = 0", "tile.max_elements"),
    ("limits.toml", "pool_planes = 8", "pool_planes = 0", "window.pool_planes"),
    ("limits.toml", "band_rows = 4096", "band_rows = \"many\"", "window.band_rows"),
    ("rules.toml", 'kind = "hard"', 'kind = "firm"', "kind"),
    ("rules.toml", 'enforced_by = ["tiles.vec_rank", "lint.literal_tiles"]', 'enforced_by = ["tiles.nope"]',
     "enforced_by"),
    ("rules.toml", 'enforced_by = ["tiles.vec_rank", "lint.literal_tiles"]', "", "enforced_by"),
    ("chip.toml", "ub_bytes = 196608", "", "chip.ub_bytes"),
    ("ladders.toml", "rings = [[16, 32], [8, 64], [1, 128]]", "rings = [[16, 32], [16]]", "loop_count.rings"),
    ("strategies.toml", 'reshape = "flatten"', 'reshape = "squash"', "reshape"),
    ("pack.toml", "schema = 1", "schema = 99", "pack.schema"),
    ("presets.toml", "tile = [1, 16, 256]", "tile = [1, 16]", "tile"),
])
def test_bad_pack_names_file_key_reason(tmp_path, file, old, new, where):
    pack = _copy_pack(tmp_path)
    text = (pack / file).read_text()
    assert old in text
    (pack / file).write_text(text.replace(old, new, 1))
    with pytest.raises(PackError) as err:
        load_pack(pack)
    assert err.value.file == file
    assert where in err.value.key
    assert err.value.reason
    assert "\n" not in str(err.value)


def test_broken_toml_and_missing_files(tmp_path):
    pack = _copy_pack(tmp_path)
    (pack / "limits.toml").write_text("[tile\nmax = 1")
    with pytest.raises(PackError, match="limits.toml.*not valid TOML"):
        load_pack(pack)
    (pack / "limits.toml").unlink()
    with pytest.raises(PackError, match="limits.toml.*missing file"):
        load_pack(pack)
    with pytest.raises(PackError, match="no pack.toml"):
        load_pack(tmp_path)
    with pytest.raises(PackError, match="not a folder"):
        load_pack(tmp_path / "nowhere")


def test_resolution_order(tmp_path, monkeypatch):
    assert resolve_pack_dir() == bundled_pack_dir()
    monkeypatch.setenv("PYPTO_TUI_KB", str(tmp_path / "env"))
    assert resolve_pack_dir() == tmp_path / "env"
    assert resolve_pack_dir(tmp_path / "cli") == tmp_path / "cli"


def test_get_kb_reloads_an_edited_pack(tmp_path):
    pack = _copy_pack(tmp_path)
    assert get_kb(pack).limits.max_elements == 16384
    text = (pack / "limits.toml").read_text().replace("max_elements = 16384", "max_elements = 4096")
    (pack / "limits.toml").write_text(text)
    import os
    os.utime(pack / "limits.toml", (1, 2_000_000_000))
    assert get_kb(pack).limits.max_elements == 4096


def test_rule_statements_follow_the_packs_numbers(kb, kb_minimal):
    """Statements name the pack's limits through placeholders, so a pack that changes a number
    changes the text the user reads (the minimal pack allows 8192 elements and 512 tiles)."""
    assert "16384" in kb.rule("P4.tile-budget").statement
    assert kb_minimal.rule("P4.tile-budget").statement == "prod(tile) must not exceed 8192 elements."
    assert "512" in kb_minimal.rule("CL.limits").statement and "2048" not in kb_minimal.rule("CL.limits").statement


def test_a_statement_with_an_unknown_placeholder_is_refused(tmp_path):
    (tmp_path / "pack.toml").write_text('[pack]\nname = "p"\nversion = "1"\nschema = 1\nextends = "default"\n')
    default = (bundled_pack_dir() / "rules.toml").read_text()
    (tmp_path / "rules.toml").write_text(default.replace("{max_elements} elements", "{max_elemnts} elements", 1))
    with pytest.raises(PackError, match=r"rules.toml: rule\[\d+\]\.statement: unknown placeholder \{max_elemnts\}"):
        load_pack(tmp_path)
