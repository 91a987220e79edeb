"""Placeholder app until the screens land: says what exists so far."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static


class PyptoTuiApp(App[None]):
    TITLE = "pypto-tui"
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("The design screens are being built. Meanwhile: pypto-tui tile / loop / kb --help.")
        yield Footer()


def run_app(task: Path | None = None, kb: Path | None = None, session: Path | None = None) -> int:
    PyptoTuiApp().run()
    return 0
