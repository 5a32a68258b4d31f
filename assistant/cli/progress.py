"""The one progress renderer of the command line: :class:`~assistant.progress.ProgressEvent`\\ s
on stderr, drawn by ``rich``.

On a terminal each stage (``import``, ``embed``, ``training``...) gets a live bar with its
count, elapsed time and the event's message; an event without a ``total`` (a step such as
"Loading the encoder…") is printed as a line above the bars. Without a terminal (a log file, a
pipe, CI) nothing is redrawn: one plain line per stage at most every ``every_s`` seconds, at a
stage's end and for every new message-only event. ``quiet`` prints nothing. Stdout stays free
for the command's result (``--json``).
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

from assistant.progress import ProgressEvent


class ProgressRenderer:
    """A :class:`~assistant.progress.Progress` for CLI commands; use it as a context manager
    (``with ProgressRenderer(quiet) as progress: job(progress)``) so the bars end cleanly."""

    def __init__(self, quiet: bool = False, every_s: float = 5.0) -> None:
        self.quiet = quiet
        self.every_s = every_s
        self.live = not quiet and sys.stderr.isatty()
        self._bars = None  # rich.progress.Progress, made on the first event
        self._tasks: dict[str, int] = {}
        self._last_line: dict[str, float] = {}
        self._last_message = ""

    def __enter__(self) -> ProgressRenderer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __call__(self, event: ProgressEvent) -> None:
        if self.quiet:
            return
        if self.live:
            self._draw(event)
        else:
            self._log(event)

    def close(self) -> None:
        """Stop redrawing (the bars stay on screen as they last were)."""
        if self._bars is not None:
            self._bars.stop()
            self._bars = None
            self._tasks.clear()

    # -- a terminal: rich bars -------------------------------------------------------------------
    def _draw(self, event: ProgressEvent) -> None:
        bars = self._bars or self._start()
        if event.total is None:
            if event.message and event.message != self._last_message:
                bars.console.print(event.message, markup=False, highlight=False)
            self._last_message = event.message
            return
        stage = event.stage or "progress"
        description = f"{stage}: {event.message}" if event.message else stage
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = bars.add_task(description, total=event.total)
        bars.update(task, completed=event.done, total=event.total, description=description)

    def _start(self):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bars = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._bars.start()
        return self._bars

    # -- no terminal: plain lines, now and then ----------------------------------------------------
    def _log(self, event: ProgressEvent) -> None:
        if event.total is None:
            if event.message and event.message != self._last_message:
                self._write(event.message)
            self._last_message = event.message
            return
        stage = event.stage or "progress"
        now = time.monotonic()
        final = event.done >= event.total
        if not final and now - self._last_line.get(stage, -self.every_s) < self.every_s:
            return
        self._last_line[stage] = now
        fraction = f" {event.fraction:.0%}" if event.fraction is not None else ""
        self._write(f"[{stage} {event.done}/{event.total}{fraction}] {event.message}".rstrip())

    @staticmethod
    def _write(line: str) -> None:
        print(line, file=sys.stderr, flush=True)


def command_progress(quiet: bool = False) -> ProgressRenderer:
    """The running command's one renderer (made on first use, closed when the command ends)."""
    import click

    ctx = click.get_current_context()
    renderer = ctx.meta.get(__name__)
    if renderer is None:
        renderer = ctx.meta[__name__] = ctx.with_resource(ProgressRenderer(quiet))
    return renderer
