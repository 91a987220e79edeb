"""Messages that thread workers post back to their screen (post_message is thread-safe).

Workers never touch widgets or reactives: they report progress and results with these, and the
screen updates itself on its own thread.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


class WorkProgress(Message):
    """`done` of `total` units of a long job (total 0: unknown), with a line of text."""

    def __init__(self, job: str, done: int, total: int, text: str = "") -> None:
        super().__init__()
        self.job, self.done, self.total, self.text = job, done, total, text


class WorkFinished(Message):
    """A long job ended: `result` on success, `error` (one line for the user) otherwise."""

    def __init__(self, job: str, result: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.job, self.result, self.error = job, result, error
