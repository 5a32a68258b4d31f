"""Shared helpers for the retrieval tests: a real encoder, the bundled sample library (indexed once
per session; runs on a clean clone) and small real ACM-DL libraries (need ../shared)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from assistant.config import RESOURCES_DIR, index_dir_for
from assistant.library.models import Citation, Paper
from assistant.library.store import Library

SAMPLE_BIB = RESOURCES_DIR / "sample" / "library.bib"
SAMPLE_DRAFT = RESOURCES_DIR / "sample" / "draft.tex"
#: The sample paper used as "the manuscript being written" and two papers it cites (real edges).
SAMPLE_MANUSCRIPT = "ai2018unbiasedb"
SAMPLE_MANUSCRIPT_CITES = ("wang2018position", "joachims2017unbiased")

CHIIR_DEV = ("chiir-2020", "3343413.3378010")  # cites two CHIIR 2019 papers


class CountingEncoder:
    """Wraps a real encoder and records what it was asked to embed (optionally stops after N calls)."""

    def __init__(self, encoder, stop_after: int | None = None):
        self.inner = encoder
        self.texts: list[str] = []
        self.calls = 0
        self.stop_after = stop_after

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, texts, batch_size=32, progress=None):
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        texts = [texts] if isinstance(texts, str) else list(texts)
        self.texts.extend(texts)
        return self.inner.encode(texts, batch_size=batch_size)


def load_test_encoder(tmp_path_factory, max_length: int = 128):
    """The default MiniLM encoder from the session's models dir (built once per session)."""
    import conftest

    models = os.environ.get("ASSISTANT_TEST_MODELS") or str(
        conftest._session_models_dir(tmp_path_factory)
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASSISTANT_MODELS", models)
        from assistant.retrieval.index import load_index_encoder

        return load_index_encoder(None, max_length=max_length, threads=2)


def sample_file(files: list[Path], stem: str) -> Path:
    for f in files:
        if f.stem == stem:
            return f
    pytest.skip(f"{stem}.bib not in the sample files")


def make_library(path: Path, bib: Path, limit: int | None = None) -> Library:
    """A library with the (first ``limit``) records of one real ACM-DL BibTeX file."""
    from assistant.library.importers.bibtex import parse_bibtex_file

    library = Library(path)
    records = parse_bibtex_file(bib).records
    with library.transaction():
        for rec in records[:limit] if limit else records:
            library.add_paper(rec.paper)
    return library


def add_dev_paper(library: Library, acm_dev_dir: Path) -> tuple[int, list[int]]:
    """Add the CHIIR 2020 dev paper (title/abstract/DOI from its XML) and its citation edges."""
    from assistant.evaluation.acm_cr_data import read_citing_paper
    from assistant.library.normalize import normalize_doi

    xml = acm_dev_dir / CHIIR_DEV[0] / f"{CHIIR_DEV[1]}.xml"
    if not xml.exists():
        pytest.skip(f"{xml} not found")
    paper = read_citing_paper(xml)
    outcome = library.add_paper(
        Paper(
            title=paper.title,
            abstract=paper.abstract,
            doi=paper.doi,
            entry_type="inproceedings",
            year=2020,
            venue="CHIIR '20",
        )
    )
    manuscript = library.get_by_doi(paper.doi)
    cited = []
    for ref in paper.references.values():
        doi = normalize_doi(ref)
        hit = library.get_by_doi(doi) if doi else None
        if hit:
            library.add_citation(Citation(citing_id=manuscript.id, cited_id=hit.id))
            cited.append(hit.id)
    assert outcome is not None
    return manuscript.id, cited


@pytest.fixture(scope="session")
def chiir_library(tmp_path_factory, acm_dl_sample_files, acm_dev_dir):
    """CHIIR 2019 (real ACM-DL records) + the CHIIR 2020 dev paper citing two of them, indexed once.

    For the ACM-CR evaluation tests only (skips without ../shared); the core pipeline tests use
    ``sample_library``."""
    from types import SimpleNamespace

    from assistant.retrieval.index import build_index

    encoder = load_test_encoder(tmp_path_factory)
    lib = make_library(
        tmp_path_factory.mktemp("chiir") / "lib.sqlite",
        sample_file(acm_dl_sample_files, "chiir-2019"),
    )
    manuscript, cited = add_dev_paper(lib, acm_dev_dir)
    build_index(lib, encoder)
    yield SimpleNamespace(lib=lib, encoder=encoder, manuscript=manuscript, cited=cited)
    lib.close()


def draft_citing_sentences() -> list[tuple[str, list[str]]]:
    """The sample draft's sentences that carry ``\\cite{}`` and their keys (the draft's answer key)."""
    from assistant.documents.sentences import sentences
    from assistant.documents.textops import LATEX, citation_spans

    text = SAMPLE_DRAFT.read_text(encoding="utf-8")
    body = text.split("\\begin{document}", 1)[-1]
    out = []
    for sent in sentences(body):
        keys = [k for span in citation_spans(sent, LATEX) for k in span.keys]
        if keys:
            out.append((" ".join(sent.split()), keys))
    return out


@pytest.fixture(scope="session")
def sample_library(tmp_path_factory):
    """The bundled sample library (assistant/resources/sample/library.bib), indexed once per session; one of
    its papers plays the manuscript and cites two others through real citation rows."""
    from types import SimpleNamespace

    from assistant.retrieval.index import build_index

    encoder = load_test_encoder(tmp_path_factory)
    lib = make_library(tmp_path_factory.mktemp("sample-lib") / "lib.sqlite", SAMPLE_BIB)
    manuscript = lib.get_by_citekey(SAMPLE_MANUSCRIPT)
    cited = [lib.get_by_citekey(k) for k in SAMPLE_MANUSCRIPT_CITES]
    assert manuscript and all(cited), "the sample library lost the papers these tests use"
    with lib.transaction():
        for paper in cited:
            lib.add_citation(Citation(citing_id=manuscript.id, cited_id=paper.id))
    build_index(lib, encoder)
    yield SimpleNamespace(
        lib=lib, encoder=encoder, manuscript=manuscript.id, cited=[p.id for p in cited]
    )
    lib.close()


def copy_sample_library(sample_library, folder: Path) -> Path:
    """A private copy of the indexed sample library (its database, WAL and all, and its index
    folder) in ``folder``, for tests that edit it; the session's library stays as it is."""
    db = folder / "lib.sqlite"
    target = sqlite3.connect(db)
    sample_library.lib.conn.backup(target)
    target.close()
    shutil.copytree(index_dir_for(sample_library.lib.path), index_dir_for(db))
    return db
