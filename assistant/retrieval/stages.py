"""Wall and CPU time of each stage of one recommendation (the latency budget of issue 32).

CPU time is the process's (``time.process_time``: every thread, so the ONNX Runtime pool's work
counts towards the stage that started it); with other work running in the same process (a GUI
job) it over-counts, the wall time does not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class StageClock:
    """``with clock.stage("bm25"): ...`` adds that block's wall and CPU milliseconds."""

    def __init__(self) -> None:
        self.wall_ms: dict[str, float] = {}
        self.cpu_ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)

    def add(self, name: str, wall_ms: float, cpu_ms: float) -> None:
        self.wall_ms[name] = self.wall_ms.get(name, 0.0) + wall_ms
        self.cpu_ms[name] = self.cpu_ms.get(name, 0.0) + cpu_ms

    def move(self, source: str, target: str, wall_ms: float, cpu_ms: float) -> None:
        """Book part of ``source``'s time (measured inside it) under ``target`` instead."""
        self.add(source, -wall_ms, -cpu_ms)
        self.add(target, wall_ms, cpu_ms)
