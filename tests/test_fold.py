"""One accent folding (assistant/fold.py) for every key and name/title comparison."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from assistant.documents.model import Reference
from assistant.fold import TRANSLIT, fold
from assistant.library.citekeys import base_key
from assistant.library.linking import normalize_title
from assistant.library.normalize import ascii_fold, author_key, title_key
from assistant.retrieval.bibsignals import name_key

TEXT = st.text(alphabet=st.sampled_from("abcXYZ -.,éüÉçñøØßæłŁðþı中Жﬁ²Å\u0301"), max_size=30)


def _stored_key_formula(text: str) -> str:
    """The key the library stored in title_key/author_key before the folding moved here."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text.translate(TRANSLIT))
        text = text.encode("ascii", "ignore").decode("ascii")
    return "".join(c for c in text if c.isascii() and c.isalnum()).lower()


@given(TEXT)
def test_stored_keys_unchanged(text):
    # title_key / author_key are stored in existing libraries (the dedup index): same values
    assert ascii_fold(text) == _stored_key_formula(text)
    assert title_key(text) == _stored_key_formula(text)


def test_fold_examples():
    assert fold("Łukasz Müller-Ørsted") == "Lukasz Muller-Orsted"
    assert fold("Straße, Æsir") == "Strasse, AEsir"
    assert fold("王 Жуков") == " "  # ASCII only: other scripts dropped
    assert fold("王 Жуков", ascii_only=False) == "王 Жуков"
    assert fold("Gödel", ascii_only=False) == "Godel"
    assert fold("") == "" and fold("plain") == "plain"


def test_every_caller_folds_the_same_letters():
    """ł, ø, ß are spelled out everywhere (the reference stub and the link matcher used to drop
    them: ``Łukasiewicz`` became ``ukasiewicz``)."""
    ref = Reference(raw="", authors=["Łukasiewicz, Jan"], title="Über Logik", year=1930)
    assert ref.to_bibtex().startswith("@misc{lukasiewicz1930uber,")
    assert base_key(["Łukasiewicz, Jan"], 1930, "Über Logik") == "lukasiewicz1930uber"
    assert normalize_title("Ørsted’s Straße") == "orsteds strasse"
    assert name_key("Łukasiewicz, Jan") == name_key("Jan Lukasiewicz") == "lukasiewicz j"
    assert author_key(["Łukasiewicz, Jan"]) == "lukasiewicz"
