"""A knowledge pack reads only its own regular files, and its templates are validated on load.

A template that was a symlink to /etc/passwd was read (and its lines printed in the error);
`extends` followed `../../..` and absolute paths; `kb validate` accepted garbage or symlinked
templates and `scaffold` then failed with an internal error; a rule placeholder with a format spec
(`{max_elements:>999999999}`) built a gigabyte string."""

from __future__ import annotations

import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
from hostile import TASKS, one_error_line

from pypto_tui.errors import PackError
from pypto_tui.kb import MAX_TEMPLATE_BYTES, bundled_pack_dir, load_pack

TEMPLATE = Path("templates") / "common" / "softmax.py.tmpl"
TASK = str(TASKS / "softmax_rows.py")


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    dst = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), dst)
    assert (dst / TEMPLATE).is_file()
    return dst


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:SECRET-LINE:/root:/bin/bash\n")
    return secret


def test_a_template_linked_out_of_the_pack_is_refused_unread(pack: Path, tmp_path: Path, run_cli) -> None:
    secret = _secret(tmp_path)
    (pack / TEMPLATE).unlink()
    (pack / TEMPLATE).symlink_to(secret)
    for args in (["kb", "validate", str(pack)], ["scaffold", TASK, "--kb", str(pack)]):
        rc, out, err = run_cli(*args)
        line = one_error_line(err)
        assert rc == 2 and "symlink out of the pack folder" in line, (args, err)
        assert "SECRET" not in out + err


def test_a_symlink_inside_the_pack_is_its_own_file(pack: Path) -> None:
    target = pack / "templates" / "common" / "softmax_copy.txt"
    (pack / TEMPLATE).rename(target)
    (pack / TEMPLATE).symlink_to(target.name)
    assert load_pack(pack).rules


def test_a_pack_file_linked_out_of_the_pack_is_refused(pack: Path, tmp_path: Path) -> None:
    (pack / "chip.toml").unlink()
    (pack / "chip.toml").symlink_to(_secret(tmp_path))
    with pytest.raises(PackError, match="chip.toml: is a symlink out of the pack folder") as info:
        load_pack(pack)
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize(("content", "needle"), [
    (b"\xff\xfe\x00garbage", "is not UTF-8 text"),
    (b"def (:\n", "not Python once its placeholders are filled"),
    (b"x = {max_elements:>999999999}\n", "not Python once its placeholders are filled"),
    (b"x = {no_such_placeholder}\n", "unknown placeholder {no_such_placeholder}"),
    (b"#" * (MAX_TEMPLATE_BYTES + 1), f"reads at most {MAX_TEMPLATE_BYTES}"),
])
def test_a_bad_template_is_refused_by_kb_validate_and_scaffold(pack: Path, run_cli, content: bytes,
                                                               needle: str) -> None:
    (pack / TEMPLATE).write_bytes(content)
    with pytest.raises(PackError, match="templates/common/softmax.py.tmpl"):
        load_pack(pack)
    for args in (["kb", "validate", str(pack)], ["scaffold", TASK, "--kb", str(pack)]):
        rc, _, err = run_cli(*args)
        assert rc == 2 and needle in one_error_line(err), (args, err)


@pytest.mark.parametrize("fifo_or_folder", ["folder", "fifo"])
def test_a_template_that_is_not_a_file_is_named(pack: Path, fifo_or_folder: str) -> None:
    import os

    (pack / TEMPLATE).unlink()
    if fifo_or_folder == "folder":
        (pack / TEMPLATE).mkdir()
    else:
        os.mkfifo(pack / TEMPLATE)
    t0 = time.monotonic()
    with pytest.raises(PackError, match="not a regular file|is a folder"):
        load_pack(pack)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("extends", ["../../../etc", "/etc", "default/../..", "../default", "nope", "default/",
                                     ""])
def test_extends_names_a_bundled_pack_never_a_path(pack: Path, extends: str) -> None:
    text = (pack / "pack.toml").read_text()
    (pack / "pack.toml").write_text(text.replace("[pack]", f"[pack]\nextends = {extends!r}", 1))
    with pytest.raises(PackError, match="pack.extends: .* is not a bundled pack"):
        load_pack(pack)


def test_extends_default_still_fills_the_missing_files(pack: Path) -> None:
    text = (pack / "pack.toml").read_text()
    (pack / "pack.toml").write_text(text.replace("[pack]", "[pack]\nextends = \"default\"", 1))
    (pack / "ops.toml").unlink()
    assert load_pack(pack).ops


@pytest.mark.parametrize("placeholder", ["{max_elements:>999999999}", "{max_elements!r}", "{max_elements[0]}",
                                         "{max_elements.real}"])
def test_a_rule_placeholder_is_a_plain_name(pack: Path, placeholder: str) -> None:
    rules = pack / "rules.toml"
    text = rules.read_text()
    assert "{max_elements}" in text
    rules.write_text(text.replace("{max_elements}", placeholder, 1))
    tracemalloc.start()
    try:
        with pytest.raises(PackError, match="is not a plain name: write {name}"):
            load_pack(pack)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # was: a gigabyte of padding


def test_the_bundled_pack_passes_its_own_template_checks() -> None:
    kb = load_pack(bundled_pack_dir(), thorough=True)  # the checks a plain load leaves to this test
    assert not [w for w in kb.warnings if "templates/" in w]
