"""The sentence a result list belongs to is found again after an Insert and after its Undo."""

from assistant.gui.anchoring import Anchor


def test_anchor_follows_an_insert_and_finds_the_sentence_again_after_undo():
    doc = "First one. Click models such as the DBN. Last one."
    start = doc.index("Click")
    end = doc.index(". Last") + 1
    anchor = Anchor(None, start, end, doc[start:end])
    cited = doc[: end - 1] + "~\\cite{chapelle2009dbn}" + doc[end - 1 :]
    anchor.moved_to(start, end + len("~\\cite{chapelle2009dbn}"), cited[start : end + 23])
    assert anchor.locate(cited) == (start, end + 23)
    assert anchor.locate(doc) == (start, end)  # Ctrl+Z of the Insert: the sentence as it was
    assert anchor.locate(doc.replace("Click models", "Clicks")) is None  # really edited
