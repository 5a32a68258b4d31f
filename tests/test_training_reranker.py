"""Reranker training on a tiny real library (a few ACM-DL records): data, resume, export, scoring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant.library.importers import import_paths
from assistant.library.models import Citation
from assistant.library.store import Library
from assistant.training import data
from assistant.training.common import training_set_fingerprint
from assistant.training.reranker import DATA_KEYS, RerankerOptions, prepare_examples, train_reranker


@pytest.fixture(scope="module")
def sample_db(acm_dl_sample_files, tmp_path_factory):
    """The first ACM-DL sample file (ICTIR 2019) imported with the library's importer."""
    path = tmp_path_factory.mktemp("lib") / "library.sqlite"
    lib = Library(path)
    import_paths(lib, acm_dl_sample_files[:1], workers=1)
    assert lib.count() > 20
    lib.close()
    return path


def _opts(tmp_path, **kw) -> RerankerOptions:
    base = dict(
        out_dir=str(tmp_path / "out"),
        work_dir=str(tmp_path / "work"),
        n_queries=24,
        n_hard=3,
        n_random=1,
        batch_queries=2,
        max_length=96,
        negatives="bm25",
        checkpoint_every=1,
        blacklist=str(tmp_path / "blacklist.txt"),
    )
    base.update(kw)
    return RerankerOptions(**base)


def test_training_data_never_contains_blacklisted_papers(sample_db, tmp_path):
    lib = Library(sample_db)
    papers = [p for p in lib.iter_papers() if p.doi and len(p.abstract or "") >= 80]
    banned = papers[:5]
    (tmp_path / "blacklist.txt").write_text(
        "\n".join(f"https://doi.org/{p.doi.upper()}" for p in banned)
    )
    # a citation context written by a blacklisted (citing) paper must not become a query either
    lib.add_citation(
        Citation(
            citing_id=banned[0].id,
            cited_id=papers[10].id,
            context="Earlier work studied this problem in depth [3].",
        )
    )
    lib.add_citation(
        Citation(
            citing_id=papers[11].id,
            cited_id=papers[12].id,
            context="Axiomatic analysis of retrieval functions was proposed in [7].",
        )
    )
    examples, docs, stats, _ = prepare_examples(
        lib, _opts(tmp_path, n_queries=80), tmp_path / "work"
    )
    banned_ids = {p.id for p in banned}
    used = {e["pos"] for e in examples} | {n for e in examples for n in e["negs"]}
    assert used and not used & banned_ids
    assert not banned_ids & set(docs)
    banned_titles = {p.title for p in banned}
    assert not any(e["q"] in banned_titles for e in examples)
    queries = [e for e in examples if e["kind"] == "citation"]
    assert len(queries) == 1 and queries[0]["pos"] == papers[12].id
    assert queries[0]["q"].startswith("Axiomatic analysis") and "[7]" not in queries[0]["q"]
    assert stats["excluded_blacklisted_or_eval"] == 5
    for e in examples:  # the positive is never among the negatives, and ICT removes the sentence
        assert e["pos"] not in e["negs"]
        if e["kind"] == "ict":
            assert all(s not in docs[e["pos"]].text(e["drop"]) for s in e["drop"])
    lib.close()


def test_load_blacklist_normalises_dois(tmp_path):
    f = tmp_path / "b.txt"
    f.write_text("10.1145/ABC.1\nhttps://doi.org/10.1145/xyz\n\n")
    assert data.load_blacklist(f) == {"10.1145/abc.1", "10.1145/xyz"}


def test_interrupted_training_resumes_and_exports_a_working_model(sample_db, tmp_path):
    (tmp_path / "blacklist.txt").write_text("")
    lib = Library(sample_db)
    calls = {"n": 0}

    def cancel_after_one_step() -> bool:
        calls["n"] += 1
        return calls["n"] > 1  # checked once before and once after each step

    first = train_reranker(lib, _opts(tmp_path, max_steps=3), cancelled=cancel_after_one_step)
    assert first.stopped_reason == "cancelled" and first.steps_done == 1 and first.model_dir is None
    assert (tmp_path / "work" / "checkpoint" / "state.pt").is_file()

    second = train_reranker(lib, _opts(tmp_path, max_steps=3))
    assert second.resumed_from_step == 1 and second.steps_done == 3
    assert second.stopped_reason == "max_steps"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "cross-encoder" and manifest["max_length"] == 96
    assert (tmp_path / "out" / "model.int8.onnx").is_file()

    from assistant.inference.cross_encoder import load_cross_encoder

    model = load_cross_encoder(tmp_path / "out", device="cpu")
    paper = next(p for p in lib.iter_papers() if len(p.abstract or "") > 200)
    others = [p.encoder_text() for p in lib.iter_papers() if p.id != paper.id][:5]
    scores = model.score(paper.title, [paper.encoder_text(), *others])
    assert scores.shape == (6,) and np.isfinite(scores).all()
    lib.close()


def test_a_changed_library_starts_afresh_instead_of_resuming(sample_db, tmp_path):
    """Once the library changed, training mines a new set and does not resume a checkpoint
    trained on the old one (the "Adapt to my library" rerun after an import)."""
    import shutil

    db = tmp_path / "library.sqlite"
    shutil.copy(sample_db, db)
    (tmp_path / "blacklist.txt").write_text("")
    lib = Library(db)
    calls = {"n": 0}

    def cancel_after_one_step() -> bool:
        calls["n"] += 1
        return calls["n"] > 1

    opts = _opts(tmp_path, max_steps=3, export=False)
    first = train_reranker(lib, opts, cancelled=cancel_after_one_step)
    assert first.steps_done == 1
    before = json.loads((tmp_path / "work" / "data.json").read_text())["fingerprint"]

    paper = next(p for p in lib.iter_papers() if len(p.abstract or "") > 200)
    paper.abstract += " We also release a test collection for conversational search."
    lib.update_paper(paper)
    second = train_reranker(lib, opts)
    after = json.loads((tmp_path / "work" / "data.json").read_text())["fingerprint"]
    assert after["library"] != before["library"] and {**after, "library": 0} == {
        **before,
        "library": 0,
    }
    assert not second.resumed_from_step and second.steps_done == 3
    lib.close()


def test_corpus_signature_follows_every_input_of_the_training_set():
    def corpus(
        keywords=("retrieval",),
        abstract="An abstract.",
        context="As shown in [3].",
        title="A title",
    ):
        docs = {
            1: data.DocRecord(1, title, abstract, list(keywords)),
            2: data.DocRecord(2, "B", "Other.", []),
        }
        return data.Corpus(docs, [Citation(citing_id=2, cited_id=1, context=context)])

    base = corpus().signature()
    assert base == corpus().signature()
    assert (
        len(
            {
                base,
                corpus(keywords=("ranking",)).signature(),
                corpus(abstract="Changed.").signature(),
                corpus(context="See [4].").signature(),
                corpus(title="Another title").signature(),
            }
        )
        == 5
    )


def test_query_mix_sets_the_share_of_each_pseudo_query_kind(sample_db, tmp_path):
    import random
    from collections import Counter

    from click.testing import CliRunner

    from assistant.cli import main

    lib = Library(sample_db)
    corpus = data.corpus_from_library(lib, set())
    lib.close()
    corpus = data.Corpus(corpus.docs, [])  # pseudo-queries only (other tests add citation edges)
    with_keywords = sum(len(d.keywords) >= 2 for d in corpus.docs.values()) / len(corpus.docs)
    titles_only = Counter(
        q.kind for q in data.make_queries(corpus, 200, random.Random(1), (0.0, 1.0, 0.0))
    )
    assert titles_only == {"title": 200}
    keywords = Counter(
        q.kind for q in data.make_queries(corpus, 200, random.Random(1), (0.0, 0.0, 1.0))
    )
    assert keywords["keywords"] / 200 == pytest.approx(with_keywords, abs=0.1) and set(
        keywords
    ) <= {"keywords", "title"}
    default = Counter(q.kind for q in data.make_queries(corpus, 200, random.Random(1)))
    assert default["ict"] > default["title"] and default["ict"] > default["keywords"]
    # the mix is part of the training set's identity: another mix is mined afresh, not reused
    prints = [
        training_set_fingerprint(_opts(tmp_path, query_mix=mix), DATA_KEYS, corpus)
        for mix in ((0.75, 0.1, 0.15), (0.4, 0.3, 0.3))
    ]
    assert prints[0] != prints[1]
    result = CliRunner().invoke(main, ["train", "reranker", "--query-mix", "0.5,0.6,0.1"])
    assert result.exit_code == 2 and "summing to 1" in result.output
