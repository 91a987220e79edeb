"""The app's controller over one Design: decisions in, stale steps and autosave out.

The screens never mutate the `Design` directly: they call `Session.change(step, ...)`, which
applies the edit, drops decisions an earlier change made meaningless (a tile of the wrong rank),
marks every later step the user had finished as stale (so the indicator can say "recomputed,
review it"), and writes the autosave. Everything is computed by `Pipeline`; nothing here knows a
rule. Plain Python (no Textual), so it is tested without an app.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_tui.design import STEPS, Design, Pipeline, write_atomic
from pypto_tui.errors import InputError
from pypto_tui.kb import KnowledgeBase, bundled_pack_dir, get_kb

STATE_ENV = "PYPTO_TUI_STATE_DIR"
STEP_TITLES = {"contract": "Contract", "dims": "Dimensions", "tiles": "Tiles", "loops": "Loops",
               "kernel": "Kernel"}


def state_dir() -> Path:
    """`$PYPTO_TUI_STATE_DIR`, else the platform's per-user state folder."""
    env = os.environ.get(STATE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("pypto-tui", appauthor=False))


def examples_dir(kb: KnowledgeBase | None = None) -> Path:
    """The example task files: the loaded pack's own `examples/`, else the bundled default's."""
    if kb is not None and (kb.path / "examples").is_dir():
        return kb.path / "examples"
    return bundled_pack_dir() / "examples"


def list_examples(kb: KnowledgeBase | None = None) -> list[Path]:
    folder = examples_dir(kb)
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Autosave:
    """`autosave.json` plus a lock file holding our pid.

    A clean exit removes the lock; a lock left behind by a process that is gone means the last
    run crashed or was killed, and its autosave is offered back.
    """

    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / "autosave.json"

    @property
    def lock(self) -> Path:
        return self.folder / "running.lock"

    def leftover(self) -> Design | None:
        """The design a crashed run left behind, if any (unreadable leftovers are ignored)."""
        try:
            pid = int(self.lock.read_text(encoding="utf-8").strip() or 0)
        except (OSError, ValueError):
            return None
        if pid == os.getpid() or _pid_alive(pid) or not self.path.is_file():
            return None
        try:
            return Design.load(self.path)
        except InputError:
            return None

    def start(self) -> None:
        with contextlib.suppress(OSError):
            write_atomic(self.lock, f"{os.getpid()}\n", force=True)

    def write(self, design: Design) -> None:
        with contextlib.suppress(OSError):  # a read-only state folder must not break editing
            write_atomic(self.path, design.to_json(), force=True)

    def finish(self) -> None:
        self.lock.unlink(missing_ok=True)


class Session:
    """One design being edited: the document, its pipeline, and which steps are done or stale."""

    def __init__(self, design: Design, kb_dir: str | None = None, session_path: Path | None = None,
                 autosave: Autosave | None = None) -> None:
        self.kb_dir = kb_dir if kb_dir is not None else design.kb
        self.kb: KnowledgeBase = get_kb(self.kb_dir)
        design.kb = self.kb_dir
        self.design = design
        self.pipeline = Pipeline(self.kb, design)
        self.session_path = session_path
        self.autosave = autosave
        idx = STEPS.index(design.step) if design.step in STEPS else 0
        self.finished: set[str] = set(STEPS[:idx])
        self.visited: set[str] = set(STEPS[:idx + 1])
        self.stale: set[str] = set()
        self.stale_reason: dict[str, str] = {}
        self.listeners: list[Callable[[str], None]] = []
        self._last_json = design.to_json()
        self.defer: Callable[[Callable[[], None]], object] | None = None
        """How to run the autosave write soon (the app: after the next paint); None: at once."""
        self._flush_pending = False

    # ------------------------------------------------------------------ state
    @property
    def step(self) -> str:
        return self.design.step

    def can_visit(self, step: str) -> bool:
        """Finished steps, the current one, and the one right after the finished prefix."""
        if step == self.design.step or step in self.finished or step in self.stale:
            return True
        idx = STEPS.index(step)
        return all(s in self.finished for s in STEPS[:idx])

    def go(self, step: str) -> None:
        if step not in STEPS:
            raise InputError(f"no step '{step}': steps are {', '.join(STEPS)}")
        self.design.step = step
        self.visited.add(step)
        self._commit("step")

    def finish(self, step: str) -> None:
        """The user accepted `step` (pressed Next): it is done and no longer stale."""
        self.finished.add(step)
        self.stale.discard(step)
        self.stale_reason.pop(step, None)
        self._notify(step)

    # ------------------------------------------------------------------ edits
    def change(self, step: str, mutate: Callable[[Design], None]) -> bool:
        """Apply one decision; later finished steps go stale. Returns whether anything changed."""
        before = self.design.to_json()
        old_shape = self._shape() if step in ("contract", "dims") else None
        mutate(self.design)
        if step in ("contract", "dims"):
            self._drop_meaningless(old_shape)
        if self.design.to_json() == before:
            return False
        self.pipeline.design = self.design
        later = STEPS[STEPS.index(step) + 1:]
        for s in later:
            if s in self.finished or s in self.stale or s in self.visited:
                self.finished.discard(s)
                self.stale.add(s)
                self.stale_reason[s] = f"recomputed after a change to {STEP_TITLES[step].lower()}"
        self._commit(step)
        return True

    def _shape(self) -> tuple[int, ...] | None:
        try:
            return self.pipeline.geometry().shape
        except Exception:
            return None

    def _drop_meaningless(self, old_shape: tuple[int, ...] | None) -> None:
        """A new kernel shape makes the tile/loop/cube decisions meaningless: back to the recommended."""
        shape = self._shape()
        if shape is None:
            return
        if old_shape is not None and shape != old_shape:
            self.design.tile = None
            self.design.loop_count = None
            self.design.loop_tail = None
            self.design.cube = None
        elif self.design.tile is not None and len(self.design.tile) != len(shape):
            self.design.tile = None

    def set_task(self, task: str | Path) -> None:
        p = Path(task)
        if not p.is_file():
            raise InputError(f"task file {p} does not exist")
        design = Design(task=str(p), kb=self.kb_dir, flavour=self.design.flavour)
        self.replace_design(design)

    def replace_design(self, design: Design) -> None:
        """A whole new document (open task, restore, switch pack): nothing is finished yet."""
        self.kb = get_kb(design.kb)
        self.kb_dir = design.kb
        self.design = design
        self.pipeline = Pipeline(self.kb, design)
        idx = STEPS.index(design.step) if design.step in STEPS else 0
        self.finished = set(STEPS[:idx])
        self.visited = set(STEPS[:idx + 1])
        self.stale = set()
        self.stale_reason = {}
        self._commit("contract")

    def switch_pack(self, kb_dir: str | None) -> None:
        """Load another pack (a bad one raises PackError and changes nothing); recompute all."""
        kb = get_kb(kb_dir)
        self.kb, self.kb_dir = kb, kb_dir
        self.design.kb = kb_dir
        self.pipeline = Pipeline(kb, self.design)
        for s in STEPS[1:]:
            if s in self.finished or s in self.visited:
                self.finished.discard(s)
                self.stale.add(s)
                self.stale_reason[s] = "recomputed with another knowledge pack"
        self._commit("contract")

    # ------------------------------------------------------------------ persistence
    def _commit(self, step: str) -> None:
        if self.autosave is not None:
            if self.defer is None:
                self.flush()
            elif not self._flush_pending:
                self._flush_pending = True
                self.defer(self.flush)
        self._notify(step)

    def flush(self) -> None:
        """Write the autosave if the design changed since the last write."""
        self._flush_pending = False
        text = self.design.to_json()
        if text != self._last_json and self.autosave is not None:
            self._last_json = text
            self.autosave.write(self.design)

    def _notify(self, step: str) -> None:
        for fn in list(self.listeners):
            fn(step)

    def save(self, path: Path | None = None) -> Path:
        target = path or self.session_path
        if target is None:
            raise InputError("no session file yet: give a path")
        out = self.design.save(target)
        self.session_path = Path(target)
        return out

    def default_session_name(self) -> str:
        stem = Path(self.design.task).stem if self.design.task else "design"
        return f"{stem}.pypto-session.json"

    def snapshot(self) -> dict[str, Any]:
        return json.loads(self.design.to_json())


def load_session(path: Path) -> Design:
    return Design.load(path)
