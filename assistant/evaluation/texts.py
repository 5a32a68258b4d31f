"""Real title+abstract texts for parity checks and benchmarks (library DB, ACM-DL archive or the
bundled sample library)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from assistant.library.models import TITLE_ABSTRACT_SEP


def _clean(value: str) -> str:
    return " ".join(value.replace("{", "").replace("}", "").split())


def _bibtex_texts(text: str, texts: list[str], n: int) -> None:
    """Append the ``title [SEP] abstract`` texts of a BibTeX string to ``texts`` (up to ``n``)."""
    import bibtexparser

    for entry in bibtexparser.parse_string(text).entries:
        fields = entry.fields_dict
        if "abstract" not in fields or "title" not in fields:
            continue
        abstract = _clean(str(fields["abstract"].value))
        if len(abstract) < 50:
            continue
        texts.append(_clean(str(fields["title"].value)) + TITLE_ABSTRACT_SEP + abstract)
        if len(texts) >= n:
            return


def documents_from_archive(archive: Path | str, n: int) -> list[str]:
    """The first ``n`` ``title [SEP] abstract`` texts of a ``acm-dl.tar.xz`` (streamed, stops early)."""
    texts: list[str] = []
    with tarfile.open(archive, "r|*") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".bib"):
                continue
            raw = tar.extractfile(member)
            if raw is None:
                continue
            _bibtex_texts(raw.read().decode("utf-8", "replace"), texts, n)
            if len(texts) >= n:
                return texts
    return texts


def documents_from_bibtex(path: Path | str, n: int) -> list[str]:
    """The first ``n`` ``title [SEP] abstract`` texts of a BibTeX file."""
    texts: list[str] = []
    _bibtex_texts(Path(path).read_text(encoding="utf-8", errors="replace"), texts, n)
    return texts


def documents_from_db(db_path: Path | str, n: int) -> list[str]:
    """The first ``n`` papers with an abstract of a library DB, as ``Paper.encoder_text()``."""
    from assistant.library.store import Library

    library = Library(db_path)
    try:
        texts: list[str] = []
        for paper in library.iter_papers():
            if paper.abstract:
                texts.append(paper.encoder_text())
                if len(texts) >= n:
                    break
        return texts
    finally:
        library.close()


def sample_documents(
    n: int, db_path: Path | str | None = None, archive: Path | str | None = None
) -> list[str]:
    """``n`` real documents: from ``db_path`` if it has enough, else from the ACM-DL ``archive``
    if given, else as many as the bundled sample library has
    (``assistant/resources/sample/library.bib``)."""
    from assistant.config import RESOURCES_DIR

    if db_path and Path(db_path).is_file():
        texts = documents_from_db(db_path, n)
        if len(texts) >= n:
            return texts
    if archive is not None and Path(archive).is_file():
        return documents_from_archive(archive, n)
    sample = RESOURCES_DIR / "sample" / "library.bib"
    texts = documents_from_bibtex(sample, n) if sample.is_file() else []
    if not texts:
        raise FileNotFoundError(
            f"no documents: {db_path or 'no --db'} has too few abstracts, "
            f"{archive or 'no ACM-DL archive'} is missing and so is the bundled {sample}"
        )
    return texts
