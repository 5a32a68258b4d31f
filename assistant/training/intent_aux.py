"""Auxiliary citation-intent data: the citectx files mapped onto the SciCite labels.

The ACL-ARC / ACT (3C shared task) corpora label a citation with one of six classes
(``citation_class_label`` 0..5). Mapping onto SciCite's background / method / result:

==========================  ============  ==============================================
citectx class               SciCite       why
==========================  ============  ==============================================
0 BACKGROUND                background    same notion
1 COMPARES_CONTRASTS        result        SciCite "result" = comparing with cited findings
2 EXTENSION                 method        builds on the cited method / data / tool
3 FUTURE                    background    cited as context for future work, no use
4 MOTIVATION                background    cited to motivate the problem
5 USES                      method        uses the cited method / data / tool
==========================  ============  ==============================================

``load_citectx`` reads one file (TSV, or the cp1252 CSV of 3C) into ``CitePair`` rows that
keep the cited paper (title, abstract) so the same rows serve the sentence classifier (aux
training signal) and the per-paper intent model (held-out pairs).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from assistant.errors import AssistantError
from assistant.inference.intent import CITATION_TOKEN, LABELS, normalize_context

#: citectx 6-class id -> SciCite label (documented above and in the model card)
CITECTX_TO_SCICITE: dict[int, str] = {
    0: "background",
    1: "result",
    2: "method",
    3: "background",
    4: "background",
    5: "method",
}
CITECTX_NAMES = ("BACKGROUND", "COMPARES_CONTRASTS", "EXTENSION", "FUTURE", "MOTIVATION", "USES")
#: files used for training signals; the two others are held out for evaluation
AUX_TRAIN_FILES = ("acl_arc_train.tsv", "3c_act_train.csv")
AUX_HELDOUT_FILES = ("acl_arc_test.tsv", "sdp_act_test.tsv")


@dataclass
class CitePair:
    """One citation: the citing sentence, the cited paper and the mapped label."""

    context: str  # normalised, marker = @@CITATION
    label: int  # index into LABELS
    fine_label: int  # original 0..5
    cited_title: str = ""
    cited_abstract: str = ""
    section: str = ""
    source: str = ""  # file:line


class AuxDataError(AssistantError, ValueError):
    """A citectx row cannot be read (names file, line and field)."""


def _rows(path: Path):
    if path.suffix.lower() == ".csv":
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")
        reader = csv.DictReader(text.splitlines(), dialect="excel")
    else:
        text = path.read_text(encoding="utf-8", errors="replace")
        reader = csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_MINIMAL)
    csv.field_size_limit(10**8)
    yield from enumerate(reader, start=2)


def load_citectx(path: str | Path, limit: int | None = None) -> list[CitePair]:
    """Rows of one citectx file with a non-empty context and a valid class label."""
    path = Path(path)
    out: list[CitePair] = []
    for lineno, row in _rows(path):
        raw = (row.get("citation_context") or "").replace("#AUTHOR_TAG", f" {CITATION_TOKEN} ")
        text = normalize_context(raw)
        if not text:
            continue
        value = (row.get("citation_class_label") or "").strip()
        try:
            fine = int(float(value))
        except ValueError:
            raise AuxDataError(
                f"field 'citation_class_label' must be 0..5, got {value!r}", file=path, line=lineno
            ) from None
        if fine not in CITECTX_TO_SCICITE:
            raise AuxDataError(
                f"field 'citation_class_label' out of range: {fine}", file=path, line=lineno
            )
        abstract = row.get("cited_abstract") or row.get("cited_abstract_auto") or ""
        out.append(
            CitePair(
                context=text,
                label=LABELS.index(CITECTX_TO_SCICITE[fine]),
                fine_label=fine,
                cited_title=(row.get("cited_title") or "").strip(),
                cited_abstract=abstract.strip() if len(abstract.strip()) > 50 else "",
                section=(row.get("section_title") or "").strip(),
                source=f"{path.name}:{lineno}",
            )
        )
        if limit and len(out) >= limit:
            break
    if not out:
        raise AuxDataError("no usable rows", file=path)
    return out


def citectx_dir() -> Path:
    """``$ASSISTANT_SHARED_DATA/citectx`` (an error when the variable is unset)."""
    from assistant.training.data import SHARED_DATA_ENV, shared_data_dir

    shared = shared_data_dir()
    if shared is None:
        raise AuxDataError(f"no citectx data: set {SHARED_DATA_ENV} to the folder holding citectx/")
    return shared / "citectx"


def load_aux_training(paths: list[Path] | None = None) -> list[CitePair]:
    """The training part of citectx (ACL-ARC train + 3C ACT train), de-duplicated by context."""
    paths = paths or [citectx_dir() / f for f in AUX_TRAIN_FILES]
    seen: set[str] = set()
    out: list[CitePair] = []
    for p in paths:
        for pair in load_citectx(p):
            key = pair.context.lower()
            if key not in seen:
                seen.add(key)
                out.append(pair)
    return out
