"""Version profiles and levels: the same kernel is judged for the release it targets.

The release comes from `--pypto`, else the pack's `[lint] pypto`, else the installed pypto's
metadata, else the pack's fallback; strict mode raises the rule documents' style rules back to
the documents' severity. lint.toml is pack data: a broken one is a one-line PackError.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.errors import InputError, PackError
from pypto_tui.kb import bundled_pack_dir, get_kb, load_pack
from pypto_tui.lint import lint_source
from pypto_tui.lint import profile as profile_mod
from pypto_tui.lint.profile import lint_settings, matching_profile

KB = get_kb()

# One module with a trap of each kind that differs between the releases.
TRAPS = textwrap.dedent("""\
    import pypto

    R, C = 64, 512
    B = 24


    @pypto.jit
    def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, C)
        for i in pypto.loop(3):
            rows = min(B, R - i * B)
            if pypto.cond(i == 0):
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)


    @pypto.frontend.jit(new_ir=True)
    def other(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, C)
        out.move(pypto.exp(x))
    """)


def _rules(release: str, **kw: object) -> list[str]:
    return sorted(f.rule for f in lint_source(TRAPS, kb=KB, pypto=release, **kw))  # type: ignore[arg-type]


def test_what_each_profile_reports_on_the_same_module() -> None:
    assert _rules("0.2.0") == ["API.jit-options", "API.known-name", "V020.builtin-minmax", "V020.no-cond"]
    assert _rules("0.2.1") == []


def test_default_release_follows_the_installed_pypto(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = lint_settings(KB)
    monkeypatch.setattr(profile_mod, "installed_pypto", lambda: "0.2.1")
    assert settings.profile().pypto == "0.2.1"
    monkeypatch.setattr(profile_mod, "installed_pypto", lambda: "0.2.0.post1")
    assert settings.profile().pypto == "0.2.0"
    monkeypatch.setattr(profile_mod, "installed_pypto", lambda: None)
    assert settings.profile().pypto == settings.fallback == "0.2.0"
    monkeypatch.setattr(profile_mod, "installed_pypto", lambda: "0.1.3")
    assert settings.profile().pypto == "0.2.0"
    assert settings.profile("0.2.1").pypto == "0.2.1"  # --pypto wins


def test_matching_profile_picks_the_newest_release_not_after_the_installed_one() -> None:
    profiles = lint_settings(KB).profiles
    assert matching_profile("0.2.1", profiles) == "0.2.1"
    assert matching_profile("0.3.0", profiles) == "0.2.1"
    assert matching_profile("0.2.0rc1", profiles) == "0.2.0"
    assert matching_profile("0.1.9", profiles) is None


def test_an_unknown_release_is_one_input_error() -> None:
    with pytest.raises(InputError, match="no lint profile for pypto 9.9: use --pypto with one of 0.2.0, 0.2.1"):
        lint_source(TRAPS, kb=KB, pypto="9.9")


def test_the_installed_version_is_read_without_importing_pypto() -> None:
    import sys

    was = "pypto" in sys.modules
    profile_mod.installed_pypto()
    assert ("pypto" in sys.modules) == was


STYLE = textwrap.dedent("""\
    import pypto


    @pypto.frontend.jit
    def kernel(x: pypto.Tensor((64, 512), pypto.DT_FP32), out: pypto.Tensor((64, 512), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2):
            for j in pypto.loop(2):
                block = pypto.view(x, [32, 256], [i * 32, j * 256])
                pypto.assemble(pypto.exp(1.0 - block), [i * 32, j * 256], out)


    class ModelNew:  # a KernelBench module: the documents' style rules report here by default
        def forward(self, x):
            return x
    """)


def test_strict_mode_raises_the_style_rules_back() -> None:
    default = {(f.rule, f.level) for f in lint_source(STYLE, kb=KB, pypto="0.2.0")}
    assert default == {("P5.tensor-left", "warn")}  # nesting is silent, scalar-left a warning
    strict = {(f.rule, f.level) for f in lint_source(STYLE, kb=KB, pypto="0.2.0", strict=True)}
    assert strict == {("P5.tensor-left", "error"), ("P6.no-nested-loops", "error")}


def _pack(tmp_path: Path, lint_toml: str | None) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.toml").write_text('[pack]\nname = "t"\nversion = "1"\nschema = 1\nextends = "default"\n')
    if lint_toml is not None:
        text = (bundled_pack_dir() / "lint.toml").read_text(encoding="utf-8")
        (pack / "lint.toml").write_text(lint_toml.replace("{bundled}", text), encoding="utf-8")
        shutil.copytree(bundled_pack_dir() / "api", pack / "api")
    return pack


def test_a_pack_sets_the_release_and_strict_mode(tmp_path: Path) -> None:
    text = (bundled_pack_dir() / "lint.toml").read_text(encoding="utf-8")
    pinned = text.replace('pypto = ""', 'pypto = "0.2.1"').replace("strict = false", "strict = true")
    kb = load_pack(_pack(tmp_path, pinned))
    assert sorted(f.rule for f in lint_source(TRAPS, kb=kb)) == []
    assert {f.level for f in lint_source(STYLE, kb=kb)} == {"error"}


def test_a_pack_without_lint_toml_uses_the_bundled_one(tmp_path: Path) -> None:
    kb = load_pack(_pack(tmp_path, None))
    assert lint_settings(kb).path == bundled_pack_dir() / "lint.toml"
    assert _rules("0.2.0") == sorted(f.rule for f in lint_source(TRAPS, kb=kb, pypto="0.2.0"))


@pytest.mark.parametrize(("edit", "key"), [
    (('"V020.no-cond" = ["0.2.0"]', '"V020.no-cond" = ["0.3.7"]'), "versions.V020.no-cond"),
    (('level = "off"', 'level = "loud"'), "style"),
    (('fallback = "0.2.0"', 'fallback = "1.0"'), "lint.fallback"),
    (('api = ["api/pypto-0.2.0.txt"]', 'api = ["api/missing.txt"]'), "profile[0].api"),
])
def test_a_broken_lint_toml_names_file_key_and_reason(tmp_path: Path, edit: tuple[str, str], key: str) -> None:
    text = (bundled_pack_dir() / "lint.toml").read_text(encoding="utf-8")
    assert edit[0] in text
    with pytest.raises(PackError) as err:  # when the pack is loaded (its api files) or first linted with
        kb = load_pack(_pack(tmp_path, text.replace(edit[0], edit[1], 1)))
        lint_source(TRAPS, kb=kb)
    assert err.value.file == "lint.toml" and err.value.key.startswith(key), (err.value.key, str(err.value))


runner = CliRunner()


def test_cli_pypto_and_strict_options(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text(TRAPS, encoding="utf-8")
    r = runner.invoke(app, ["lint", str(f), "--pypto", "0.2.0", "--json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert (doc["pypto"], doc["strict"], doc["count"]) == ("0.2.0", False, 4)
    assert {"findings", "fixed", "count"} <= set(doc)  # the existing keys stay
    r = runner.invoke(app, ["lint", str(f), "--pypto", "0.2.1", "--json"])
    assert (r.exit_code, json.loads(r.stdout)["count"]) == (0, 0)
    s = tmp_path / "s.py"
    s.write_text(STYLE, encoding="utf-8")
    r = runner.invoke(app, ["lint", str(s), "--pypto", "0.2.0", "--strict", "--json"])
    doc = json.loads(r.stdout)
    assert doc["strict"] is True and {x["level"] for x in doc["findings"]} == {"error"}


def test_cli_unknown_release_is_exit_2_with_one_line(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text(TRAPS, encoding="utf-8")
    r = runner.invoke(app, ["lint", str(f), "--pypto", "0.9"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "pypto-tui: error: no lint profile for pypto 0.9: use --pypto with one of 0.2.0, 0.2.1"
