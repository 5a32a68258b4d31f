"""JobRunner: background jobs, progress, errors, cancellation by a newer job, stale results dropped."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("pytestqt")

from assistant.gui.workers import JobRunner
from assistant.progress import ProgressEvent


def test_job_runs_off_the_ui_thread_with_progress(qtbot):
    runner = JobRunner()
    ui_thread = threading.get_ident()
    seen = {}

    def job(progress, cancelled):
        seen["thread"] = threading.get_ident()
        for i in range(3):
            progress(ProgressEvent(i + 1, 3, "step", f"step {i + 1}"))
        return 42

    results, progress = [], []
    runner.submit(
        "x",
        job,
        on_done=results.append,
        on_progress=lambda e: progress.append((e.done, e.total, e.message)),
    )
    qtbot.waitUntil(lambda: results == [42], timeout=10_000)
    assert seen["thread"] != ui_thread
    assert progress[-1] == (3, 3, "step 3")
    assert not runner.is_busy("x")
    runner.shutdown()


def test_newer_job_cancels_older_and_stale_result_is_dropped(qtbot):
    runner = JobRunner()
    started = threading.Event()
    events = []

    def slow(progress, cancelled):
        started.set()
        deadline = time.monotonic() + 10
        while not cancelled() and time.monotonic() < deadline:
            time.sleep(0.01)
        return "slow"  # returned after cancellation: must not be delivered

    runner.submit(
        "rec",
        slow,
        on_done=lambda r: events.append(("done", r)),
        on_cancel=lambda: events.append(("cancelled", "slow")),
    )
    assert started.wait(10)
    runner.submit("rec", lambda p, c: "fast", on_done=lambda r: events.append(("done", r)))
    qtbot.waitUntil(lambda: ("done", "fast") in events, timeout=10_000)
    qtbot.wait(50)
    assert ("done", "slow") not in events
    assert ("cancelled", "slow") in events
    runner.shutdown()


def test_errors_reach_the_callback_with_traceback(qtbot):
    runner = JobRunner()
    errors = []

    def bad(progress, cancelled):
        raise ValueError("corrupt input at line 3")

    runner.submit("x", bad, on_error=lambda msg, trace: errors.append((msg, trace)))
    qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
    assert errors[0][0] == "corrupt input at line 3" and "ValueError" in errors[0][1]
    runner.shutdown()


def test_recommend_runs_beside_a_long_engine_job(qtbot):
    """Each channel has its own thread: a recommendation finishes while an engine job (import,
    index, adapt) is still running; "close" shares the engine's thread, so it runs after it."""
    runner = JobRunner()
    release, order = threading.Event(), []

    def long_job(p, c):
        order.append(("engine", threading.get_ident()))
        release.wait(30)
        order.append(("engine-done", threading.get_ident()))

    runner.submit("engine", long_job)
    runner.submit("close", lambda p, c: order.append(("close", threading.get_ident())))
    qtbot.waitUntil(lambda: bool(order) and order[0][0] == "engine", timeout=10_000)
    runner.submit("recommend", lambda p, c: order.append(("recommend", threading.get_ident())))
    qtbot.waitUntil(lambda: any(name == "recommend" for name, _ in order), timeout=10_000)
    assert [name for name, _ in order] == ["engine", "recommend"]  # the engine job still runs
    release.set()
    qtbot.waitUntil(lambda: len(order) == 4, timeout=10_000)
    threads = dict(order)
    assert [name for name, _ in order][2:] == ["engine-done", "close"]
    assert threads["close"] == threads["engine"] != threads["recommend"]
    runner.shutdown()
