"""Cancel acts within one embedding batch, not one 512-paper chunk (issue 34 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from retrieval_helpers import load_test_encoder

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
    from assistant.retrieval.index import IndexingCancelled, build_index

    with Library(tmp_path / "lib.sqlite") as lib:
        import_paths(lib, [FIX / "good.bib", FIX / "acm_duplicates.bib"], workers=1)
        assert lib.count() >= 6
        encoder = BatchCounter(load_test_encoder(tmp_path_factory))
        with pytest.raises(IndexingCancelled):
            build_index(lib, encoder, batch_size=2, cancelled=lambda: encoder.batches >= 1)
        assert encoder.batches == 1  # the chunk (all papers) was not embedded to its end
