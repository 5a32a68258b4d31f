"""``import_pdf``: add a paper PDF to the library with its citation edges and contexts.

The new edges' citation intents are labelled by the caller once the import is committed
(``Service.import_files``; ``ImportReport.citations_added`` says whether there are any)."""

from __future__ import annotations

import logging
from pathlib import Path

from assistant.documents.model import Document, DocumentError, ImportReport
from assistant.documents.pdf import parse_pdf
from assistant.library.linking import link_references
from assistant.library.models import Citation, Paper

log = logging.getLogger(__name__)


def document_to_paper(doc: Document, path: Path) -> Paper:
    """Library metadata from a parsed PDF (DOI when printed on the first page)."""
    return Paper(
        title=doc.title or path.stem,
        entry_type="article",
        abstract=doc.abstract,
        authors=list(doc.authors),
        year=doc.year,
        doi=doc.doi,
        keywords=list(doc.keywords),
        pdf_path=str(path.resolve()),
        source_file=str(path.resolve()),
        extra={"imported_from": "pdf", "references": str(len(doc.references))},
    )


def import_pdf(library, path: str | Path, document: Document | None = None) -> ImportReport:
    """Parse ``path``, add (or merge) the paper, link its references and add citation edges.

    Raises :class:`DocumentError` for unreadable files and for PDFs with neither a title nor
    references (nothing sensible to add). Re-importing the same PDF adds no duplicate edges.
    """
    path = Path(path)
    doc = document or parse_pdf(path)
    if not doc.title and not doc.references:
        reason = "; ".join(doc.warnings) or "no title and no references found"
        raise DocumentError(str(path), f"not imported: {reason}")
    warnings = list(doc.warnings)
    if not doc.title:
        warnings.append(f"no title found; using the file name '{path.stem}'")
    outcome = library.add_paper(document_to_paper(doc, path), record_format="pdf")
    citing_id = outcome.id
    link_references(doc.references, library)
    existing = {(c.cited_id, c.context) for c in library.citations_from(citing_id)}
    existing_ids = {cid for cid, _ in existing}
    added = 0
    cited_in_text: set[int] = set()
    for ctx in doc.citation_contexts():
        for pid in ctx.paper_ids:
            if pid == citing_id:
                continue
            cited_in_text.add(pid)
            if (pid, ctx.sentence) in existing:
                continue
            library.add_citation(
                Citation(
                    citing_id=citing_id, cited_id=pid, context=ctx.sentence, section=ctx.section
                )
            )
            existing.add((pid, ctx.sentence))
            added += 1
    # references linked but never cited in a sentence we parsed: keep the edge, no context
    for ref in doc.references:
        pid = ref.paper_id
        if pid and pid != citing_id and pid not in cited_in_text and pid not in existing_ids:
            library.add_citation(
                Citation(citing_id=citing_id, cited_id=pid, context="", section="")
            )
            existing_ids.add(pid)
            added += 1
    unmatched = [r for r in doc.references if r.paper_id is None]
    return ImportReport(
        path=str(path),
        paper_id=citing_id,
        title=doc.title or path.stem,
        doi=doc.doi,
        created=outcome.status == "added",
        references=len(doc.references),
        linked=len(doc.references) - len(unmatched),
        citations_added=added,
        unmatched=unmatched,
        warnings=warnings,
        partial=doc.partial,
    )
