"""The app's controller over one Design: decisions in, stale steps and autosave out.

The screens never mutate the `Design` directly: they call `Session.change(step, ...)`, which
applies the edit, drops decisions an earlier change made meaningless (a tile of the wrong rank),
marks every later step the user had finished as stale (so the indicator can say "recomputed,
review it"), and writes the autosave. Everything is computed by `Pipeline`; nothing here knows a
rule. Plain Python (no Textual), so it is tested without an app.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto_tui.design import (
    KERNEL_DECISIONS,
    STEPS,
    Design,
    Pipeline,
    check_front_end,
    module_stages,
    split_by_graph,
)
from pypto_tui.errors import InputError
from pypto_tui.fileio import read_text, require_file, write_atomic
from pypto_tui.kb import KnowledgeBase, bundled_pack_dir, get_kb
from pypto_tui.shapes import MAX_DIM, check_shape

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


# ---------------------------------------------------------------------------------- session files
MAX_SESSION_BYTES = 1 << 20
_TEXT_FIELDS = ("task", "kb", "flavour", "strategy", "loop_tail", "step")


def read_design(path: Path) -> Design:
    """A saved design, or InputError (one line) for anything that is not one: not a regular file,
    too large, not UTF-8, not JSON, nested too deep, a number too large, a field of the wrong type.
    A corrupt file must never take the app down (or refuse to start it until it is deleted)."""
    try:
        text = read_text(path, "session file", MAX_SESSION_BYTES)
        data = json.loads(text)
    except InputError:
        raise
    except json.JSONDecodeError as exc:
        raise InputError(f"session file {path} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # 5000-digit ints, 100,000 '['
        what = "nests too deeply" if isinstance(exc, RecursionError) else f"cannot be read ({type(exc).__name__})"
        raise InputError(f"session file {path} {what}: is it a pypto-tui session?") from None
    design = Design.from_dict(data)
    problem = _field_problem(design)
    if problem:
        raise InputError(f"session file {path}: {problem}: is it a pypto-tui session?")
    return design


def _field_problem(d: Design) -> str | None:
    """Why a loaded design's fields cannot be used (JSON gives any type anywhere), or None."""
    for name in _TEXT_FIELDS:
        v = getattr(d, name)
        if v is not None and not isinstance(v, str):
            return f"'{name}' must be text, got {type(v).__name__}"
    if not isinstance(d.contract_edits, dict) or not all(isinstance(k, str) for k in d.contract_edits):
        return "'contract_edits' must be an object with text keys"
    if d.tile is not None:
        try:
            check_shape(d.tile if isinstance(d.tile, list) else [], "tile")
        except InputError as exc:
            return f"'tile' is not a tile ({exc})"
    if d.loop_count is not None and (isinstance(d.loop_count, bool) or not isinstance(d.loop_count, int)
                                     or not 0 <= d.loop_count <= MAX_DIM):
        return "'loop_count' must be a whole number"
    for index, decided in d.kernels.items():  # Design.from_dict allowed only KERNEL_DECISIONS keys
        problem = _field_problem(Design(**decided))
        if problem:
            return f"kernel {index}: {problem}"
    if d.cube is not None:
        if not isinstance(d.cube, dict):
            return "'cube' must be an object"
        for key, value in d.cube.items():
            try:
                check_shape(value if isinstance(value, list) else [], f"cube {key}")
            except InputError as exc:
                return f"'cube' is not a cube tile ({exc})"
    return None


# ---------------------------------------------------------------------------------- autosave
@dataclass(frozen=True)
class Slot:
    """One autosave and its lock. The first instance on a state folder uses `autosave.json` and
    `running.lock`; another one running at the same time gets `autosave-PID.json` and
    `running-PID.lock`, so two instances never write over each other's work."""

    folder: Path
    suffix: str = ""

    @property
    def path(self) -> Path:
        return self.folder / f"autosave{self.suffix}.json"

    @property
    def lock(self) -> Path:
        return self.folder / f"running{self.suffix}.lock"

    def owner(self) -> int | None:
        """The pid in the lock file (None: no lock, or not a pid)."""
        try:
            text = read_text(self.lock, "lock file", 64)
            return int(text.strip() or 0)
        except (InputError, ValueError):
            return None

    def remove(self) -> None:
        for p in (self.path, self.lock):
            with contextlib.suppress(OSError):
                p.unlink()


@dataclass
class Autosave:
    """Autosave slots in a state folder: one per running instance, each with a lock holding its pid.

    A clean exit removes the lock; a lock left behind by a process that is gone means that run
    crashed or was killed, and its autosave is offered back (the newest, if several). An autosave
    that cannot be read is set aside (renamed `*.corrupt-TIME.json`) with a notice, never fatal.
    """

    folder: Path
    pid: int = field(default_factory=os.getpid)
    slot: Slot = field(init=False)
    leftover_slot: Slot | None = field(default=None, init=False)
    notices: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        self.slot = Slot(self.folder)

    @property
    def path(self) -> Path:
        return self.slot.path

    @property
    def lock(self) -> Path:
        return self.slot.lock

    def slots(self) -> list[Slot]:
        try:
            locks = sorted(self.folder.glob("running*.lock"))
        except OSError:
            return []
        return [Slot(self.folder, lk.name[len("running"):-len(".lock")]) for lk in locks]

    def leftover(self) -> Design | None:
        """The design a crashed run left behind, if any (the newest of them)."""
        found: list[tuple[float, Slot, Design]] = []
        for slot in self.slots():
            pid = slot.owner()
            if pid is None or pid in (self.pid, os.getpid()) or _pid_alive(pid):
                continue
            try:
                mtime = slot.path.stat().st_mtime
            except OSError:
                with contextlib.suppress(OSError):
                    slot.lock.unlink()  # a crash with nothing to restore: the lock is stale
                continue
            try:
                found.append((mtime, slot, read_design(slot.path)))
            except InputError as exc:
                self._set_aside(slot, exc)
        if not found:
            return None
        found.sort(key=lambda x: x[0])
        _, self.leftover_slot, design = found[-1]
        return design

    def _set_aside(self, slot: Slot, why: InputError) -> None:
        aside = slot.path.with_name(f"{slot.path.stem}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}.json")
        try:
            os.replace(slot.path, aside)
            with contextlib.suppress(OSError):
                slot.lock.unlink()
            self.notices.append(f"the autosave could not be read ({why}); it was set aside as {aside.name}")
        except OSError as exc:
            self.notices.append(f"the autosave {slot.path} could not be read ({why}) nor set aside "
                                f"({exc.strerror}); it is ignored")

    def forget_leftover(self) -> None:
        """The user restored or discarded the leftover: its slot is no longer anybody's."""
        if self.leftover_slot is not None and self.leftover_slot != self.slot:
            self.leftover_slot.remove()
        self.leftover_slot = None

    def start(self) -> None:
        """Claim a slot: the shared one when it is free, else one of our own (never another
        running instance's, nor a crashed one's whose autosave is still to be offered)."""
        primary = Slot(self.folder)
        pid = primary.owner()
        stale = pid is None or (pid != self.pid and not _pid_alive(pid) and not primary.path.exists())
        if pid == self.pid or (primary.lock.exists() and stale) or not primary.lock.exists():
            if pid != self.pid:
                with contextlib.suppress(OSError):
                    primary.lock.unlink()
            if self._claim(primary):
                return
        own = Slot(self.folder, f"-{self.pid}")
        with contextlib.suppress(OSError):
            own.lock.unlink()
        self._claim(own)

    def _claim(self, slot: Slot) -> bool:
        """Create the slot's lock exclusively (two instances starting at once cannot both win)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(slot.lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return slot.owner() == self.pid and self._use(slot)
        except OSError:
            return self._use(slot)  # a read-only state folder must not break editing
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{self.pid}\n")
        return self._use(slot)

    def _use(self, slot: Slot) -> bool:
        self.slot = slot
        return True

    def write(self, design: Design) -> None:
        with contextlib.suppress(OSError, InputError):  # a read-only state folder must not break editing
            write_atomic(self.path, design.to_json(), force=True)

    def finish(self) -> None:
        """A clean exit: no lock left (nothing to offer), and our own slot's autosave goes too."""
        self.lock.unlink(missing_ok=True)
        if self.slot.suffix:
            self.path.unlink(missing_ok=True)


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

    # ------------------------------------------------------------------ a chain's kernels
    def kernels(self) -> tuple[Any, ...]:
        """The kernels of a chain the planner splits (design.module_stages' stages), or () for a
        task of one kernel (or one that cannot be read: the Contract step says why)."""
        try:
            if self.pipeline.contract().supported:  # one kernel, unless the graph splits what the layout refuses
                designed = split_by_graph(self.pipeline)
            else:
                designed = module_stages(self.pipeline)
        except Exception:
            return ()
        return designed.stages if designed is not None and not designed.refused else ()

    @property
    def step_pipeline(self) -> Pipeline:
        """The pipeline the Dimensions, Tiles and Loops steps show: the task's, or the chosen
        kernel's of a chain (its own contract, with its own decisions applied)."""
        stages = self.kernels()
        if not stages:
            return self.pipeline
        chosen: Pipeline = stages[min(self.design.kernel, len(stages) - 1)].pipeline
        return chosen

    def set_kernel(self, index: int) -> None:
        """Show another kernel of the chain in the Dimensions, Tiles and Loops steps."""
        if index == self.design.kernel:
            return
        self.design.kernel = index
        self._commit("kernel")

    # ------------------------------------------------------------------ edits
    def change(self, step: str, mutate: Callable[[Design], None]) -> bool:
        """Apply one decision; later finished steps go stale. Returns whether anything changed.
        On a chain, the Dimensions, Tiles and Loops steps' decisions are the shown kernel's own."""
        if step in ("dims", "tiles", "loops") and self.kernels():
            mutate = _for_the_kernel(mutate)
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
        require_file(p, "task file")
        design = Design(task=str(p), kb=self.kb_dir, flavour=self.design.flavour)
        self.replace_design(design)

    def set_front_end(self, front_end: str) -> None:
        """Read the task with the other front end (design.FRONT_ENDS): a new document, since the graph and
        so every decision may differ. Tracing runs the task's code: the caller has the user's consent."""
        d = self.design
        self.replace_design(Design(task=d.task, kb=self.kb_dir, flavour=d.flavour,
                                   front_end=check_front_end(front_end)))

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
        doc: dict[str, Any] = json.loads(self.design.to_json())
        return doc


def _for_the_kernel(mutate: Callable[[Design], None]) -> Callable[[Design], None]:
    """A step's edit of the design's decisions, applied to the shown kernel's decisions instead."""
    def apply(d: Design) -> None:
        key = str(d.kernel)
        proxy = Design(**copy.deepcopy(d.kernels.get(key, {})))
        mutate(proxy)
        decided = {k: getattr(proxy, k) for k in KERNEL_DECISIONS if getattr(proxy, k) is not None}
        kernels = {k: v for k, v in d.kernels.items() if k != key}
        if decided:
            kernels[key] = decided
        d.kernels = dict(sorted(kernels.items(), key=lambda kv: int(kv[0])))
    return apply
