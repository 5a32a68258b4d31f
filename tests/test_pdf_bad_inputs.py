"""Bad PDFs never crash or hang: a clear DocumentError, or a Document flagged partial with warnings."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.documents.model import DocumentError
from assistant.documents.pdf import parse_pdf

_spec = importlib.util.spec_from_file_location(
    "pdfgen", Path(__file__).parent / "fixtures" / "documents" / "pdfgen.py"
)
pdfgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pdfgen)


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("badpdf")


@pytest.fixture(scope="module")
def paper_pdf(gen_dir) -> Path:
    return pdfgen.make_paper(gen_dir / "paper.pdf")


def test_encrypted_pdf_gives_clear_error(gen_dir, paper_pdf):
    path = pdfgen.make_encrypted(gen_dir / "encrypted.pdf", paper_pdf)
    with pytest.raises(DocumentError, match="encrypted"):
        parse_pdf(path)


def test_owner_password_only_pdf_is_read(gen_dir, paper_pdf):
    import pymupdf

    path = gen_dir / "owner-only.pdf"
    pymupdf.open(paper_pdf).save(
        path,
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        owner_pw="owner",
        user_pw="",
        permissions=pymupdf.PDF_PERM_PRINT,
    )
    doc = parse_pdf(path)
    assert doc.title == pdfgen.TITLE and len(doc.references) == 5


def test_corrupt_bytes_give_clear_error(gen_dir):
    path = pdfgen.make_corrupt(gen_dir / "corrupt.pdf")
    with pytest.raises(DocumentError, match="not a readable PDF"):
        parse_pdf(path)


def test_truncated_pdf_is_partial_or_error(gen_dir, paper_pdf):
    path = pdfgen.make_corrupt(gen_dir / "truncated.pdf", paper_pdf)
    try:
        doc = parse_pdf(path)
    except DocumentError as exc:
        assert "truncated.pdf" in str(exc)
        return
    assert doc.partial
    assert any("damaged" in w for w in doc.warnings)


def test_zero_page_pdf(gen_dir):
    path = pdfgen.make_zero_pages(gen_dir / "zero.pdf")
    with pytest.raises(DocumentError, match="no pages"):
        parse_pdf(path)


def test_empty_and_missing_files(gen_dir):
    empty = gen_dir / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(DocumentError, match="empty"):
        parse_pdf(empty)
    with pytest.raises(DocumentError, match="not found"):
        parse_pdf(gen_dir / "does-not-exist.pdf")


def test_image_only_pdf_is_flagged_as_scanned(gen_dir):
    doc = parse_pdf(pdfgen.make_image_only(gen_dir / "scan.pdf"))
    assert doc.partial
    assert any("no text layer" in w for w in doc.warnings)
    assert list(doc.sentences()) == []


def test_invoice_is_not_a_paper(gen_dir):
    doc = parse_pdf(pdfgen.make_invoice(gen_dir / "invoice.pdf"))
    assert doc.partial
    assert doc.references == []
    assert any("does not look like a scientific paper" in w for w in doc.warnings)


def test_300_page_pdf_respects_caps(gen_dir):
    path = pdfgen.make_long(gen_dir / "long.pdf", pages=300)
    doc = parse_pdf(path, max_pages=40)
    assert doc.page_count == 300
    assert doc.partial and any("stopped after 40 of 300 pages" in w for w in doc.warnings)
    assert len(list(doc.sentences())) > 100
    start = time.monotonic()
    capped = parse_pdf(path, time_limit_s=0.5, max_pages=1000)
    assert time.monotonic() - start < 15  # generous: the point is "no hang", not speed
    assert capped.partial and any(
        "time limit" in w or "stopped after" in w for w in capped.warnings
    )


def test_import_of_non_paper_is_refused_with_reason(gen_dir):
    from assistant.library.importers.pdf import import_pdf
    from assistant.library.store import Library

    lib = Library(gen_dir / "lib.sqlite")
    try:
        with pytest.raises(DocumentError, match="no text layer"):
            import_pdf(lib, pdfgen.make_image_only(gen_dir / "scan2.pdf"))
        assert lib.count() == 0
    finally:
        lib.close()


def test_manuscript_cli_reports_bad_pdf_cleanly(gen_dir, paper_pdf):
    from assistant.cli import main
    from assistant.cli.manuscript import manuscript

    runner = CliRunner()
    enc = pdfgen.make_encrypted(gen_dir / "enc2.pdf", paper_pdf)
    result = runner.invoke(main, ["manuscript", str(enc), "--no-recommend", "--json"])
    assert result.exit_code != 0
    assert "encrypted" in result.output
    scan = pdfgen.make_image_only(gen_dir / "scan3.pdf")
    result = runner.invoke(manuscript, [str(scan), "--no-recommend", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["partial"] is True and data["missing"] == []
