"""``assistant library edit|show|history|revert|trash|duplicates|collections|auto-export|attach|citekeys``.

Registered on the ``library`` group (:mod:`assistant.cli.library_group`); every command is a
thin layer over :class:`assistant.service.library.LibraryManager`.
"""

from __future__ import annotations

import functools
import json
import sys

import click

from assistant.cli.library_group import db_option, library, open_db
from assistant.errors import AssistantError


def _manager(ctx, db):
    from assistant.service.library import LibraryManager

    return LibraryManager(open_db(ctx, db))


def user_errors(func):
    """An :class:`AssistantError` ends the command with ``Error: <message>`` (exit 1)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except AssistantError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper


def _closing(func):
    """Open the manager from ``ctx``/``db`` and close the library afterwards."""

    @functools.wraps(func)
    @click.pass_context
    @user_errors
    def wrapper(ctx, *args, db=None, **kwargs):
        mgr = _manager(ctx, db or ctx.meta.get("library_db"))
        try:
            result = func(ctx, mgr, *args, **kwargs)
        finally:
            mgr.lib.close()
        for err in mgr.lib.auto_export_errors:
            click.echo(f"warning: auto-export failed: {err}", err=True)
        return result

    return db_option(wrapper)


def _line(p) -> str:
    who = p.authors[0].split(",")[0] if p.authors else ""
    who += " et al." if len(p.authors) > 1 else ""
    return f"{p.citekey:<28} {p.year or '':<5} {who[:24]:<24} {p.title}"


def _paper_json(p) -> dict:
    return {
        k: v for k, v in p.__dict__.items() if k not in ("original_text", "tags", "collections")
    }


@library.command("edit")
@click.argument("key")
@click.option(
    "--set", "sets", multiple=True, metavar="FIELD=VALUE", help="Repeatable; empty value clears."
)
@click.option("--pin/--unpin", default=None, help="Pin the citekey (never regenerated).")
@_closing
def edit_cmd(ctx, mgr, key, sets, pin):
    """Edit fields of a paper (by citekey, DOI or id): --set year=2020 --set 'author=A and B'."""
    paper = mgr.find(key)
    changes = {}
    for item in sets:
        if "=" not in item:
            raise click.BadParameter(f"'{item}' is not FIELD=VALUE", param_hint="--set")
        name, value = item.split("=", 1)
        changes[name.strip()] = value
    if not changes and pin is None:
        raise click.UsageError("nothing to change: give --set FIELD=VALUE or --pin/--unpin")
    new = mgr.edit(paper.id, changes) if changes else paper
    if pin is not None:
        new = mgr.set_pinned(paper.id, pin)
    click.echo(f"{new.citekey}: saved ({', '.join(changes) or 'pin'})")


@library.command("show")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True)
@_closing
def show_cmd(ctx, mgr, key, as_json):
    """Show one paper (by citekey, alias, DOI or id): fields, records, collections, history."""
    d = mgr.details(mgr.find(key).id)
    data = {
        **_paper_json(d.paper),
        "aliases": d.aliases,
        "tags": d.tags,
        "collections": [c.path for c in d.collections],
    }
    if as_json:
        data["records"] = d.records
        data["history"] = [h.__dict__ for h in d.history]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    for rec in d.records:
        click.echo(f"--- {rec['format']} record from {rec['source_file']}:{rec['line']}")
        click.echo(rec["text"])
    for h in d.history:
        click.echo(f"--- change #{h.id} {h.changed_at} {h.action}: {', '.join(h.changed_fields())}")


@library.command("history")
@click.argument("key")
@_closing
def history_cmd(ctx, mgr, key):
    """The edit history of a paper (newest first); revert with `library revert ID`."""
    for h in mgr.history(mgr.find(key).id):
        changed = h.changed_fields()
        click.echo(f"#{h.id:<6} {h.changed_at} {h.action:<8} {', '.join(changed)}")
        for name in changed:
            if name not in ("abstract",):
                old, new = h.values(name)
                click.echo(f"         {name}: {old!r} -> {new!r}")


@library.command("revert")
@click.argument("change_id", type=int)
@_closing
def revert_cmd(ctx, mgr, change_id):
    """Put a paper back as it was before change CHANGE_ID (see `library history`)."""
    p = mgr.revert(change_id)
    click.echo(f"{p.citekey}: reverted change #{change_id}")


@library.group("trash", invoke_without_command=True)
@db_option
@click.pass_context
def trash_group(ctx, db):
    """The trash: list (default), restore KEY..., empty [--yes]. `library remove` moves papers here."""
    ctx.meta["library_db"] = db
    if ctx.invoked_subcommand is None:
        ctx.invoke(trash_list)


@trash_group.command("list")
@_closing
def trash_list(ctx, mgr):
    """Papers in the trash, most recently deleted first."""
    papers = mgr.trashed()
    for p in papers:
        click.echo(f"{p.deleted_at}  {_line(p)}")
    click.echo(f"{len(papers)} paper(s) in the trash", err=True)


@trash_group.command("restore")
@click.argument("keys", nargs=-1, required=True)
@_closing
def trash_restore(ctx, mgr, keys):
    """Take papers out of the trash."""
    papers = [mgr.find(k) for k in keys]
    n = mgr.restore([p.id for p in papers])
    click.echo(f"restored {n} paper(s)")


@trash_group.command("empty")
@click.option("--yes", is_flag=True, help="Do not ask (papers are deleted for good).")
@_closing
def trash_empty(ctx, mgr, yes):
    """Delete the papers in the trash for good (asks first)."""
    n = len(mgr.trashed())
    if n == 0:
        click.echo("the trash is empty")
        return
    if not yes and not click.confirm(f"Delete {n} paper(s) for good?", default=False):
        click.echo("nothing deleted", err=True)
        ctx.exit(1)
    click.echo(f"deleted {mgr.empty_trash(confirmed=True)} paper(s) for good")


def _show_group(mgr, g, papers) -> None:
    from assistant.service.library import differences

    click.echo(f"--- {g.reason} ({g.score:.0f}):")
    for p in papers:
        click.echo(f"  [{p.doi or 'no DOI'}] " + _line(p))
    for why in g.evidence:
        click.echo(f"    evidence: {why}")
    for diff in differences(papers):
        click.echo(f"    differs: {diff}")


def _group_json(mgr, g) -> dict:
    papers = mgr.lib.get_many(g.ids)
    return {
        "reason": g.reason,
        "score": g.score,
        "evidence": g.evidence,
        "citekeys": [p.citekey for p in papers],
        "dois": [p.doi for p in papers],
        "titles": [p.title for p in papers],
    }


def _merge_reviewed(mgr, path) -> tuple[int, int]:
    """Merge the groups of a reviewed list (the ``--json`` output, edited): the first citekey of
    each group is kept. Every key is looked up before anything is merged."""
    try:
        with open(path, encoding="utf-8") as f:
            groups = json.load(f)
        plan = [[mgr.find(str(k)) for k in g["citekeys"]] for g in groups]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise click.ClickException(
            f"{path}: not a reviewed duplicates list ({exc}); write one with "
            "`library duplicates --json > FILE`, delete the groups that are not duplicates"
        ) from None
    merged = 0
    for papers in plan:
        if len({p.id for p in papers}) < 2:
            continue
        mgr.merge(papers[0].id, [p.id for p in papers[1:]])
        merged += len(papers) - 1
        click.echo(f"merged {', '.join(p.citekey for p in papers[1:])} into {papers[0].citekey}")
    return len(plan), merged


@library.command("duplicates")
@click.option("--merge", "do_merge", is_flag=True, help="Merge groups, asking for each one.")
@click.option("--yes", is_flag=True, help="With --merge: merge every group without asking.")
@click.option(
    "--merge-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Merge the groups of a reviewed list (the --json output, with non-duplicates deleted).",
)
@click.option("--keep", default=None, help="With KEY...: the paper to keep when merging these.")
@click.argument("keys", nargs=-1)
@click.option("--threshold", type=float, default=None, help="Title similarity 0-100 (default 92).")
@click.option("--json", "as_json", is_flag=True)
@_closing
def duplicates_cmd(ctx, mgr, do_merge, yes, merge_file, keep, keys, threshold, as_json):
    """List groups of likely duplicates (similar title, same year and first author; never two
    different DOIs) with their evidence. Merge: `--merge` asks per group (`--yes`: all),
    `--merge-file REVIEWED.json`, or `--keep KEY KEY2 KEY3`. Old keys stay as aliases; `library
    revert` of the merge change un-merges."""
    if keys or keep:
        if not keep or not keys:
            raise click.UsageError("give --keep KEY and the keys to merge into it")
        kept = mgr.find(keep)
        others = [mgr.find(k).id for k in keys]
        p = mgr.merge(kept.id, others)
        click.echo(f"merged {len(others)} paper(s) into {p.citekey}")
        return
    if merge_file:
        n, merged = _merge_reviewed(mgr, merge_file)
        click.echo(f"{n} reviewed group(s), {merged} paper(s) merged", err=True)
        return
    groups = mgr.duplicates(threshold) if threshold is not None else mgr.duplicates()
    if as_json and not do_merge:
        click.echo(json.dumps([_group_json(mgr, g) for g in groups], indent=2, ensure_ascii=False))
        return
    if do_merge and not yes and not sys.stdin.isatty():
        raise click.UsageError(
            "--merge asks before each group: answer on a terminal, give --yes, or review "
            "`--json` output and pass it with --merge-file"
        )
    merged = 0
    for g in groups:
        papers = mgr.lib.get_many(g.ids)
        _show_group(mgr, g, papers)
        if do_merge and (yes or click.confirm(f"Merge into {papers[0].citekey}?", default=False)):
            mgr.merge(g.ids[0], g.ids[1:])
            merged += len(g.ids) - 1
            click.echo(
                f"merged {', '.join(p.citekey for p in papers[1:])} into {papers[0].citekey}"
            )
    click.echo(
        f"{len(groups)} group(s)" + (f", {merged} paper(s) merged" if do_merge else ""), err=True
    )


@library.command("collections")
@click.option("--create", "create", metavar="NAME", help="Create a collection.")
@click.option("--parent", default=None, help="With --create: parent collection.")
@click.option("--add", "add", metavar="COLLECTION", help="Add the KEYS to this collection.")
@click.option("--remove", "remove", metavar="COLLECTION", help="Take the KEYS out of it.")
@click.option("--delete", "delete", metavar="COLLECTION", help="Delete it (papers stay).")
@click.option("--show", "show", metavar="COLLECTION", help="List its papers.")
@click.argument("keys", nargs=-1)
@_closing
def collections_cmd(ctx, mgr, create, parent, add, remove, delete, show, keys):
    """List collections (default), or create/add/remove/delete/show."""
    if create:
        pid = mgr.collection(parent).id if parent else None
        click.echo(f"created collection {mgr.create_collection(create, pid)}: {create}")
    elif add or remove:
        col = mgr.collection(add or remove)
        ids = [mgr.find(k).id for k in keys]
        if not ids:
            raise click.UsageError("give the citekeys to add or remove")
        n = mgr.add_to_collection(col.id, ids) if add else mgr.remove_from_collection(col.id, ids)
        click.echo(
            f"{'added' if add else 'removed'} {n} paper(s) {'to' if add else 'from'} {col.path}"
        )
    elif delete:
        col = mgr.collection(delete)
        mgr.delete_collection(col.id)
        click.echo(f"deleted collection {col.path} (its papers stay in the library)")
    elif show:
        col = mgr.collection(show)
        for p in mgr.lib.get_many(mgr.collection_paper_ids([col.id])):
            click.echo(_line(p))
    else:
        for c in mgr.collections():
            click.echo(f"{c.id:>5}  {c.count:>6}  {c.source:<6}  {c.path}")


@library.command("auto-export")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--collection", default=None, help="Keep only this collection in the file.")
@click.option("--format", "fmt", type=click.Choice(["bibtex", "ris", "csl-json"]), default="bibtex")
@click.option("--remove", is_flag=True, help="Stop keeping PATH in sync.")
@click.option("--list", "list_", is_flag=True, help="List the targets (the default without PATH).")
@click.option(
    "--confirm",
    is_flag=True,
    help="Confirm PATH, a target of a library from elsewhere, on this machine (without PATH: "
    "ask about each unconfirmed target).",
)
@_closing
def auto_export_cmd(ctx, mgr, path, collection, fmt, remove, list_, confirm):
    """Keep PATH in sync with the library (or a collection) after every change; list without PATH.

    A library file from elsewhere may name targets: they are written only once confirmed here."""
    if confirm:
        targets = [path] if path else [e.path for e in mgr.unconfirmed_auto_exports(True)]
        if not targets:
            click.echo("every auto-export target of this library is confirmed on this machine")
        for target in targets:
            if path or click.confirm(f"keep {target} in sync with this library?", default=False):
                entry = mgr.confirm_auto_export(target)
                click.echo(f"confirmed: {entry.path} is written after every change")
        return
    if path is None or list_:
        for e in mgr.auto_exports():
            where = mgr.collection(e.collection_id).path if e.collection_id else "whole library"
            state = "" if e.confirmed else "  not confirmed on this machine (not written)"
            click.echo(f"{e.path}  [{e.format}, {where}]  last written {e.last_written_at}{state}")
        return
    if remove:
        click.echo(
            f"{'stopped' if mgr.remove_auto_export(path) else 'was not'} keeping {path} in sync"
        )
        return
    col = mgr.collection(collection).id if collection else None
    entry = mgr.add_auto_export(path, col, fmt)
    click.echo(f"{entry.path} is written now and after every change")


@library.command("attach")
@click.argument("folder", type=click.Path(file_okay=False))
@_closing
def attach_cmd(ctx, mgr, folder):
    """Attach the PDFs of FOLDER to existing papers (by file name = citekey, DOI or title)."""
    report = mgr.attach_folder(folder)
    for key, path in report.attached:
        click.echo(f"attached {path} -> {key}")
    for path in report.unmatched:
        click.echo(f"no paper for {path}", err=True)
    for issue in report.issues:
        click.echo(f"warning: {issue}", err=True)
    click.echo(
        f"{len(report.attached)} attached, {len(report.already)} already, "
        f"{len(report.unmatched)} unmatched, {len(report.issues)} unreadable",
        err=True,
    )


@library.command("citekeys")
@click.option(
    "--pattern", default=None, help="Set the pattern, e.g. '[auth:lower][year][shorttitle:1]'."
)
@click.option("--reset", is_flag=True, help="Back to the default pattern.")
@click.option("--regenerate", is_flag=True, help="Give KEYS (default: all unpinned) new keys.")
@click.argument("keys", nargs=-1)
@_closing
def citekeys_cmd(ctx, mgr, pattern, reset, regenerate, keys):
    """Show or set the citekey pattern; regenerate keys (pinned keys never change; old keys stay
    as aliases)."""
    if pattern or reset:
        mgr.set_citekey_pattern(None if reset else pattern)
    click.echo(f"pattern: {mgr.citekey_pattern()}")
    if regenerate:
        ids = [mgr.find(k).id for k in keys] if keys else None
        changed = mgr.regenerate_citekeys(ids)
        for old, new in changed:
            click.echo(f"{old} -> {new}")
        click.echo(f"{len(changed)} key(s) changed", err=True)
