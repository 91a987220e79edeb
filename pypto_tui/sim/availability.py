"""Is the simulator usable here? Answered without importing torch or pypto.

Importing torch takes seconds and importing pypto switches the root logger to DEBUG, so the
question "can I offer Sim / Verify?" must be answered from the installed metadata alone
(`importlib.util.find_spec` + `importlib.metadata.version`). The answer carries a one-line
message that says exactly what to install, so the CLI and the app can show it as it is.

Only pypto 0.2.0 is supported: the CopyToHost workaround (see `shim`) and the file formats the
parser reads were checked against that release and no other.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pypto_tui.errors import InputError

SUPPORTED_PYPTO = "0.2.0"
TORCH_PIN = "2.13.0"

INSTALL_SIM = "pip install 'pypto-tui[sim]'"
INSTALL_TORCH = f"pip install torch=={TORCH_PIN}"


def _clone_folder() -> Path | None:
    """The source folder when pypto-tui is an editable install from a clone (pip's direct_url.json
    says so), else None: there `pip install 'pypto-tui[sim]'` would look for a package on PyPI."""
    try:
        text = importlib.metadata.distribution("pypto-tui").read_text("direct_url.json")
        info = json.loads(text or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return None
    url = str(info.get("url", ""))
    if not (isinstance(info.get("dir_info"), dict) and info["dir_info"].get("editable") and url.startswith("file://")):
        return None
    return Path(unquote(urlparse(url).path))


def _pip() -> str:
    """This interpreter's pip (the venv's, not whichever `pip` is first on PATH)."""
    pip = Path(sys.executable).with_name("pip")
    return shlex.quote(str(pip)) if pip.exists() else f"{shlex.quote(sys.executable)} -m pip"


def install_sim_command() -> str:
    """How to add the [sim] extra to this install: in a clone, the editable install of the clone
    with the extra (the second set-up of the README), else the package from the index."""
    folder = _clone_folder()
    if folder is None:
        return INSTALL_SIM
    return f"{_pip()} install -e {shlex.quote(f'{folder}[sim]')}"


def install_torch_command() -> str:
    return f"{_pip()} install torch=={TORCH_PIN}" if _clone_folder() is not None else INSTALL_TORCH


class SimUnavailable(InputError):
    """The [sim] extra (pypto 0.2.0 + CPU torch) is missing or is the wrong version."""


class UnsupportedPypto(SimUnavailable):
    """pypto is installed, but not the one release this layer was checked against."""


@dataclass(frozen=True, slots=True)
class SimAvailability:
    """What is installed, and whether SIM compiles can run. `message` is one line for the user."""

    torch_version: str | None
    pypto_version: str | None
    ok: bool
    message: str


def _installed_version(dist: str) -> str | None:
    """The distribution's version if the module is importable, else None (never imports it)."""
    if importlib.util.find_spec(dist) is None:
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check_sim() -> SimAvailability:
    """Report whether pypto 0.2.0 and torch are importable, with the exact install command."""
    torch_v = _installed_version("torch")
    pypto_v = _installed_version("pypto")
    install_sim = install_sim_command()
    torch_cmd = f"{install_torch_command()} (the CPU build)"
    if pypto_v is not None and pypto_v != SUPPORTED_PYPTO:
        msg = (
            f"pypto {pypto_v} is installed but only pypto {SUPPORTED_PYPTO} is supported: "
            f"{install_sim} (it pins pypto=={SUPPORTED_PYPTO})"
        )
        return SimAvailability(torch_v, pypto_v, False, msg)
    if pypto_v is None and torch_v is None:
        msg = f"the simulator needs pypto {SUPPORTED_PYPTO} and torch: {install_sim} and {torch_cmd}"
        return SimAvailability(torch_v, pypto_v, False, msg)
    if pypto_v is None:
        msg = f"the simulator needs pypto {SUPPORTED_PYPTO}: {install_sim}"
        return SimAvailability(torch_v, pypto_v, False, msg)
    if torch_v is None:
        msg = f"the simulator needs torch (pypto {pypto_v} is installed): {torch_cmd}"
        return SimAvailability(torch_v, pypto_v, False, msg)
    msg = f"simulator ready: pypto {pypto_v}, torch {torch_v}"
    return SimAvailability(torch_v, pypto_v, True, msg)


def require_sim() -> SimAvailability:
    """`check_sim()`, raising `SimUnavailable` (or `UnsupportedPypto`) when it is not usable."""
    avail = check_sim()
    if not avail.ok:
        if avail.pypto_version not in (None, SUPPORTED_PYPTO):
            raise UnsupportedPypto(avail.message)
        raise SimUnavailable(avail.message)
    return avail


def verify_tools_message() -> str | None:
    """None if cmake and a C++ compiler are on PATH (needed once, to build the calculator), else
    a one-line message saying what is missing."""
    missing = [name for name in ("cmake",) if shutil.which(name) is None]
    if not any(shutil.which(cc) for cc in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (g++)")
    if not missing:
        return None
    return (
        "verification builds pypto's calculator library once and needs "
        + " and ".join(missing)
        + " (e.g. apt-get install cmake g++)"
    )
