"""Real title+abstract texts for parity checks and benchmarks (library DB or ACM-DL archive)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from assistant.library.models import TITLE_ABSTRACT_SEP


def _clean(value: str) -> str:
    return " ".join(value.replace("{", "").replace("}", "").split())


def documents_from_archive(archive: Path | str, n: int) -> list[str]:
    """The first ``n`` ``title [SEP] abstract`` texts of a ``acm-dl.tar.xz`` (streamed, stops early)."""
    import bibtexparser

    texts: list[str] = []
    with tarfile.open(archive, "r|*") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".bib"):
                continue
            raw = tar.extractfile(member)
            if raw is None:
                continue
            library = bibtexparser.parse_string(raw.read().decode("utf-8", "replace"))
            for entry in library.entries:
                fields = entry.fields_dict
                if "abstract" not in fields or "title" not in fields:
                    continue
                abstract = _clean(str(fields["abstract"].value))
                if len(abstract) < 50:
                    continue
                texts.append(_clean(str(fields["title"].value)) + TITLE_ABSTRACT_SEP + abstract)
                if len(texts) >= n:
                    return texts
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


def sample_documents(n: int, db_path: Path | str | None = None, archive: Path | str | None = None) -> list[str]:
    """``n`` real documents: from ``db_path`` if it has enough, else from the ACM-DL archive."""
    if db_path and Path(db_path).is_file():
        texts = documents_from_db(db_path, n)
        if len(texts) >= n:
            return texts
    if archive is None:
        from assistant.config import REPO_ROOT

        archive = REPO_ROOT.parent / "shared" / "data" / "acm-cr" / "acm-dl.tar.xz"
    if not Path(archive).is_file():
        raise FileNotFoundError(f"no documents: {db_path or 'no --db'} has too few abstracts and "
                                f"{archive} is missing")
    return documents_from_archive(archive, n)
