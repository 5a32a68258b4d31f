"""Abbreviations a manuscript defines, found with scispaCy on a blank pipeline and expanded in
the query the retrievers see."""

from __future__ import annotations

from assistant.documents import textops
from assistant.documents.abbreviations import expand, find_abbreviations, short_forms_in
from assistant.retrieval.query import Query
from assistant.service.writing import query_for_selection

TEXT = (
    "We study learning to rank (LTR) from user clicks. Counterfactual LTR corrects position "
    "bias with inverse propensity scoring (IPS; Joachims et al. 2017). Graph convolutional "
    "networks (GCNs) also help. The sessions (successful attempts to predict satisfaction once "
    "conversations) were logged."
)


def test_definitions_are_found_and_lowercase_pairs_are_not():
    found = find_abbreviations(TEXT)
    assert found == {
        "LTR": "learning to rank",
        "IPS": "inverse propensity scoring",  # "(IPS; Joachims et al. 2017)" too
        "GCNs": "Graph convolutional networks",
    }
    assert find_abbreviations(TEXT, {"IPS"}) == {"IPS": "inverse propensity scoring"}
    assert find_abbreviations(TEXT, set()) == {}
    assert find_abbreviations("No definitions (at all) here.") == {}


def test_expansion_once_after_the_short_form_unless_spelled_out():
    pairs = find_abbreviations(TEXT)
    assert expand("IPS weights each click; IPS is unbiased.", pairs) == (
        "IPS (inverse propensity scoring) weights each click; IPS is unbiased."
    )
    spelled = "Learning to rank (LTR) from clicks."
    assert expand(spelled, pairs) == spelled
    assert expand("LTRs and xIPS are other words.", pairs) == "LTRs and xIPS are other words."
    assert short_forms_in("Counterfactual LTR with IPS in the U.S. and LSTMs") == {
        "LTR",
        "IPS",
        "LSTMs",
    }


def test_the_query_expands_its_passage_and_context():
    query = Query("Unbiased LTR needs IPS [3].", mode="local", context="We use IPS.")
    assert query.parts().focus == "Unbiased LTR needs IPS."
    query.abbreviations = tuple(find_abbreviations(TEXT).items())
    parts = query.parts()
    assert parts.focus == "Unbiased LTR (learning to rank) needs IPS (inverse propensity scoring)."
    assert parts.context == "We use IPS (inverse propensity scoring)."


def test_a_drafts_definitions_reach_the_query_of_a_later_sentence():
    draft = (
        "\\title{Clicks}\n\nCounterfactual learning to rank (LTR) is popular.\n\n"
        "Later work improved LTR with clicks \\cite{joachims2017}.\n"
    )
    start = draft.index("Later work")
    query, _spec = query_for_selection(draft, start, start, style=textops.LATEX)
    assert query.abbreviation_source == draft  # looked up when the query runs (worker thread)
    assert "LTR (learning to rank) with clicks" in query.parts().focus
