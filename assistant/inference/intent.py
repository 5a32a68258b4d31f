"""Citation-intent classifier (SciCite scheme: background / method / result).

``IntentClassifier`` runs the shipped ONNX model (``assistant/models/intent-minilm/``) through the
inference layer (``assistant.inference.classifier.load_classifier``) and applies the
temperature stored in the manifest (fitted on SciCite dev), so the probabilities are
calibrated (after the per-class ``logit_bias`` tuned on dev for macro-F1, if any). Texts are normalised exactly as in training (``normalize_context``): citation
markers become ``@@CITATION``, whitespace is collapsed and over-long input is clipped.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("background", "method", "result")
DEFAULT_MODEL = "intent-minilm"
CITATION_TOKEN = "@@CITATION"
#: Characters kept from one context before tokenisation (the model sees <= max_length tokens).
MAX_CHARS = 2000

_LATEX_CITE = re.compile(r"\\(?:[a-zA-Z]*cite[a-zA-Z]*)\*?(?:\[[^\]]*\])*\{[^}]*\}")
_NUM_BRACKET = re.compile(r"\[\s*\d{1,4}[a-z]?(?:\s*(?:[-\u2013,;]|and)\s*\d{1,4}[a-z]?)*\s*\]")
_NUM_PAREN = re.compile(r"\(\s*\d{1,3}(?:\s*[-\u2013,;]\s*\d{1,3})*\s*\)")
# "(Smith et al., 2020; Lee 2019a)" / "(2012)": a parenthesis holding a year, no nested parens
_YEAR_PAREN = re.compile(r"\((?=[^()]{0,300}\b(?:1[89]\d{2}|20\d{2})[a-z]?\b)[^()]{0,300}\)")
_AUTHOR_BRACKET = re.compile(
    r"\[(?=[^\[\]]{0,200}\b(?:1[89]\d{2}|20\d{2})[a-z]?\b)[^\[\]]{0,200}\]"
)
_REPEATED = re.compile(rf"{CITATION_TOKEN}(?:[\s,;]*{CITATION_TOKEN})+")
_SPACES = re.compile(r"\s+")


def normalize_context(text: str) -> str:
    """Replace citation markers by ``@@CITATION``, collapse whitespace, clip to MAX_CHARS."""
    text = (text or "")[: MAX_CHARS * 2]
    for pattern in (_LATEX_CITE, _NUM_BRACKET, _AUTHOR_BRACKET, _YEAR_PAREN, _NUM_PAREN):
        text = pattern.sub(CITATION_TOKEN, text)
    text = _REPEATED.sub(CITATION_TOKEN, text)
    return _SPACES.sub(" ", text).strip()[:MAX_CHARS]


@dataclass
class IntentPrediction:
    """The intent of one context: the arg-max label, its probability, all probabilities."""

    label: str
    confidence: float
    probs: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "confidence": round(self.confidence, 4),
            "probs": {k: round(v, 4) for k, v in self.probs.items()},
        }


def shipped_model_dir(name: str = DEFAULT_MODEL) -> Path:
    from assistant.config import SHIPPED_MODELS_DIR

    return SHIPPED_MODELS_DIR / name


def resolve_model_dir(path_or_name: str | Path | None = None) -> Path:
    """A model folder: an explicit path, a name under the shipped ``assistant/models/`` or ``models_dir()``."""
    from assistant.config import models_dir

    if path_or_name is None:
        path_or_name = DEFAULT_MODEL
    path = Path(path_or_name)
    if path.is_dir():
        return path
    for candidate in (shipped_model_dir(str(path_or_name)), models_dir() / str(path_or_name)):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise FileNotFoundError(
        f"intent model {path_or_name!r} not found (looked in {shipped_model_dir(str(path_or_name))} "
        f"and {models_dir() / str(path_or_name)}); train it with `assistant train intent`"
    )


def softmax_with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64) / max(float(temperature), 1e-6)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


class IntentClassifier:
    """Batch citation-intent classifier over an ONNX model folder (calibrated probabilities)."""

    def __init__(
        self, model: str | Path | None = None, device: str = "auto", precision: str = "auto"
    ):
        from assistant.inference.classifier import load_classifier

        self.model_dir = resolve_model_dir(model)
        manifest = json.loads((self.model_dir / "manifest.json").read_text(encoding="utf-8"))
        self.manifest = manifest
        self.temperature = float(manifest.get("temperature", 1.0) or 1.0)
        #: per-class logit offsets tuned on dev for macro-F1 (zeros when absent)
        self.logit_bias = np.asarray(
            manifest.get("logit_bias") or [0.0] * len(manifest.get("labels") or []),
            dtype=np.float64,
        )
        self.normalize = manifest.get("normalization", "citation-marker-v1") != "none"
        self._clf = load_classifier(self.model_dir, device=device, precision=precision)
        self.labels: list[str] = list(self._clf.labels)
        self.name = str(manifest.get("name", self.model_dir.name))
        # the checksum of the full weights: a file shipped without its borrowed tensors
        # (``files_restored``) computes exactly what the full one did
        files = {**(manifest.get("files") or {}), **(manifest.get("files_restored") or {})}
        sha = files.get("int8") or files.get("fp32") or ""
        #: identifies the exact weights (stored with the library's citation labels)
        self.version = f"{self.name}@{sha[:12] or manifest.get('created', '')}"

    @property
    def info(self):
        return getattr(self._clf, "info", None)

    def predict_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Calibrated (n, C) probabilities; empty/blank texts get the class prior of the model."""
        if isinstance(texts, str):
            raise TypeError("classify() takes a list of texts, not a single string")
        prepared = [
            normalize_context(t) if self.normalize else (t or "").strip()[:MAX_CHARS] for t in texts
        ]
        out = np.zeros((len(prepared), len(self.labels)), dtype=np.float32)
        real = [i for i, t in enumerate(prepared) if t]
        if real:
            logits = self._clf.predict_logits([prepared[i] for i in real], batch_size=batch_size)
            bias = self.logit_bias if self.logit_bias.shape == (logits.shape[1],) else 0.0
            out[real] = softmax_with_temperature(
                np.asarray(logits, dtype=np.float64) + bias, self.temperature
            )
        blank = [i for i, t in enumerate(prepared) if not t]
        if blank:
            prior = np.asarray(
                self.manifest.get("class_prior") or [1.0] * len(self.labels), dtype=np.float32
            )
            out[blank] = prior / prior.sum()
        return out

    def classify(self, texts: list[str], batch_size: int = 64) -> list[IntentPrediction]:
        """One ``IntentPrediction`` per text, in order."""
        if isinstance(texts, str):
            raise TypeError("classify() takes a list of texts, not a single string")
        probs = self.predict_proba(list(texts), batch_size=batch_size)
        preds = []
        for row in probs:
            best = int(np.argmax(row))
            preds.append(
                IntentPrediction(
                    label=self.labels[best],
                    confidence=float(row[best]),
                    probs={lab: float(p) for lab, p in zip(self.labels, row)},
                )
            )
        return preds


_CACHE: dict[str, IntentClassifier] = {}


def load_intent_classifier(model: str | Path | None = None) -> IntentClassifier:
    """A process-wide cached ``IntentClassifier`` (the GUI and pipeline share one)."""
    key = str(resolve_model_dir(model).resolve())
    if key not in _CACHE:
        _CACHE[key] = IntentClassifier(key)
    return _CACHE[key]
