"""Per-paper intent: citectx loading and label mapping, the paper-profile model, the uncertain flag."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.inference.intent import LABELS
from assistant.inference.paper_intent import PaperProfileModel, paper_text
from assistant.library.models import Paper
from assistant.library.store import Library
from assistant.retrieval import intent_stage as stage
from assistant.retrieval.pipeline import Recommendation
from assistant.training.intent_aux import AuxDataError, CitePair, load_citectx
from assistant.training.paper_intent import (
    abstract_agrees,
    combine_scores,
    fit_profile,
    library_counts,
)

TSV_HEADER = "unique_id\tcited_title\tsection_title\tcited_abstract\tcitation_context\tcitation_class_label\n"


def _tsv(tmp_path, rows):
    path = tmp_path / "acl.tsv"
    path.write_text(TSV_HEADER + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_citectx_labels_are_mapped_and_markers_normalised(tmp_path):
    path = _tsv(
        tmp_path,
        [
            (
                "a",
                "A parser",
                "intro",
                "We present a fast parser.",
                "Parsing #AUTHOR_TAG is hard",
                "0",
            ),
            ("b", "A parser", "", "short", "We compare with #AUTHOR_TAG and win", "1"),
            ("c", "A tagger", "method", "", "We use the tagger of #AUTHOR_TAG .", "5"),
            ("d", "A tagger", "", "", "We extend #AUTHOR_TAG .", "2"),
            ("e", "X", "", "", "Future work could use #AUTHOR_TAG", "3"),
            ("f", "X", "", "", "", "4"),  # empty context: skipped
        ],
    )
    pairs = load_citectx(path)
    assert [LABELS[p.label] for p in pairs] == [
        "background",
        "result",
        "method",
        "method",
        "background",
    ]
    assert pairs[0].context == "Parsing @@CITATION is hard" and pairs[0].section == "intro"
    assert pairs[0].cited_abstract == "" and pairs[0].source == "acl.tsv:2"  # <= 50 chars: dropped
    assert [p.fine_label for p in pairs] == [0, 1, 5, 2, 3]


def test_citectx_bad_label_names_file_line_and_field(tmp_path):
    path = _tsv(
        tmp_path, [("a", "T", "", "", "ctx #AUTHOR_TAG", "0"), ("b", "T", "", "", "x", "9")]
    )
    with pytest.raises(AuxDataError, match=r"acl\.tsv:3: field 'citation_class_label'"):
        load_citectx(path)


def test_cp1252_csv_is_read(tmp_path):
    path = tmp_path / "3c.csv"
    text = 'cited_title,citation_context,citation_class_label\n"Caf\u00e9 models","As in #AUTHOR_TAG, na\u00efve",5\n'
    path.write_bytes(text.encode("cp1252"))
    (pair,) = load_citectx(path)
    assert pair.cited_title == "Caf\u00e9 models" and LABELS[pair.label] == "method"
    assert "na\u00efve" in pair.context


def _pairs():
    rows = []
    for i in range(8):
        rows.append(
            CitePair(
                f"We use @@CITATION {i}.",
                1,
                5,
                f"A toolkit for tagging {i}",
                "We release an open source toolkit and corpus for tagging.",
            )
        )
        rows.append(
            CitePair(
                f"Surveyed in @@CITATION {i}.",
                0,
                0,
                f"A survey of parsing {i}",
                "This survey reviews decades of work on parsing and discusses open problems.",
            )
        )
        rows.append(
            CitePair(
                f"Unlike @@CITATION {i}.",
                2,
                1,
                f"Results on tagging {i}",
                "Experiments show our results improve accuracy over the baseline on benchmarks.",
            )
        )
    return rows


def test_profile_model_matches_sklearn_and_reads_paper_types():
    from sklearn.feature_extraction.text import TfidfVectorizer

    pairs = _pairs()
    spec = fit_profile(pairs)
    model = PaperProfileModel(spec)
    texts = [paper_text(p.cited_title, p.cited_abstract) for p in pairs]
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=20000)
    ref = vec.fit(texts).transform([*texts, "toolkit toolkit survey unknownword"]).toarray()
    ours = model.features([*texts, "toolkit toolkit survey unknownword"])
    order = [spec["vocab"][t] for t in vec.get_feature_names_out()]
    assert np.allclose(ours[:, order], ref, atol=1e-5)
    p = model.predict_proba(
        [
            paper_text("An open source toolkit", "We release a toolkit and a corpus."),
            paper_text("A survey", "This survey reviews work and open problems."),
            "",
        ]
    )
    assert LABELS[p[0].argmax()] == "method" and LABELS[p[1].argmax()] == "background"
    assert np.allclose(p[2], spec["prior"])  # no text, no evidence


def test_library_counts_exclude_the_pair_itself_and_combination():
    pairs = [*_pairs()[:3], CitePair("x @@CITATION", 1, 5, "A toolkit for tagging 0", "")]
    counts = library_counts(pairs, pairs, targets_in_sources=True)
    assert counts[0].tolist() == [0, 1, 0]  # the other citation of "a toolkit for tagging 0"
    assert counts[1].sum() == 0
    p_c = np.array([[0.4, 0.35, 0.25]])
    q = np.array([[0.1, 0.8, 0.1]])
    flat = np.full(3, 1 / 3)
    assert np.allclose(combine_scores(p_c, q, flat, flat[None], flat, 0.0, 0.0), p_c)
    assert combine_scores(p_c, q, flat, flat[None], flat, 1.0, 0.0).argmax() == 1
    assert abstract_agrees("A fast parser", "We describe a parser.")
    assert not abstract_agrees("Natural language generation", "A mixer block used in rotary drums")


@pytest.fixture()
def library(tmp_path):
    lib = Library(tmp_path / "lib.sqlite")
    lib.ids = [
        lib.add_paper(
            Paper(
                title="A toolkit for image segmentation",
                abstract="We release open source software.",
            )
        ).id,
        lib.add_paper(Paper(title="Plant ecology", abstract="")).id,
    ]
    yield lib
    lib.close()


def test_uncertain_flag_and_evidence(library):
    recs = [Recommendation(paper=p, score=1.0) for p in library.get_many(library.ids)]
    out = stage.label_recommendations(
        "We segmented the images with the software of [1].", recs, library
    )
    assert all(r.intent == "method" and r.intent_uncertain is False for r in out)
    assert out[0].intent_evidence.startswith("sentence: method")
    assert "not cited in the library" in out[0].intent_evidence
    out = stage.label_recommendations("", recs, library)  # no sentence: only priors
    assert all(r.intent_uncertain for r in out)
