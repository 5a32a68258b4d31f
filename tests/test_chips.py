"""The one intent-chip rule (assistant.service.chips) that the GUI, the CLI and the LSP show."""

from __future__ import annotations

from assistant.library.models import Paper
from assistant.service import intent_chip, intent_chips
from assistant.service.chips import UNCERTAIN_BELOW


def _rec(intent, probs=None, conf=None, uncertain=None, evidence=None):
    from assistant.retrieval.pipeline import Recommendation

    return Recommendation(
        paper=Paper(title="T"),
        score=1.0,
        intent=intent,
        intent_confidence=conf,
        intent_probs=probs,
        intent_uncertain=uncertain,
        intent_evidence=evidence,
    )


def test_confident_paper_label_shows_its_confidence():
    chip = intent_chip(_rec("method", {"method": 0.87}, 0.87, uncertain=False))
    assert (chip.text, chip.uncertain) == ("method 87%", False)


def test_stage_flag_low_confidence_and_no_model_are_uncertain():
    flagged = intent_chip(_rec("result", {"result": 0.9}, 0.9, uncertain=True, evidence="why"))
    assert (flagged.text, flagged.uncertain) == ("result? uncertain", True)
    assert "why" in flagged.why
    low = intent_chip(_rec("method", {"method": 0.5}, UNCERTAIN_BELOW - 0.01))
    assert low.uncertain and "low" in low.why
    assert intent_chip(_rec(None)).text == "intent n/a"


def test_a_list_with_one_distribution_says_nothing_about_each_paper():
    same = {"background": 0.2, "method": 0.7, "result": 0.1}
    chips = intent_chips([_rec("method", dict(same), 0.7, uncertain=False) for _ in range(3)])
    assert all(c.uncertain and c.text == "method? uncertain" for c in chips)
    other = {"background": 0.6, "method": 0.3, "result": 0.1}
    mixed = intent_chips(
        [_rec("method", same, 0.7, uncertain=False), _rec("background", other, 0.6, False)]
    )
    assert [c.text for c in mixed] == ["method 70%", "background 60%"]
