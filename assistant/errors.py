"""The one error root and the one cancellation base of the product.

Every error a user can cause (a bad file, a locked library, a missing model) is an
:class:`AssistantError`; its ``str()`` is the one line the CLI prints after ``Error:`` and the
GUI shows in a dialog: ``<file>[:<line>]: <reason>`` when a file is involved. Layers subclass it
for their own conditions; faces catch only this root. A job stopped by the user raises the one
:class:`Cancelled` (under the root, so nothing escapes the faces; they catch it first, because
nothing went wrong).
"""

from __future__ import annotations

from os import PathLike


class AssistantError(Exception):
    """Root of every user-facing error. ``str(exc)`` is the one-line message."""

    def __init__(
        self, reason: str, *, file: str | PathLike[str] | None = None, line: int | None = None
    ) -> None:
        self.reason = reason
        self.file = str(file) if file is not None else None
        self.line = line if line else None
        super().__init__(self.user_message)

    @property
    def user_message(self) -> str:
        """``<file>[:<line>]: <reason>``, or the reason alone when no file is involved."""
        if not self.file:
            return self.reason
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.reason}"

    def __reduce__(self):
        # subclasses may take other constructor arguments: rebuild from the state, not ``args``
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[AssistantError], args: tuple, state: dict) -> AssistantError:
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class FileRefused(AssistantError):
    """A path the program will not read or replace (not a regular file, too large, read-only,
    the open library); the message names the file and says why."""


class Cancelled(AssistantError):
    """A long job (import, index, training, recommendation) stopped because the user asked.

    The one cancellation of the product: jobs poll a ``cancelled()`` check through
    :func:`assistant.progress.check_cancelled`, which raises this; the message says what was
    kept (a rolled-back import, resumable index chunks, a training checkpoint)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
