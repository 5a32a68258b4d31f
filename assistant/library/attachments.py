"""PDF attachments: where a paper's PDF is, and attaching a folder of PDFs to existing papers.

A PDF is matched to a paper by its file name (``citekey.pdf``), else by the DOI, else by the
title read from its first pages (one paper with that normalised title). Unmatched PDFs are
listed, never imported as new papers here (``assistant library import`` does that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assistant.library import editing
from assistant.library.models import Paper
from assistant.progress import Progress, ProgressEvent


@dataclass
class AttachReport:
    attached: list[tuple[str, str]] = field(default_factory=list)  # (citekey, pdf path)
    already: list[tuple[str, str]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)  # "file: why"


def pdf_file(lib, paper: Paper) -> Path | None:
    """The paper's PDF when it exists on disk (a relative path is taken from the library folder)."""
    if not paper.pdf_path:
        return None
    path = Path(paper.pdf_path).expanduser()
    if not path.is_absolute():
        path = Path(lib.path).parent / path
    return path if path.is_file() else None


def _match(lib, pdf: Path) -> tuple[Paper | None, str]:
    paper = lib.get_by_citekey(pdf.stem)
    if paper is not None:
        return paper, "file name"
    from assistant.documents.pdf import parse_pdf

    doc = parse_pdf(pdf, time_limit_s=5.0, max_pages=2)
    if doc.doi:
        paper = lib.get_by_doi(doc.doi)
        if paper is not None:
            return paper, "DOI"
    if doc.title:
        ids = lib.same_work_ids(doc.title, year=doc.year)
        if len(ids) == 1:
            return lib.get(ids[0]), "title"
    return None, ""


def attach_folder(lib, folder: str | Path, progress: Progress | None = None) -> AttachReport:
    """Attach every PDF under ``folder`` to the paper it belongs to (recorded in the history)."""
    from assistant.errors import AssistantError

    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise editing.LibraryEditError("not a folder", file=folder)
    pdfs = sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file())
    report = AttachReport()
    for i, pdf in enumerate(pdfs, 1):
        if progress:
            progress(ProgressEvent(i - 1, len(pdfs), "attach", pdf.name))
        try:
            paper, _how = _match(lib, pdf)
        except AssistantError as exc:
            report.issues.append(str(exc))
            continue
        except Exception as exc:  # DocumentError (encrypted, corrupt) or a parser failure: go on
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            report.issues.append(f"{pdf}: cannot read the PDF ({reason})")
            continue
        if paper is None:
            report.unmatched.append(str(pdf))
        elif paper.pdf_path and Path(paper.pdf_path).resolve() == pdf.resolve():
            report.already.append((paper.citekey, str(pdf)))
        else:
            editing.edit_paper(lib, paper.id, {"pdf_path": str(pdf.resolve())})
            report.attached.append((paper.citekey, str(pdf.resolve())))
    if progress:
        progress(ProgressEvent(len(pdfs), len(pdfs), "attach", "done"))
    return report
