"""Anchors: operators a pattern writes a kernel around (filled below)."""

from __future__ import annotations

from pypto_tui.ops.base import OpKind

KINDS: tuple[OpKind, ...] = ()
