"""``assistant library ...``: import, stats, search, export, show, remove."""

from __future__ import annotations

import json

import click

import assistant.cli.library_manage  # noqa: F401  (its commands register on the group)
from assistant.cli import resolve_db_path
from assistant.cli.library_group import db_option, library, open_db


@library.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@db_option
@click.option(
    "--workers", type=int, default=None, help="Parser processes (default: up to 2 for many files)."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def import_cmd(ctx, paths, db, workers, quiet, as_json):
    """Import BibTeX/RIS/CSL-JSON files, folders, zotero.sqlite or PDFs (one transaction)."""
    from assistant.cli.progress import ProgressRenderer
    from assistant.service import Service, ServiceSettings

    service = Service(ServiceSettings(db_path=resolve_db_path(ctx, db)))
    try:
        with ProgressRenderer(quiet or as_json) as progress:
            report = service.import_files(paths, progress, workers=workers, index=False)
        count = service.library.count()
    finally:
        service.close()
    for issue in report.issues:
        click.echo(str(issue), err=True)
    summary = {
        "files": report.files,
        "added": report.added,
        "merged": report.merged,
        "unchanged": report.unchanged,
        "skipped": report.skipped,
        "skipped_by_reason": report.skipped_by_reason,
        "issues": len(report.issues),
        "papers_in_library": count,
        "elapsed_s": round(report.elapsed_s, 2),
        "cpu_s": round(report.cpu_s, 2),
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"{report.files} files: {report.added} added, {report.merged} merged, "
            f"{report.unchanged} unchanged, {report.skipped} skipped, {len(report.issues)} issues "
            f"in {report.elapsed_s:.1f}s (CPU {report.cpu_s:.1f}s); library has {count} papers"
        )
    if report.records == 0 and any(i.severity == "error" for i in report.issues):
        ctx.exit(1)  # nothing could be imported


@library.command("stats")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def stats_cmd(ctx, db, as_json):
    """Counts per entry type, abstracts, DOIs, citations, schema version, DB size."""
    lib = open_db(ctx, db)
    try:
        stats = lib.stats()
    finally:
        lib.close()
    if as_json:
        click.echo(json.dumps(stats, indent=2))
        return
    click.echo(
        f"library: {stats['path']} (schema v{stats['schema_version']}, "
        f"{stats['db_size_bytes'] / 1e6:.1f} MB)"
    )
    click.echo(
        f"papers: {stats['papers']}  (with abstract {stats['with_abstract']}, with DOI {stats['with_doi']}, "
        f"with PDF {stats['with_pdf']})  records: {stats['records']}  citations: {stats['citations']}"
    )
    for etype, n in stats["by_entry_type"].items():
        click.echo(f"  {etype:<15} {n}")


@library.command("search")
@click.argument("query", nargs=-1, required=True)
@db_option
@click.option("-n", "--limit", type=int, default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def search_cmd(ctx, query, db, limit, as_json):
    """Full-text search (title, abstract, keywords)."""
    lib = open_db(ctx, db)
    try:
        papers = lib.search(" ".join(query), limit=limit)
    finally:
        lib.close()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": p.id,
                        "citekey": p.citekey,
                        "title": p.title,
                        "year": p.year,
                        "authors": p.authors,
                        "doi": p.doi,
                        "venue": p.venue,
                    }
                    for p in papers
                ],
                indent=2,
            )
        )
        return
    for p in papers:
        who = p.first_author_lastname + (" et al." if len(p.authors) > 1 else "")
        click.echo(f"{p.citekey:<28} {p.year or '':<5} {who[:24]:<24} {p.title}")
    if not papers:
        click.echo("no match", err=True)


@library.command("export")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    required=True,
    help="Output .bib file ('-' for stdout).",
)
@click.option(
    "--keys", multiple=True, help="Citekeys to export (repeat or comma-separate); default: all."
)
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Export the --keys that exist even when some are not in the library.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["bibtex", "ris", "csl-json"]),
    default="bibtex",
    show_default=True,
)
@click.option("--collection", default=None, help="Export this collection (name, path or id).")
@db_option
@click.pass_context
def export_cmd(ctx, output, keys, allow_missing, fmt, collection, db):
    """Export BibTeX, RIS or CSL-JSON (the whole library, --keys or --collection) with stable citekeys."""
    from assistant.errors import AssistantError
    from assistant.service.library import LibraryManager

    wanted = [k.strip() for group in keys for k in group.split(",") if k.strip()] or None
    lib = open_db(ctx, db)
    try:
        mgr = LibraryManager(lib)
        col = mgr.collection(collection).id if collection else None
        written, missing = mgr.export(
            output, fmt, citekeys=wanted, collection_id=col, allow_missing=allow_missing
        )
    except AssistantError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        lib.close()
    for key in missing:
        click.echo(
            f"{'warning' if allow_missing else 'error'}: no paper with citekey '{key}'", err=True
        )
    if missing and not allow_missing:
        click.echo(
            f"nothing written to {output} (use --allow-missing to export the others)", err=True
        )
        ctx.exit(1)
    click.echo(f"wrote {written} entries to {output}", err=True)


@library.command("remove")
@click.argument("keys", nargs=-1, required=True)
@db_option
@click.pass_context
def remove_cmd(ctx, keys, db):
    """Move papers (by citekey, DOI or id) to the trash (`library trash` lists, restores, empties).

    Every key is looked up first: if one is not in the library nothing is removed (exit 1)."""
    from assistant.service.library import LibraryManager

    lib = open_db(ctx, db)
    try:
        found = [(key, _find(lib, key)) for key in keys]
        unknown = [key for key, paper in found if paper is None]
        for key in unknown:
            click.echo(f"error: no paper '{key}'", err=True)
        if unknown:
            click.echo("nothing removed", err=True)
            ctx.exit(1)
        papers = list({paper.id: paper for _, paper in found}.values())
        LibraryManager(lib).trash([p.id for p in papers])  # one transaction: all or nothing
        for paper in papers:
            click.echo(f"moved to the trash {paper.citekey}: {paper.title}")
        for err in lib.auto_export_errors:
            click.echo(f"warning: auto-export failed: {err}", err=True)
    finally:
        lib.close()


def _find(lib, key: str):
    if key.isdigit():
        return lib.get(int(key))
    return lib.get_by_citekey(key) or lib.get_by_doi(key)
