"""The one intent-chip rule every face shows (GUI card, CLI line, LSP detail).

A chip names how a recommended paper would be cited here (``method 87%``) or, when the evidence
about this paper is weak, says so (``method? uncertain``). Evidence is weak when the intent stage
flagged it (``Recommendation.intent_uncertain``; without a flag, the stage's own threshold
``UNCERTAIN_BELOW``) or when every card of the list carries the same
distribution: then only the sentence's intent is known and nothing about the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.retrieval.intent_stage import DEFAULT_UNCERTAIN_BELOW as UNCERTAIN_BELOW
from assistant.retrieval.pipeline import Recommendation


@dataclass(frozen=True)
class IntentChip:
    label: str  # background / method / result, "" when no intent was computed
    confidence: float | None
    uncertain: bool
    why: str

    @property
    def shown(self) -> bool:
        """Worth a per-paper chip: the model is confident and the evidence is about this paper."""
        return bool(self.label) and not self.uncertain

    @property
    def text(self) -> str:
        if not self.label:
            return "intent n/a"
        if self.uncertain:
            return f"{self.label}? uncertain"
        return self.label if self.confidence is None else f"{self.label} {self.confidence:.0%}"


def _probs_text(probs: dict[str, float] | None) -> str:
    if not probs:
        return ""
    return ", ".join(f"{k} {v:.0%}" for k, v in sorted(probs.items(), key=lambda kv: -kv[1]))


def intent_chip(rec: Recommendation, shared: bool = False) -> IntentChip:
    """The chip of one card; ``shared``: the whole list carries one distribution."""
    if not rec.intent:
        return IntentChip("", None, True, "no intent model")
    conf = rec.intent_confidence
    if shared:
        uncertain, why = True, "only the sentence's intent is known, nothing about this paper"
    elif rec.intent_uncertain is not None:
        uncertain = rec.intent_uncertain
        why = "weak evidence for this paper" if uncertain else "this paper in this context"
    elif conf is not None and conf < UNCERTAIN_BELOW:
        uncertain, why = True, f"confidence {conf:.0%} is low"
    else:
        uncertain, why = False, "this paper's citation profile in this context"
    detail = rec.intent_evidence or _probs_text(rec.intent_probs)
    return IntentChip(rec.intent, conf, uncertain, why + (f" ({detail})" if detail else ""))


def intent_chips(items: list[Recommendation]) -> list[IntentChip]:
    """The chips of a ranked list (a list whose cards all carry one distribution is uncertain)."""
    dists = {tuple(round(v, 4) for v in (it.intent_probs or {}).values()) for it in items}
    shared = len(items) > 1 and len(dists) == 1 and bool(items[0].intent_probs)
    return [intent_chip(it, shared) for it in items]


def sentence_intent(items: list[Recommendation]) -> tuple[str, float | None] | None:
    """The one label a list shows at its top when no card has a per-paper chip of its own but
    the intent model said something about the sentence: ``(label, probability)``; else None."""
    chips = intent_chips(items)
    if not items or any(c.shown for c in chips) or not items[0].intent:
        return None
    probs = items[0].intent_probs or {}
    if probs:
        label, p = max(probs.items(), key=lambda kv: kv[1])
        return label, p
    return items[0].intent, None


def sentence_label(items: list[Recommendation]) -> str:
    """:func:`sentence_intent` as the faces print it (``"the sentence reads as: method 62%"``),
    else ""."""
    found = sentence_intent(items)
    if found is None:
        return ""
    label, p = found
    return f"the sentence reads as: {label}" + (f" {p:.0%}" if p is not None else "")


def chip_texts(items: list[Recommendation]) -> list[str | None]:
    """Per card, what the CLI, the language server and manuscript analysis print: the chip's
    text when it is worth showing (:attr:`IntentChip.shown`, the GUI's rule), else None. With
    no per-paper chip, :func:`sentence_label` says what the intent model read in the sentence."""
    return [chip.text if chip.shown else None for chip in intent_chips(items)]
