"""Citation intents for the faces: the classifier (``assistant intent``) and the labelling of the
library's citation contexts (``assistant intent --label-library``)."""

from __future__ import annotations

from pathlib import Path

from assistant.inference.intent import IntentClassifier, load_intent_classifier
from assistant.library.store import Library
from assistant.retrieval.intent_stage import LabelReport, classify_library_citations


def intent_classifier(model: str | None = None) -> IntentClassifier:
    """The intent model in folder ``model``, else the shipped one (loaded once per process)."""
    return IntentClassifier(model) if model else load_intent_classifier()


def label_library_citations(
    db_path: Path, force: bool = False, classifier=None, progress=None
) -> LabelReport:
    """Label the intents of the library's citation contexts (only unlabelled ones unless the
    model changed or ``force``); ``progress`` gets a
    :class:`~assistant.progress.ProgressEvent` after each batch."""
    with Library(db_path) as library:
        return classify_library_citations(
            library, force=force, classifier=classifier, progress=progress
        )
