"""The one progress contract: long jobs report :class:`ProgressEvent` to a :class:`Progress`.

``done``/``total`` count units of the current ``stage`` (``total`` is ``None`` when unknown);
``message`` is a short human-readable line. ``CancelCheck`` is polled between units through
:func:`check_cancelled`, the one helper that raises :class:`assistant.errors.Cancelled`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from assistant.errors import Cancelled


@dataclass(frozen=True)
class ProgressEvent:
    done: int
    total: int | None = None
    stage: str = ""
    message: str = ""

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / self.total))


class Progress(Protocol):
    def __call__(self, event: ProgressEvent) -> None: ...


CancelCheck = Callable[[], bool]


def no_progress(event: ProgressEvent) -> None:
    """A :class:`Progress` that ignores every event."""


def never_cancelled() -> bool:
    return False


def check_cancelled(cancelled: CancelCheck | None, message: str = "") -> None:
    """Raise :class:`Cancelled` (``message``: what was kept) when ``cancelled()`` says so."""
    if cancelled is not None and cancelled():
        raise Cancelled(message)
