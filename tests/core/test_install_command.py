"""The install command the simulator's messages give (issue 25, 11): in a clone (an editable
install) `pip install 'pypto-tui[sim]'` looks for a package on PyPI; the message names the clone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pypto_tui.sim import availability


class _Dist:
    def __init__(self, direct_url: dict | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct_url) if name == "direct_url.json" and self.direct_url is not None else None


def _installed_as(monkeypatch: pytest.MonkeyPatch, direct_url: dict | None) -> None:
    monkeypatch.setattr(availability.importlib.metadata, "distribution", lambda name: _Dist(direct_url))
    monkeypatch.setattr(availability, "_installed_version", lambda dist: "2.13.0" if dist == "torch" else None)


def test_a_clone_is_told_to_install_its_own_folder_with_the_extra(monkeypatch, tmp_path: Path) -> None:
    clone = tmp_path / "my clone"
    _installed_as(monkeypatch, {"dir_info": {"editable": True}, "url": clone.as_uri()})
    msg = availability.check_sim().message
    pip = Path(sys.executable).with_name("pip")
    assert "pypto-tui[sim]" not in msg.replace(f"{clone}[sim]", "")
    assert f"install -e '{clone}[sim]'" in msg
    assert str(pip) in msg or f"{sys.executable} -m pip" in msg


@pytest.mark.parametrize("direct_url", [None, {"archive_info": {}, "url": "https://example.org/x.whl"},
                                        {"dir_info": {"editable": False}, "url": "file:///src/pypto-tui"}])
def test_an_installed_package_is_told_the_extra(monkeypatch, direct_url) -> None:
    _installed_as(monkeypatch, direct_url)
    assert availability.check_sim().message == "the simulator needs pypto 0.2.0: pip install 'pypto-tui[sim]'"
