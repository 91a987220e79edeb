"""Issue 15, items 7 and 9: every ending of the CLI is exit 0/1/2 with at most one error line; --json
always prints one document; packs warn on unknown keys and refuse absurd numbers; piped and
80-column output keeps every cell readable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile import TASKS, bundled_pack, one_error_line
from typer.testing import CliRunner

from pypto_tui.cli import app

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={"NO_COLOR": "1", **(env or {})})


@pytest.mark.parametrize("args", [
    ["tile", "--bogus"], ["tile", "--top", "0", "--shape", "16"], ["kb", "show"], ["kb"], ["nothing"],
    ["lint"], ["contract"], ["tile", "--shape"], ["kb", "show", "a", "b"],
])
def test_usage_errors_are_one_line(args: list[str]) -> None:
    r = run(*args)
    assert r.exit_code == 2, r.output
    line = one_error_line(r.stderr)
    assert "-h" in line  # says where the help is
    assert r.stdout == ""


@pytest.mark.parametrize("args", [
    ["tile", "--bogus"], ["tile", "--shape", "16,0"], ["kb", "show", "P99.nothing"], ["contract", "/nonexistent.py"],
    ["tile", "--shape", "16,256", "--no-candidates"], ["lint", "/nonexistent.py"], ["kb", "validate", "/nowhere"],
])
def test_json_with_exit_2_prints_an_error_document(args: list[str]) -> None:
    r = run(*args, "--json")
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    assert doc["error"] and doc["schema_version"] == 1
    assert doc["error"] in one_error_line(r.stderr)


def test_no_candidates_without_a_tile_is_bad_input() -> None:
    r = run("tile", "--shape", "16,256", "--no-candidates")  # was an AssertionError, exit 1
    assert r.exit_code == 2 and "--no-candidates without --tile" in one_error_line(r.stderr)


def test_a_newline_in_a_value_stays_on_one_line() -> None:
    r = run("tile", "--shape", "16\n256\x1b[31m")
    assert r.exit_code == 2
    line = one_error_line(r.stderr)
    assert "16\\n256\\x1b[31m" in line and "\x1b" not in r.stderr


def test_an_unexpected_exception_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypto_tui.tiles

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(pypto_tui.tiles, "rank_candidates", boom)
    r = run("tile", "--shape", "16,256", "--json")
    assert r.exit_code == 2  # never 1, the findings code
    line = one_error_line(r.stderr)
    assert "internal error (RuntimeError: simulated bug)" in line and "PYPTO_TUI_DEBUG" in line
    assert "internal error" in json.loads(r.stdout)["error"]
    r = run("tile", "--shape", "16,256", env={"PYPTO_TUI_DEBUG": "1"})
    assert r.exit_code == 2 and "Traceback" in r.stderr  # the developer's way to see it


def test_memory_error_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypto_tui.kb

    def oom(*a: object, **k: object) -> None:
        raise MemoryError

    monkeypatch.setattr(pypto_tui.kb, "get_kb", oom)
    r = run("kb", "list")
    assert r.exit_code == 2 and "internal error (MemoryError)" in one_error_line(r.stderr)


def test_console_script_maps_endings(run_cli) -> None:
    rc, out, err = run_cli("tile", "--bogus", "--json")
    assert rc == 2 and json.loads(out)["error"].startswith("no such option: --bogus")
    one_error_line(err)


# ------------------------------------------------------------------------------- packs
def _pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    shutil.copytree(bundled_pack(), pack)
    return pack


def test_pack_unknown_keys_and_files_are_warned(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    limits = pack / "limits.toml"
    limits.write_text(limits.read_text().replace("max_auto_tiles = 2048", "max_auto_tiles = 2048\nmax_elemnts = 4096"))
    (pack / "ladder.toml").write_text("[x]\n")
    r = run("kb", "validate", str(pack), "--json")
    assert r.exit_code == 0, r.output
    warnings = json.loads(r.stdout)["warnings"]
    assert any("tile.max_elemnts: unknown key, ignored; did you mean max_elements?" in w for w in warnings)
    assert any("ladder.toml is not a pack file" in w for w in warnings)
    assert r.stderr.count("pypto-tui: warning:") == 2
    r = run("tile", "--shape", "16,256", "--kb", str(pack), "--json")
    assert r.exit_code == 0 and "max_elemnts" in r.stderr  # every command warns, once


@pytest.mark.parametrize(("file", "old", "new", "key"), [
    ("limits.toml", "max_vec_rank = 4", "max_vec_rank = 100000", "tile.max_vec_rank"),
    ("limits.toml", "max_elements = 16384", "max_elements = 9999999999999", "tile.max_elements"),
    ("chip.toml", "reduce_ub_factor = 1.5", "reduce_ub_factor = inf", "chip.reduce_ub_factor"),
    ("ladders.toml", "order = [16, 32, 64]", "order = [16, 32, 99999999999]", "reduce_axis.order"),
    ("ladders.toml", "rings = [[16, 32], [8, 64], [1, 128]]", "rings = [[16, 32], [8, 64], [1, 4294967296]]",
     "loop_count.rings"),
])
def test_pack_absurd_numbers_are_refused(tmp_path: Path, file: str, old: str, new: str, key: str) -> None:
    pack = _pack(tmp_path)
    f = pack / file
    assert old in f.read_text()
    f.write_text(f.read_text().replace(old, new))
    r = run("kb", "validate", str(pack))
    assert r.exit_code == 2
    assert f"{file}: {key}:" in one_error_line(r.stderr)


def test_pack_non_utf8_toml_is_one_line(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    (pack / "chip.toml").write_bytes(b"[chip]\nname = \"caf\xe9\"\n")
    r = run("kb", "validate", str(pack))
    assert r.exit_code == 2 and "chip.toml: is not UTF-8 text" in one_error_line(r.stderr)


# ------------------------------------------------------------------------------- output layout
def test_piped_output_keeps_every_cell(run_cli) -> None:
    rc, out, _ = run_cli("kb", "list", env={"COLUMNS": ""})
    assert rc == 0
    from pypto_tui.kb import get_kb

    lines = out.splitlines()
    assert lines[0].split("\t")[:2] == ["id", "kind"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    for rule in get_kb().rules.values():
        row = rows[rule.id]  # one tab-separated line per rule, every field whole
        assert len(row) == 7 and row[5] == " ".join(rule.statement.split()) and row[2] == rule.severity
    assert "…" not in out
    longest = max(len(r.statement) for r in get_kb().rules.values())
    assert max(len(line) for line in lines) < longest + 400  # not padded to the widest row (was 1113)


@pytest.mark.parametrize("args", [
    ["kb", "list"],
    ["kb", "show", "P4.tile-budget"],
    ["loop", "--shape", "1000,4096", "--tile", "1,4096", "--loop-count", "16"],
    ["tile", "--shape", "16,256,256", "--reduce-dim", "1"],
    ["contract", str(TASKS / "kl_div_batchmean.py")],
])
def test_eighty_columns_cut_no_cell(run_cli, args: list[str]) -> None:
    rc, out, _ = run_cli(*args, env={"COLUMNS": "80"})
    assert rc in (0, 1)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_piped_panel_is_not_400_columns(run_cli) -> None:
    rc, out, _ = run_cli("kb", "show", "P4.tile-budget", env={"COLUMNS": ""})
    assert rc == 0 and max(len(line) for line in out.splitlines()) <= 100


def test_the_bundled_pack_reads_every_key_it_holds() -> None:
    """A key a parser reads straight from its table must be marked read, or every command warns
    about the default pack (ops.toml's loop_axis and estimate.toml's fits did, after merges)."""
    from pypto_tui.kb import load_pack

    assert load_pack(bundled_pack()).warnings == ()
