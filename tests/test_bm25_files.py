"""The BM25 index's files without bm25s (``retrieval.bm25_files``): the format bm25s writes and
reads, both ways, and the same stop words, so dropping the import changed no score."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.retrieval.bm25 import BM25Index, BM25Params
from assistant.retrieval.bm25_files import STOPWORDS_EN, ScoreMatrix

bm25s = pytest.importorskip("bm25s")  # the reference (a test dependency from here on)

TEXTS = [
    "Click models for web search separate attractiveness from satisfaction.",
    "Unbiased learning to rank from biased implicit click feedback.",
    "Dense passage retrieval for open-domain question answering, and the Ærø café.",
    "A probabilistic method for inferring preferences from clicks.",
]


def test_the_stop_words_are_bm25s_english_list():
    from bm25s.stopwords import STOPWORDS_EN as REFERENCE

    assert tuple(STOPWORDS_EN) == tuple(REFERENCE)


def _same(a, b) -> None:
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(np.asarray(a.scores[key]), np.asarray(b.scores[key])), key
    assert int(a.scores["num_docs"]) == int(b.scores["num_docs"])
    assert dict(a.vocab_dict) == dict(b.vocab_dict)


def test_our_files_load_in_bm25s_and_bm25s_files_load_here(tmp_path):
    ours = BM25Index.build([3, 5, 8, 13], TEXTS, BM25Params())
    ours.save(tmp_path / "ours")
    theirs = bm25s.BM25.load(str(tmp_path / "ours"), show_progress=False, verbosity=0)
    _same(ours.model, theirs)
    assert (theirs.k1, theirs.b, theirs.method) == (2.0, 0.75, "lucene")

    theirs.save(str(tmp_path / "theirs"), show_progress=False)
    back = ScoreMatrix.load(tmp_path / "theirs")
    _same(back, theirs)
    assert (back.k1, back.b) == (theirs.k1, theirs.b)
    mapped = ScoreMatrix.load(tmp_path / "ours", mmap=True)
    _same(mapped, ours.model)
    assert isinstance(mapped.scores["data"], np.memmap)


def test_a_loaded_index_scores_as_the_built_one(tmp_path):
    built = BM25Index.build([3, 5, 8, 13], TEXTS, BM25Params())
    built.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    for query in ("click feedback", "question answering cafe", "ranking from clicks"):
        got, want = loaded.search(query, k=4), built.search(query, k=4)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert len(got[0]) > 0


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("params.index.json", '{"k1": 2.0, "b": 0.75, "method": "bm25+", "num_docs": 4}'),
        ("params.index.json", '{"k1": 2.0, "b": 0.75, "num_docs": "four"}'),
        ("vocab.index.json", "[1, 2]"),
    ],
)
def test_a_foreign_or_damaged_params_file_is_refused(tmp_path, name, text):
    BM25Index.build([3, 5, 8, 13], TEXTS, BM25Params()).save(tmp_path)
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError):
        ScoreMatrix.load(tmp_path)


def test_an_update_without_new_words_keeps_the_vocabulary_file_byte_for_byte(tmp_path):
    BM25Index.build([3, 5, 8, 13], TEXTS, BM25Params()).save(tmp_path / "a")
    stored = BM25Index.load(tmp_path / "a", counts=True)
    vocab_bytes = (tmp_path / "a" / "vocab.index.json").read_bytes()

    same_words = stored.updated([], [5], ["Unbiased learning to rank from click feedback."])
    same_words.save(tmp_path / "b")
    assert (tmp_path / "b" / "vocab.index.json").read_bytes() == vocab_bytes
    assert BM25Index.load(tmp_path / "b").model.vocab_dict == stored.model.vocab_dict

    new_word = stored.updated([], [5], ["Unbiased learning to rank from zeppelin feedback."])
    new_word.save(tmp_path / "c")
    loaded = BM25Index.load(tmp_path / "c").model.vocab_dict
    assert "zeppelin" in loaded and loaded == new_word.model.vocab_dict
    assert "zeppelin" not in stored.model.vocab_dict  # a word none of TEXTS has


def test_a_vocabulary_file_replaced_since_it_was_read_is_not_copied(tmp_path):
    BM25Index.build([3, 5, 8, 13], TEXTS, BM25Params()).save(tmp_path / "a")
    stored = BM25Index.load(tmp_path / "a", counts=True)
    update = stored.updated([], [5], ["Unbiased learning to rank from click feedback."])
    (tmp_path / "a" / "vocab.index.json").write_text('{"": 0, "other": 1}')  # another writer
    update.save(tmp_path / "b")
    assert BM25Index.load(tmp_path / "b").model.vocab_dict == stored.model.vocab_dict
