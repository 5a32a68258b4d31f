"""What a paper is likely to be cited *for*, from its title and abstract alone.

``PaperProfileModel`` is a TF-IDF (uni+bigram, sublinear tf, l2) + multinomial logistic
regression over ``title. abstract``, trained on citectx pairs (cited paper -> how it is cited,
mapped to background / method / result; ``assistant train paper-intent``). It is stored as
plain JSON (vocabulary, idf, coefficients; no pickle) in ``assistant/models/intent-minilm/paper_profile.json``
together with the weights that combine it with the sentence intent and the library's citation
edges (``assistant.retrieval.intent_stage``). The featuriser reproduces scikit-learn's
``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)`` exactly (checked in the tests).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assistant.inference.intent import LABELS

PROFILE_FILE = "paper_profile.json"
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token_pattern


def paper_text(title: str, abstract: str) -> str:
    """The profile model's input: ``title. abstract`` (either may be empty)."""
    return ". ".join(p.strip() for p in (title or "", abstract or "") if p and p.strip())


def ngrams(text: str, n_max: int = 2) -> list[str]:
    tokens = _TOKEN.findall((text or "").lower())
    out = list(tokens)
    for n in range(2, n_max + 1):
        out += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return out


@dataclass
class CombineWeights:
    """``p(k|c,d) ∝ p(k|c) * (q_d[k]/q̄[k])^profile * (theta_d[k]/pi[k])^library``; for a stated
    need ``k*`` the ranking uses ``p(k*|d) ∝ pi * (q_d/q̄)^need_profile * (theta_d/pi)^library``."""

    profile: float = 0.0
    library: float = 1.0
    uncertain_below: float = 0.6  # confidence under this -> the chip says "uncertain"
    need_profile: float = 1.0  # the profile's weight in p(k*|d) for intent-aware ranking
    metrics: dict = field(default_factory=dict)


class PaperProfileModel:
    """``predict_proba(texts)`` -> (n, 3) probabilities over LABELS."""

    def __init__(self, spec: dict):
        if list(spec.get("labels", [])) != list(LABELS):
            raise ValueError(f"paper profile labels {spec.get('labels')} != {list(LABELS)}")
        self.vocab: dict[str, int] = spec["vocab"]
        self.idf = np.asarray(spec["idf"], dtype=np.float64)
        self.coef = np.asarray(spec["coef"], dtype=np.float64)  # (3, V)
        self.intercept = np.asarray(spec["intercept"], dtype=np.float64)
        self.n_max = int(spec.get("ngram_max", 2))
        self.prior = np.asarray(spec.get("prior") or [1 / 3] * 3, dtype=np.float64)
        c = spec.get("combine") or {}
        self.combine = CombineWeights(
            profile=float(c.get("profile", 0.0)),
            library=float(c.get("library", 1.0)),
            uncertain_below=float(c.get("uncertain_below", 0.6)),
            need_profile=float(c.get("need_profile", 1.0)),
            metrics=c.get("metrics") or {},
        )
        self.version = str(spec.get("version", ""))

    @classmethod
    def load(cls, path: str | Path) -> PaperProfileModel:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def features(self, texts: list[str]) -> np.ndarray:
        """Dense (n, V) TF-IDF rows (the vocabulary is a few thousand terms)."""
        x = np.zeros((len(texts), len(self.idf)), dtype=np.float64)
        for row, text in enumerate(texts):
            counts: dict[int, int] = {}
            for g in ngrams(text, self.n_max):
                j = self.vocab.get(g)
                if j is not None:
                    counts[j] = counts.get(j, 0) + 1
            for j, n in counts.items():
                x[row, j] = (1.0 + math.log(n)) * self.idf[j]
            norm = np.linalg.norm(x[row])
            if norm > 0:
                x[row] /= norm
        return x

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        """Probabilities; a blank text gets the training prior (no evidence)."""
        if isinstance(texts, str):
            raise TypeError("predict_proba() takes a list of texts")
        z = self.features(texts) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        blank = [i for i, t in enumerate(texts) if not (t or "").strip()]
        p[blank] = self.prior
        return p


_CACHE: dict[str, PaperProfileModel | None] = {}


def load_paper_profile(model_dir: str | Path | None = None) -> PaperProfileModel | None:
    """The profile model next to the intent model (None if that folder has none)."""
    from assistant.inference.intent import resolve_model_dir

    path = resolve_model_dir(model_dir) / PROFILE_FILE
    key = str(path)
    if key not in _CACHE:
        _CACHE[key] = PaperProfileModel.load(path) if path.is_file() else None
    return _CACHE[key]
