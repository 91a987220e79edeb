"""What the operator families' tests share: the folder of our own task fixtures and a design
pipeline over one of them (with any Design fields a test wants to pin)."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.design import Design, Pipeline

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(EXTRA / name), **design))
