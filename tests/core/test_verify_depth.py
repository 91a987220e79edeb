"""How many input seeds and test sizes a verification runs: `--trials`/`--sizes`, then
$PYPTO_TUI_VERIFY_TRIALS/$PYPTO_TUI_VERIFY_SIZES, then the pack's verify.toml (2 and 2). No compiler."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.errors import InputError
from pypto_tui.kb import PackError, bundled_pack_dir, load_pack
from pypto_tui.sim.verification import SIZES_ENV, TRIALS_ENV, Criterion, resolved_depth


@pytest.mark.full_depth
def test_the_flag_then_the_environment_then_the_pack(kb, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (kb.verify.trials, kb.verify.sizes) == (2, 2)
    assert resolved_depth(Criterion(), kb.verify) == (2, 2)
    monkeypatch.setenv(SIZES_ENV, "1")
    monkeypatch.setenv(TRIALS_ENV, "3")
    assert resolved_depth(Criterion(), kb.verify) == (3, 1)
    assert resolved_depth(Criterion(trials=1, sizes=2), kb.verify) == (1, 2)


@pytest.mark.parametrize("value", ["0", "3", "two", "١", "1_0"])
def test_a_bad_environment_value_is_one_line_naming_the_variable(kb, monkeypatch, value: str) -> None:
    monkeypatch.setenv(SIZES_ENV, value)
    with pytest.raises(InputError, match=rf"^\${SIZES_ENV}=.*use a whole number from 1 to 2 .*--sizes"):
        resolved_depth(Criterion(), kb.verify)


def test_a_pack_may_ask_one_size_and_no_more_than_two(tmp_path: Path) -> None:
    (tmp_path / "pack.toml").write_text('[pack]\nname = "p"\nversion = "1"\nschema = 1\nextends = "default"\n')
    default = (bundled_pack_dir() / "verify.toml").read_text()
    assert "\nsizes = 2 " in default
    (tmp_path / "verify.toml").write_text(default.replace("\nsizes = 2 ", "\nsizes = 1 ", 1))
    assert load_pack(tmp_path).verify.sizes == 1
    (tmp_path / "verify.toml").write_text(default.replace("\nsizes = 2 ", "\nsizes = 3 ", 1))
    with pytest.raises(PackError, match=r"verify.toml: verify\.sizes: must be <= 2"):
        load_pack(tmp_path)


def test_sizes_beyond_two_is_refused_on_the_command_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["verify", str(tmp_path / "task.py"), "--sizes", "3"])
    assert r.exit_code == 2 and "--sizes" in r.output
