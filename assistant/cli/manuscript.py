"""``assistant manuscript FILE``: structure, citations, references and missing citations of a
manuscript (PDF, LaTeX, Markdown or plain text)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from assistant import filewrite
from assistant.cli import resolve_db_path
from assistant.cli.options import db_option

log = logging.getLogger(__name__)


@click.command("manuscript")
@click.argument("file", type=click.Path(dir_okay=False))
@db_option("Library used to link references and recommend papers.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "pdf", "latex", "markdown", "text"]),
    default="auto",
    help="Input format (default: from the file extension).",
)
@click.option(
    "--threshold", type=float, default=None, help="Cite-worthiness threshold (default 0.5)."
)
@click.option(
    "-k",
    "k",
    type=int,
    default=5,
    show_default=True,
    help="Recommendations per missing citation (the GUI and the language server show 5 too).",
)
@click.option(
    "--no-recommend", is_flag=True, help="Only find the sentences; do not run the recommender."
)
@click.option(
    "--time-limit", type=float, default=20.0, show_default=True, help="PDF parsing time cap (s)."
)
@click.option(
    "--unmatched-bib",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write BibTeX stubs of the references not found in the library to this file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.pass_context
def manuscript(
    ctx: click.Context,
    file: str,
    db: str | None,
    fmt: str,
    threshold: float | None,
    k: int,
    no_recommend: bool,
    time_limit: float,
    unmatched_bib: str | None,
    as_json: bool,
) -> None:
    """Analyse FILE: citations found, references (linked to the library) and missing citations."""
    from assistant.service import Service, ServiceSettings, analyse_manuscript, read_manuscript

    doc = read_manuscript(file, fmt, time_limit_s=time_limit)
    db_path = resolve_db_path(ctx, db)
    service = Service(ServiceSettings(db_path=db_path)) if Path(db_path).exists() else None
    try:
        analysis = analyse_manuscript(
            service, doc, recommend=not no_recommend, k=k, threshold=threshold
        )
    finally:
        if service is not None:
            service.close()
    notes = list(analysis.notes)
    if service is None and not no_recommend:
        notes.append("no recommendations: no library database (use --no-recommend to silence)")
    result = _result(doc, analysis.missing, notes)
    if unmatched_bib:
        filewrite.write_text(
            unmatched_bib,
            "\n\n".join(result["unmatched_bibtex"]) + "\n",
            library=service.db_path if service is not None else None,
        )
        result["warnings"].append(
            f"{len(result['unmatched_bibtex'])} unmatched reference(s) written to {unmatched_bib}"
        )
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    _print(result)


def _result(doc, missing, notes: list[str]) -> dict:
    from dataclasses import asdict

    sentences = list(doc.sentences())
    return {
        "file": doc.source,
        "format": doc.format,
        "title": doc.title,
        "authors": doc.authors,
        "doi": doc.doi,
        "year": doc.year,
        "abstract": doc.abstract,
        "pages": doc.page_count,
        "partial": doc.partial,
        "warnings": doc.warnings + notes,
        "sections": [
            {"number": s.number, "heading": s.heading, "paragraphs": len(s.paragraphs)}
            for s in doc.sections
        ],
        "sentences": len(sentences),
        "citing_sentences": sum(1 for s in sentences if s.markers),
        "references": [
            {
                "number": r.number,
                "authors": r.authors,
                "title": r.title,
                "year": r.year,
                "venue": r.venue,
                "doi": r.doi,
                "arxiv_id": r.arxiv_id,
                "paper_id": r.paper_id,
                "match": r.match,
            }
            for r in doc.references
        ],
        "unmatched_bibtex": [r.to_bibtex() for r in doc.references if r.paper_id is None],
        "contexts": [asdict(c) for c in doc.citation_contexts()],
        "missing": [asdict(m) for m in missing],
    }


def _print(result: dict) -> None:
    out = sys.stdout
    out.write(f"{result['file']} ({result['format']}, {result['pages'] or '-'} pages)\n")
    out.write(f"Title: {result['title'] or '?'}\n")
    for w in result["warnings"]:
        out.write(f"warning: {w}\n")
    linked = sum(1 for r in result["references"] if r["paper_id"])
    out.write(
        f"{result['sentences']} sentences, {result['citing_sentences']} with citations; "
        f"{len(result['references'])} references ({linked} in the library)\n"
    )
    out.write(f"\n{len(result['missing'])} sentence(s) may need a citation:\n")
    for m in result["missing"]:
        out.write(f"\n[{m['score']:.2f}] ({m['section'] or '-'}) {m['sentence']}\n")
        if m["reasons"]:
            out.write(f"       why: {', '.join(m['reasons'])}\n")
        for r in m["recommendations"]:
            chip = f"  [{r['intent_chip']}]" if r.get("intent_chip") else ""
            out.write(f"       -> {r['title']} ({r['year'] or 'n.d.'}) {r['doi'] or ''}{chip}\n")
