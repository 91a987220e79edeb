"""Issue 25, item 5: a pack that passes validation must not break later. Numbers are finite, a pack
file that is not a regular file says what it is, and lint.toml's api lists are files inside the pack."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from pypto_tui.errors import PackError
from pypto_tui.kb import bundled_pack_dir, load_pack


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    dst = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), dst)
    return dst


def test_the_copy_loads(pack: Path) -> None:
    assert load_pack(pack).rules


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_number_that_is_not_finite_is_refused(pack: Path, value: str) -> None:
    estimate = pack / "estimate.toml"
    text, n = re.subn(r"^intercept = \S+$", f"intercept = {value}", estimate.read_text(), count=1, flags=re.M)
    assert n == 1
    estimate.write_text(text)
    with pytest.raises(PackError, match=r"estimate.toml: fit\.\w+\.intercept: must be a finite number"):
        load_pack(pack)


def test_a_coefficient_that_is_not_finite_is_refused(pack: Path) -> None:
    estimate = pack / "estimate.toml"
    head, sep, rest = estimate.read_text().partition(".coefficients]\n")
    assert sep
    first = rest.splitlines()[0]
    estimate.write_text(head + sep + re.sub(r"= .*", "= nan", first) + "\n" + "\n".join(rest.splitlines()[1:]) + "\n")
    with pytest.raises(PackError, match="must be a finite number"):
        load_pack(pack)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_a_pack_file_is_named_as_one(pack: Path) -> None:
    (pack / "chip.toml").unlink()
    os.mkfifo(pack / "chip.toml")
    with pytest.raises(PackError, match="chip.toml: is a FIFO, not a regular file"):
        load_pack(pack)


def test_a_folder_in_place_of_an_optional_pack_file_is_named_as_one(pack: Path) -> None:
    (pack / "ops.toml").unlink()
    (pack / "ops.toml").mkdir()
    with pytest.raises(PackError, match="ops.toml: is a folder, not a regular file"):
        load_pack(pack)


def _set_first_api(pack: Path, entry: str) -> None:
    lint = pack / "lint.toml"
    text, n = re.subn(r"^api = \[.*\]$", f"api = [{entry!r}]".replace("'", '"'), lint.read_text(), count=1,
                      flags=re.M)
    assert n == 1
    lint.write_text(text)


def test_a_lint_api_file_that_is_missing_is_refused_at_load(pack: Path) -> None:
    _set_first_api(pack, "api/no-such-release.txt")
    with pytest.raises(PackError, match=r"lint.toml: profile\[0\]\.api\[0\]: 'api/no-such-release.txt' does not exist"):
        load_pack(pack)


@pytest.mark.parametrize("entry", ["../../../../etc/passwd", "/etc/passwd"])
def test_a_lint_api_path_out_of_the_pack_is_refused(pack: Path, entry: str) -> None:
    _set_first_api(pack, entry)
    with pytest.raises(PackError, match="is outside the pack folder"):
        load_pack(pack)


def test_a_lint_api_symlink_out_of_the_pack_is_refused(pack: Path, tmp_path: Path) -> None:
    outside = tmp_path / "names.txt"
    outside.write_text("pypto\n")
    (pack / "api" / "linked.txt").symlink_to(outside)
    _set_first_api(pack, "api/linked.txt")
    with pytest.raises(PackError, match="is outside the pack folder"):
        load_pack(pack)


def test_kb_validate_says_it_in_one_line(pack: Path) -> None:
    from typer.testing import CliRunner

    from pypto_tui.cli import app

    _set_first_api(pack, "../../../../etc/passwd")
    r = CliRunner().invoke(app, ["kb", "validate", "--kb", str(pack)])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "outside the pack folder" in r.stderr


def test_fusion_rules_are_read_and_checked_with_the_rest_of_the_pack(pack: Path) -> None:
    """fusion.toml is a pack file like the others: loaded by load_pack, its rows on the pack, a bad row
    refused with the file and key, and a pack without one fuses as the bundled default does."""
    kb = load_pack(pack)
    assert {r.anchor for r in kb.fusion} >= {"matmul", "elementwise"}
    text = (pack / "fusion.toml").read_text()
    (pack / "fusion.toml").write_text(text + '\n[[fusion]]\nid = "X.again"\nanchor = "matmul"\n')
    with pytest.raises(PackError, match=r"fusion.toml.*fusion\[\d+\]\.anchor.*one row per anchor"):
        load_pack(pack)
    (pack / "fusion.toml").write_text('[[fusion]]\nanchor = "matmul"\n')
    with pytest.raises(PackError, match=r"fusion.toml.*id.*missing"):
        load_pack(pack)
    (pack / "fusion.toml").write_text('[[fusion]]\nid = "T.none"\nanchor = "matmul"\nepilogue = ["add"]\n')
    assert [(r.id, r.epilogue) for r in load_pack(pack).fusion] == [("T.none", ("add",))]
    (pack / "fusion.toml").unlink()
    assert load_pack(pack).fusion == load_pack(bundled_pack_dir()).fusion
