"""Train and evaluate the learned cite-worthiness scorer on a folder of paper PDFs.

Sentences with a citation marker are positives (markers stripped), the other body sentences
negatives. Evaluation is leave-one-paper-out (no sentence of a test paper is seen in
training), reporting ROC-AUC, and precision/recall/F1 at the 0.5 threshold, for the learned
model and for the cue scorer. Run::

    python -m assistant.documents.citeworthiness_train ../shared/data/acm-cr/dev --out assistant/models/citeworthiness.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def collect(pdf_dir: Path) -> list[tuple[str, str, int]]:
    """(paper, sentence without markers, label) for every body sentence of every PDF."""
    from assistant.documents.markers import strip_markers
    from assistant.documents.pdf import parse_pdf

    rows = []
    for pdf in sorted(Path(pdf_dir).rglob("*.pdf")):
        doc = parse_pdf(pdf)
        for sent in doc.sentences():
            text = strip_markers(sent.text, sent.markers)
            if len(text.split()) >= 5:
                rows.append((pdf.stem, text, int(bool(sent.markers))))
    return rows


def _features(texts, vectorizer=None):
    import numpy as np
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer

    from assistant.documents.citeworthiness import cue_vector, tokens

    if vectorizer is None:
        vectorizer = TfidfVectorizer(
            analyzer=tokens, min_df=3, max_features=4000, sublinear_tf=True
        )
        X = vectorizer.fit_transform(texts)
    else:
        X = vectorizer.transform(texts)
    cues = csr_matrix(np.array([cue_vector(t) for t in texts], dtype=np.float64))
    return hstack([X, cues]).tocsr(), vectorizer


def _fit(texts, labels, C: float = 1.0):
    from sklearn.linear_model import LogisticRegression

    X, vec = _features(texts)
    clf = LogisticRegression(C=C, max_iter=2000, class_weight="balanced")
    clf.fit(X, labels)
    return clf, vec


def _metrics(y, p, thresholds=(0.5, 0.6, 0.7)) -> dict:
    from sklearn.metrics import (
        average_precision_score,
        f1_score,
        precision_score,
        recall_score,
        roc_auc_score,
    )

    out = {
        "auc": round(roc_auc_score(y, p), 4),
        "average_precision": round(average_precision_score(y, p), 4),
    }
    for t in thresholds:
        pred = [int(x >= t) for x in p]
        out[f"@{t}"] = {
            "precision": round(precision_score(y, pred, zero_division=0), 4),
            "recall": round(recall_score(y, pred, zero_division=0), 4),
            "f1": round(f1_score(y, pred, zero_division=0), 4),
        }
    return out


def leave_one_paper_out(rows, C: float = 1.0) -> dict:
    from assistant.documents.citeworthiness import CueScorer

    papers = sorted({r[0] for r in rows})
    y_all, p_learned, p_cue = [], [], []
    for held in papers:
        train = [r for r in rows if r[0] != held]
        test = [r for r in rows if r[0] == held]
        clf, vec = _fit([r[1] for r in train], [r[2] for r in train], C)
        X, _ = _features([r[1] for r in test], vec)
        p_learned.extend(clf.predict_proba(X)[:, 1].tolist())
        p_cue.extend(s.probability for s in CueScorer().score([r[1] for r in test]))
        y_all.extend(r[2] for r in test)
    return {
        "papers": len(papers),
        "sentences": len(y_all),
        "positives": sum(y_all),
        "learned": _metrics(y_all, p_learned),
        "cues": _metrics(y_all, p_cue),
    }


def train_model(rows, C: float = 1.0) -> dict:
    """The JSON model read by :class:`assistant.documents.citeworthiness.LearnedScorer`."""
    clf, vec = _fit([r[1] for r in rows], [r[2] for r in rows], C)
    vocab = {tok: int(i) for tok, i in vec.vocabulary_.items()}
    return {
        "vocab": vocab,
        "idf": [float(x) for x in vec.idf_],
        "coef": [float(x) for x in clf.coef_[0]],
        "intercept": float(clf.intercept_[0]),
        "meta": {
            "sentences": len(rows),
            "positives": sum(r[2] for r in rows),
            "C": C,
            "features": "tfidf(1-2gram, sublinear, l2) + cue indicators",
        },
    }


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pdf_dir")
    ap.add_argument("--out", default=None, help="write the trained model here (JSON)")
    ap.add_argument("--C", type=float, default=1.0)
    args = ap.parse_args(argv)
    rows = collect(Path(args.pdf_dir))
    report = leave_one_paper_out(rows, args.C)
    if args.out:
        model = train_model(rows, args.C)
        model["meta"]["leave_one_paper_out"] = report
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(model))
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
