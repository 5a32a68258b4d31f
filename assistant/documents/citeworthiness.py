"""Cite-worthiness: does a sentence read as needing a citation?

Two scorers with the same interface ``score(texts) -> list[(probability, reasons)]``:

- :class:`CueScorer` — hand-weighted cues (claims about prior work, "has been shown",
  "state-of-the-art", named methods/datasets, comparisons with others...) minus cues of
  the authors' own contribution ("we propose", "our results", "Table 3"). Always available.
- :class:`LearnedScorer` — logistic regression over word n-gram TF-IDF + the cue features,
  trained on sentences of imported papers (sentences with markers are positives, with the
  markers stripped). ``assistant manuscript train-scorer DIR`` trains it and reports
  leave-one-paper-out figures; the model is a small JSON file (``assistant/models/citeworthiness.json``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from assistant.config import SHIPPED_MODELS_DIR

MODEL_PATH = SHIPPED_MODELS_DIR / "citeworthiness.json"

# (name, pattern, weight, reason shown to the user)
_CASE_SENSITIVE = {"named", "acronym"}
CUES: list[tuple[str, re.Pattern, float, str]] = [
    (n, re.compile(p, 0 if n in _CASE_SENSITIVE else re.IGNORECASE), w, r)
    for n, p, w, r in [
        (
            "shown",
            r"\b(?:has|have|had) been (?:shown|demonstrated|proven|reported|observed|found|argued|suggested)\b",
            2.2,
            "claims a prior finding",
        ),
        (
            "proposed",
            r"\b(?:has|have|had) been (?:proposed|introduced|developed|studied|investigated|explored|applied|"
            r"used|adopted|employed|widely|extensively)\b",
            1.8,
            "refers to prior work",
        ),
        (
            "prior",
            r"\b(?:prior|previous|earlier|recent|existing|related|past|seminal|pioneering) "
            r"(?:work|works|studies|study|research|approaches|methods|efforts|literature|papers|findings)\b",
            2.0,
            "mentions prior work",
        ),
        (
            "literature",
            r"\b(?:in|from) the literature\b|\bliterature (?:on|has)\b|\bresearchers have\b|"
            r"\bstudies (?:have|show|suggest|found)\b|\bwork (?:has|have) (?:shown|focused)\b",
            2.0,
            "mentions the literature",
        ),
        (
            "sota",
            r"\bstate[- ]of[- ]the[- ]art\b|\bSOTA\b|\bbest[- ]performing\b|\bleading (?:methods|approaches)\b",
            1.6,
            "state-of-the-art claim",
        ),
        (
            "widely",
            r"\b(?:widely|commonly|frequently|extensively|popularly|broadly) (?:used|adopted|studied|applied|"
            r"known|accepted|deployed)\b|\bwell[- ]known\b|\bit is (?:well )?known\b|\bpopular\b",
            1.5,
            "claims common knowledge",
        ),
        (
            "attribution",
            r"\b(?:proposed|introduced|developed|presented|described|defined|designed) by\b|"
            r"\baccording to\b|\bfollowing\b|\binspired by\b|\bas in\b|\bsimilar(?:ly)? to\b|"
            r"\bbased on the work\b|\bet al\b",
            1.3,
            "attributes an idea",
        ),
        (
            "growth",
            r"\b(?:has|have) (?:attracted|drawn|received|gained|emerged|become|been the focus)\b|"
            r"\bgrowing (?:body|interest)\b|\bincreasing(?:ly)? (?:attention|interest|popular)\b|"
            r"\bin recent years\b|\brecently\b",
            1.2,
            "describes a research trend",
        ),
        (
            "evidence",
            r"\b(?:shown|demonstrated|reported|found|observed) (?:that|to)\b|\bevidence\b|"
            r"\bstudies\b|\bsurvey\b",
            0.9,
            "reports evidence",
        ),
        (
            "named",
            r"\b(?:[A-Z][a-z]*[A-Z][A-Za-z]*|[A-Z]{2,}[a-z]?\d*)\b(?:\s+(?i:model|method|algorithm|dataset|"
            r"corpus|collection|benchmark|framework|architecture|toolkit|library|network|approach))",
            1.2,
            "names a method or dataset",
        ),
        (
            "dataset",
            r"\b(?:dataset|data set|corpus|collection|benchmark|test collection|track)s?\b",
            0.6,
            "mentions a dataset",
        ),
        (
            "methods",
            r"\b(?:approaches|methods|models|techniques|algorithms|systems) (?:such as|like|including)\b|"
            r"\bsuch as\b|\be\.g\.",
            0.8,
            "lists methods",
        ),
        (
            "comparison",
            r"\b(?:unlike|in contrast to|compared to|compared with|outperform\w*|improv\w* over)\b",
            0.5,
            "compares with other work",
        ),
        ("acronym", r"\b[A-Z]{2,}[a-z]?\d*\b", 0.35, "names an acronym"),
    ]
]
NEGATIVE: list[tuple[str, re.Pattern, float]] = [
    (n, re.compile(p, re.IGNORECASE), w)
    for n, p, w in [
        ("we", r"\b(?:we|our|us|this paper|this work|this study|in this section|here)\b", -1.6),
        (
            "own",
            r"\bwe (?:propose|present|introduce|show|find|found|observe|demonstrate|report|use|train|evaluate|"
            r"define|describe|conduct|design|implement|apply|compute|set|adopt)\b",
            -1.0,
        ),
        (
            "refs",
            r"\b(?:Table|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Algorithm|Appendix)\s*\d",
            -1.2,
        ),
        ("math", r"[=≤≥∈∑∏]|\\\w+", -0.8),
        ("question", r"\?\s*$", -0.8),
        ("future", r"\bfuture work\b|\bwe plan\b|\bin the future\b", -1.2),
    ]
]
BIAS = -1.4


@dataclass
class ScoredSentence:
    probability: float
    reasons: list[str]


_TOKEN = re.compile(r"[a-z][a-z\-]+|\d+")


def tokens(text: str) -> list[str]:
    """Lower-cased unigrams and bigrams; numbers collapsed to <num> (the learned scorer's
    vocabulary; its trainer, ``citeworthiness_train``, counts the same tokens)."""
    words = ["<num>" if w.isdigit() else w for w in _TOKEN.findall(text.lower())]
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def cue_vector(text: str) -> list[float]:
    """0/1 cue indicators (positive then negative) plus a length feature; used by both scorers."""
    vec = [1.0 if pat.search(text) else 0.0 for _, pat, _, _ in CUES]
    vec += [1.0 if pat.search(text) else 0.0 for _, pat, _ in NEGATIVE]
    vec.append(min(len(text.split()), 60) / 60.0)
    return vec


class CueScorer:
    """Hand-weighted cues through a logistic link."""

    name = "cues"

    def score(self, texts: list[str]) -> list[ScoredSentence]:
        out = []
        for text in texts:
            z, reasons = BIAS, []
            for _, pat, w, reason in CUES:
                if pat.search(text):
                    z += w
                    reasons.append(reason)
            for _, pat, w in NEGATIVE:
                if pat.search(text):
                    z += w
            n_words = len(text.split())
            if n_words < 6:
                z -= 2.0
            out.append(ScoredSentence(1 / (1 + math.exp(-z)), reasons))
        return out


class LearnedScorer:
    """Logistic regression over TF-IDF n-grams + cue features, from a JSON model file."""

    name = "learned"

    def __init__(self, model: dict):
        self.vocab: dict[str, int] = model["vocab"]
        self.idf: list[float] = model["idf"]
        self.coef: list[float] = model["coef"]
        self.intercept: float = model["intercept"]
        self.meta = model.get("meta", {})
        self._cues = CueScorer()

    @classmethod
    def load(cls, path: Path | str = MODEL_PATH) -> LearnedScorer | None:
        p = Path(path)
        if not p.is_file():
            return None
        return cls(json.loads(p.read_text()))

    def score(self, texts: list[str]) -> list[ScoredSentence]:
        n_vocab = len(self.vocab)
        reasons = self._cues.score(texts)
        out = []
        for text, cue in zip(texts, reasons):
            counts: dict[int, int] = {}
            for tok in tokens(text):
                j = self.vocab.get(tok)
                if j is not None:
                    counts[j] = counts.get(j, 0) + 1
            weights = {j: (1 + math.log(c)) * self.idf[j] for j, c in counts.items()}
            norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            z = self.intercept + sum(self.coef[j] * w / norm for j, w in weights.items())
            z += sum(c * v for c, v in zip(self.coef[n_vocab:], cue_vector(text)))
            out.append(ScoredSentence(1 / (1 + math.exp(-max(-30.0, min(30.0, z)))), cue.reasons))
        return out


def default_scorer():
    """The learned scorer when its model file is shipped, else the cue scorer."""
    return LearnedScorer.load() or CueScorer()
