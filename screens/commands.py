"""The command palette's provider: every app action by name (open, pack, save, export, steps...).

Commands are listed fresh on every search so they follow the session (only steps the user may
visit are offered as jumps, and the current screen's long action is included when it has one).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from pypto_tui.design import STEPS
from pypto_tui.screens.widgets import STEP_LABELS

if TYPE_CHECKING:
    from pypto_tui.screens.app import PyptoApp

Command = tuple[str, str, Callable[[], object]]
TRACE_COMMAND = "Read the task by tracing it"
"""The palette entry that switches to the traced front end (the Contract step names it in a hint)."""


class PyptoCommands(Provider):
    """Open task, switch pack, save, export, jump to a step, rule browser, theme, run checks."""

    def _commands(self) -> list[Command]:
        app: PyptoApp = self.app  # type: ignore[assignment]
        cmds: list[Command] = [
            ("Open task file…", "Open a KernelBench task file or a bundled example (ctrl+o)",
             app.action_open_task),
            ("Switch knowledge pack…", "Load another pack folder; every step is recomputed",
             app.action_switch_pack),
            ("Save session", "Write the design as JSON (ctrl+s)", app.action_save),
            ("Save session as…", "Write the design as JSON to a new path", app.action_save_as),
            ("Export kernel…", "Write the generated kernel module to a file", app.action_export),
            ("Copy kernel to clipboard", "Copy the generated module", app.action_copy_kernel),
            ("Rule browser", "Browse the loaded pack's rules (f1)", app.action_rules),
            ("Toggle light/dark theme", "Switch between the light and dark themes (ctrl+t)",
             app.action_toggle_theme),
            ("Reset contract edits", "Forget every edit made to the extracted contract",
             app.action_reset_edits),
        ]
        if app.session.design.task:
            if app.session.design.front_end == "static":
                cmds.append((TRACE_COMMAND, "Run the model through torch.export (its code runs, after you agree) "
                             "and read the traced graph: nn.Sequential, submodules, loops, helpers, if",
                             app.action_trace))
            else:
                cmds.append(("Read the task statically", "Read forward with libcst again (nothing runs)",
                             app.action_read_statically))
        run = app.current_run_label()
        if run:
            cmds.append((run, "The current step's background check (ctrl+r)", app.action_run_check))
        for i, step in enumerate(STEPS, 1):
            if app.session.can_visit(step):
                label = STEP_LABELS[step]
                cmds.append((f"Go to step {i}: {label}", f"Jump to the {label} step (key {i} outside a text field)",
                             partial(app.action_goto, step)))
        return cmds

    async def discover(self) -> Hits:
        for title, help_text, cb in self._commands():
            yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, cb in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, help=help_text)
