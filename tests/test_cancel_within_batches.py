"""Cancel acts within one embedding batch, not one 512-paper chunk (issue 34 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from retrieval_helpers import load_test_encoder

from assistant.errors import Cancelled
from assistant.library.importers import import_paths
from assistant.library.store import Library

FIX = Path(__file__).parent / "fixtures" / "library"


class BatchCounter:
    """A real encoder that counts the batches it has embedded."""

    def __init__(self, inner) -> None:
        self.inner, self.batches = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, texts, batch_size=32, progress=None):
        def counted(event):
            self.batches += 1
            if progress is not None:
                progress(event)

        return self.inner.encode(texts, batch_size=batch_size, progress=counted)


def test_indexing_stops_after_the_batch_in_which_cancel_was_pressed(tmp_path, tmp_path_factory):
    from assistant.retrieval.index import build_index

    with Library(tmp_path / "lib.sqlite") as lib:
        import_paths(lib, [FIX / "good.bib", FIX / "acm_duplicates.bib"], workers=1)
        assert lib.count() >= 6
        encoder = BatchCounter(load_test_encoder(tmp_path_factory))
        with pytest.raises(Cancelled, match="resumable"):
            build_index(lib, encoder, batch_size=2, cancelled=lambda: encoder.batches >= 1)
        assert encoder.batches == 1  # the chunk (all papers) was not embedded to its end


def test_import_cancel_is_seen_while_a_large_file_is_still_parsing(tmp_path, monkeypatch):
    """Cancel during the seconds a 3 MB file parses: the import stops, rolled back."""
    import threading

    import assistant.library.importers as importers

    release, parsing = threading.Event(), threading.Event()
    real = importers.parse_file

    def slow_parse(job):  # a parse that lasts until the test lets it go
        parsing.set()
        release.wait(30)
        return real(job)

    monkeypatch.setattr(importers, "parse_file", slow_parse)
    cancel = threading.Event()
    result = {}
    with Library(tmp_path / "lib.sqlite") as lib:

        def run():
            try:
                result["report"] = import_paths(
                    lib, [FIX / "good.bib"], cancelled=cancel.is_set, workers=1
                )
            except Cancelled as exc:
                result["cancelled"] = str(exc)

        thread = threading.Thread(target=run)
        thread.start()
        assert parsing.wait(10)
        cancel.set()
        thread.join(10)
        stopped = not thread.is_alive()
        release.set()
        thread.join(30)
        assert stopped, "the import waited for the parse to end before seeing Cancel"
        assert "report" not in result and "nothing was imported" in result["cancelled"]
        assert lib.count() == 0


def test_adapt_cancel_returns_while_a_training_step_is_still_running():
    """Adapt: a CPU training step lasts seconds; Cancel answers at once, the step ends beside."""
    import threading

    from assistant.service.engine import run_beside

    step_running, release, flag = threading.Event(), threading.Event(), threading.Event()

    def training():  # one long step, then it sees the flag, as the training loop does
        step_running.set()
        release.wait(30)
        return "stopped" if flag.is_set() else "done"

    answered = {}

    def call():
        try:
            run_beside(training, flag.is_set, "adaptation cancelled")
        except Cancelled as exc:
            answered["cancelled"] = str(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert step_running.wait(10)
    flag.set()
    caller.join(10)
    returned = not caller.is_alive()
    release.set()
    caller.join(30)
    assert returned and answered == {"cancelled": "adaptation cancelled"}
    assert run_beside(lambda: 42, lambda: False, "x") == 42
    with pytest.raises(ValueError):
        run_beside(lambda: int("x"), lambda: False, "x")
