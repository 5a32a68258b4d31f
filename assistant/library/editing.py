"""Editing papers: validated field edits with a history that can be reverted, the trash, and
citekey pinning/regeneration.

Every change is one transaction and leaves a ``paper_history`` row holding the paper before and
after (all fields), so any edit, trash or key change can be reverted. The imported record texts
(``paper_records``) are never touched. An edit of title/abstract/keywords changes the paper's
content hash, which is what makes the next ``assistant index`` re-embed that paper only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from assistant import faults
from assistant.library import citekeys
from assistant.library.groups import LibraryEditError
from assistant.library.models import Paper
from assistant.library.normalize import (
    clean_text,
    clean_url,
    format_name,
    normalize_doi,
    split_authors,
    split_keywords,
)
from assistant.library.rows import CORE_FIELDS, SNAPSHOT_FIELDS, snapshot

#: BibTeX names accepted for the core fields (``journal``/``booktitle`` edit the venue).
ALIASES = {
    "author": "authors",
    "editor": "editors",
    "journal": "venue",
    "booktitle": "venue",
    "type": "entry_type",
    "key": "citekey",
    "file": "pdf_path",
    "pdf": "pdf_path",
    "eprint": "arxiv_id",
    "keyword": "keywords",
}
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_\-]{0,39}$")


class FieldError(LibraryEditError):
    """A value that cannot be stored in a field (the message names the field and why)."""


@dataclass
class HistoryEntry:
    id: int
    paper_id: int
    changed_at: str
    action: str  # edit | trash | restore | citekey | merge | revert | unmerge
    before: dict
    after: dict

    def changed_fields(self) -> list[str]:
        """The fields this change touched (``extra.NAME`` for a field kept in ``extra``)."""
        return _diff(self.before, self.after)

    def values(self, name: str) -> tuple:
        """``(before, after)`` of one field named as in :meth:`changed_fields`."""
        return _flat(self.before).get(name), _flat(self.after).get(name)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def validate(name: str, value) -> tuple[str, object]:
    """``(field, normalised value)`` for a user-entered ``name = value``; raises :class:`FieldError`.

    Lists (authors, editors, keywords) may be given as lists or as BibTeX text
    (``A and B``, ``k1, k2``). An empty value clears the field."""
    field = ALIASES.get(name.strip().lower(), name.strip().lower())
    text = value if isinstance(value, list) else ("" if value is None else str(value).strip())
    if field in ("authors", "editors"):
        names = text if isinstance(text, list) else split_authors(text)
        return field, [format_name(n) for n in names if n.strip()]
    if field == "keywords":
        return field, split_keywords(text)
    if isinstance(text, list):
        raise FieldError(f"field '{name}' takes one value, not a list")
    if field == "year":
        if not text:
            return field, None
        if not re.fullmatch(r"\d{4}", text) or not 1000 <= int(text) <= 2100:
            raise FieldError(f"year '{text}' is not a year (4 digits, 1000-2100)")
        return field, int(text)
    if field == "doi":
        if not text:
            return field, None
        doi = normalize_doi(text)
        if not doi:
            raise FieldError(f"doi '{text}' is not a DOI (10.NNNN/...)")
        return field, doi
    if field == "url":
        if text and not re.match(r"^(https?|ftp)://\S+$", text):
            raise FieldError(f"url '{text}' is not a web address (http://... or https://...)")
        return field, clean_url(text) if text else None
    if field == "citekey":
        if not citekeys.is_user_key(text):
            raise FieldError(
                f"citekey '{text}' is not a valid key (a letter, then letters, digits or _:.+-)"
            )
        return field, text
    if field == "title":
        if not text:
            raise FieldError("title cannot be empty")
        return field, clean_text(text)
    if field == "entry_type":
        if not re.fullmatch(r"[A-Za-z]+", text or ""):
            raise FieldError(f"entry type '{text}' is not a BibTeX type (article, book, ...)")
        return field, text.lower()
    if field in ("arxiv_id", "pdf_path"):
        return field, text or None
    if field in ("venue", "abstract"):
        return field, clean_text(text)
    if not _FIELD_NAME.match(field):
        raise FieldError(f"'{name}' is not a field name (letters, digits, _ or -)")
    return field, text


def apply_changes(paper: Paper, changes: dict) -> Paper:
    """A copy of ``paper`` with validated ``changes`` applied (nothing is stored)."""
    new = replace(paper, extra=dict(paper.extra))
    for name, value in changes.items():
        field, clean = validate(name, value)
        if field in CORE_FIELDS:
            setattr(new, field, clean)
        elif clean in ("", None):
            new.extra.pop(field, None)
        else:
            new.extra[field] = clean
    return new


def _store(lib, old: Paper, new: Paper, action: str) -> Paper:
    """Write ``new`` over ``old`` and record the history row (inside the caller's transaction)."""
    faults.point("library.store")
    if new.doi and new.doi != old.doi:
        other = lib.conn.execute(
            "SELECT citekey FROM papers WHERE doi = ? AND id != ?", (new.doi, old.id)
        ).fetchone()
        if other:
            raise FieldError(
                f"doi '{new.doi}' is already the DOI of {other[0]} (merge them instead)"
            )
    if new.citekey != old.citekey:
        holder = lib.get_by_citekey(new.citekey, include_trashed=True)
        if holder is not None and holder.id != old.id:
            raise FieldError(f"citekey '{new.citekey}' is already used by paper {holder.id}")
        lib.conn.execute("DELETE FROM citekey_aliases WHERE alias = ?", (new.citekey,))
        lib.conn.execute("UPDATE papers SET citekey = ? WHERE id = ?", (new.citekey, old.id))
        lib.conn.execute(
            "INSERT OR IGNORE INTO citekey_aliases (alias, paper_id, added_at) VALUES (?, ?, ?)",
            (old.citekey, old.id, _now()),
        )
    lib.conn.execute(
        "UPDATE papers SET pinned = ?, deleted_at = ? WHERE id = ?",
        (int(new.pinned), new.deleted_at, old.id),
    )
    now = _now()
    lib._update(new, now)
    lib.conn.execute(
        "INSERT INTO paper_history (paper_id, changed_at, action, before, after) VALUES (?,?,?,?,?)",
        (
            old.id,
            now,
            action,
            json.dumps(snapshot(old), ensure_ascii=False),
            json.dumps(snapshot(new), ensure_ascii=False),
        ),
    )
    lib.mark_changed([old.id])
    return lib.get(old.id)


def _get(lib, paper_id: int) -> Paper:
    paper = lib.get(int(paper_id))
    if paper is None:
        raise LibraryEditError(f"no paper with id {paper_id}")
    return paper


def edit_paper(lib, paper_id: int, changes: dict) -> Paper:
    """Validate and store ``changes`` (field -> value) for one paper; returns the stored paper.

    A new citekey pins it and keeps the old one as an alias (old ``\\cite{}``s still resolve)."""
    with lib.transaction():
        old = _get(lib, paper_id)
        new = apply_changes(old, changes)
        if new.citekey != old.citekey:
            new.pinned = True
        if new == old:
            return old
        return _store(lib, old, new, "edit")


def history(lib, paper_id: int) -> list[HistoryEntry]:
    """The paper's changes, newest first."""
    rows = lib.conn.execute(
        "SELECT id, paper_id, changed_at, action, before, after FROM paper_history "
        "WHERE paper_id = ? ORDER BY id DESC",
        (paper_id,),
    )
    return [HistoryEntry(r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5])) for r in rows]


def _flat(snap: dict) -> dict:
    """A snapshot with each ``extra`` field as its own ``extra.NAME`` entry (field-level diffs)."""
    out = {k: snap.get(k) for k in SNAPSHOT_FIELDS if k != "extra"}
    out.update({f"extra.{k}": v for k, v in (snap.get("extra") or {}).items()})
    return out


def _diff(before: dict, after: dict) -> list[str]:
    a, b = _flat(before), _flat(after)
    return [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]


def _apply(paper: Paper, values: dict) -> Paper:
    new = replace(paper, extra=dict(paper.extra))
    for name, value in values.items():
        if name.startswith("extra."):
            if value is None:
                new.extra.pop(name[6:], None)
            else:
                new.extra[name[6:]] = value
        else:
            setattr(new, name, value)
    return new


class RevertConflict(LibraryEditError):
    """A change cannot be undone alone: a later change touched the same fields."""


def revert(lib, history_id: int) -> Paper:
    """Undo exactly change ``history_id``: only the fields it changed go back, and only when no
    later change touched them (else :class:`RevertConflict` names the later changes). Reverting
    a merge brings the merged-away papers back. The undo is recorded as a new change."""
    with lib.transaction():
        row = lib.conn.execute(
            "SELECT paper_id, action, before, after FROM paper_history WHERE id = ?", (history_id,)
        ).fetchone()
        if row is None:
            raise LibraryEditError(f"no change #{history_id} in the edit history")
        paper_id, action, before, after = row[0], row[1], json.loads(row[2]), json.loads(row[3])
        if action == "unmerge":
            raise LibraryEditError(
                f"change #{history_id} undid a merge; merge the papers again instead"
            )
        old = _get(lib, paper_id)
        fields = _diff(before, after)
        now, was, then = _flat(snapshot(old)), _flat(before), _flat(after)
        conflicts = [f for f in fields if now.get(f) != then.get(f)]
        if action == "merge":
            return _unmerge(lib, history_id, old, before, fields, conflicts, was)
        if fields and all(now.get(f) == was.get(f) for f in fields):
            raise LibraryEditError(f"change #{history_id} is already undone")
        if conflicts:
            _raise_conflict(lib, history_id, paper_id, conflicts)
        new = _apply(old, {f: was.get(f) for f in fields})
        return _store(lib, old, new, "revert")


def _raise_conflict(lib, history_id: int, paper_id: int, conflicts: list[str]) -> None:
    later = [
        f"#{h.id} ({h.action})"
        for h in history(lib, paper_id)
        if h.id > history_id and set(_diff(h.before, h.after)) & set(conflicts)
    ]
    raise RevertConflict(
        f"cannot revert change #{history_id}: {', '.join(conflicts)} changed again since"
        + (f" by {', '.join(reversed(later))}" if later else "")
        + "; revert those first"
    )


def _unmerge(lib, history_id, kept, before, fields, conflicts, was) -> Paper:
    from assistant.library.duplicates import restore_absorbed

    undo = before.get("unmerge")
    if undo is None:
        raise LibraryEditError(
            f"merge #{history_id} was recorded by an older version and cannot be undone; "
            "the merged papers' fields are in `library show --json`"
        )
    if any(lib.get(u["row"]["id"]) is not None for u in undo):
        raise LibraryEditError(f"merge #{history_id} is already undone")
    if conflicts:
        _raise_conflict(lib, history_id, kept.id, conflicts)
    new = _apply(kept, {f: was.get(f) for f in fields})
    stored = _store(lib, kept, new, "unmerge")
    for item in undo:
        restore_absorbed(lib, kept.id, item)
    return stored


# -- trash -------------------------------------------------------------------------------------
def trash(lib, paper_ids) -> int:
    """Move papers to the trash (hidden from search, export and recommendations; restorable)."""
    n = 0
    with lib.transaction():
        for pid in paper_ids:
            old = _get(lib, pid)
            if old.deleted_at is None:
                _store(lib, old, replace(old, deleted_at=_now()), "trash")
                n += 1
    return n


def restore(lib, paper_ids) -> int:
    """Take papers out of the trash."""
    n = 0
    with lib.transaction():
        for pid in paper_ids:
            old = _get(lib, pid)
            if old.deleted_at is not None:
                _store(lib, old, replace(old, deleted_at=None), "restore")
                n += 1
    return n


def trashed(lib) -> list[Paper]:
    """The papers in the trash, most recently deleted first."""
    ids = [
        r[0]
        for r in lib.conn.execute(
            "SELECT id FROM papers WHERE deleted_at IS NOT NULL ORDER BY deleted_at DESC, id DESC"
        )
    ]
    return lib.get_many(ids)


def empty_trash(lib, *, confirmed: bool) -> int:
    """Delete the papers in the trash for good (records, edges, history included).

    ``confirmed`` must be True: the faces ask the user first; nothing is destroyed otherwise."""
    if not confirmed:
        raise LibraryEditError("emptying the trash deletes papers for good: confirm first")
    with lib.transaction():
        ids = [r[0] for r in lib.conn.execute("SELECT id FROM papers WHERE deleted_at IS NOT NULL")]
        for pid in ids:
            lib.conn.execute("DELETE FROM paper_history WHERE paper_id = ?", (pid,))
            lib.conn.execute("DELETE FROM citekey_aliases WHERE paper_id = ?", (pid,))
            lib.conn.execute("DELETE FROM collection_items WHERE paper_id = ?", (pid,))
            lib.conn.execute("DELETE FROM paper_tags WHERE paper_id = ?", (pid,))
            lib.remove(pid)
    return len(ids)


# -- citekeys ----------------------------------------------------------------------------------
def set_pinned(lib, paper_id: int, pinned: bool = True) -> Paper:
    with lib.transaction():
        old = _get(lib, paper_id)
        if old.pinned == pinned:
            return old
        return _store(lib, old, replace(old, pinned=pinned), "citekey")


def regenerate_citekeys(lib, paper_ids=None, pattern: str | None = None) -> list[tuple[str, str]]:
    """Give papers (default: all) the key their pattern asks for; pinned keys never change.
    The old keys stay as aliases. Returns ``(old, new)`` for each key that changed."""
    pattern = pattern or lib.citekey_pattern()
    citekeys.check_pattern(pattern)
    ids = (
        list(paper_ids)
        if paper_ids is not None
        else [r[0] for r in lib.conn.execute("SELECT id FROM papers WHERE pinned = 0 ORDER BY id")]
    )
    changed = []
    with lib.transaction():
        for pid in ids:
            old = _get(lib, pid)
            if old.pinned:
                continue
            base = citekeys.key_for(old, pattern)
            if re.fullmatch(re.escape(base) + r"[a-z]{0,2}", old.citekey or ""):
                continue  # already of this pattern
            key = citekeys.unique_key(base, lib._citekey_taken)
            _store(lib, old, replace(old, citekey=key), "citekey")
            changed.append((old.citekey, key))
    return changed


def set_citekey_pattern(lib, pattern: str | None) -> None:
    """Set (None: reset) the library's citekey pattern; existing keys change only on regenerate."""
    if pattern:
        citekeys.check_pattern(pattern)
    lib.set_meta("citekey_pattern", pattern or None)
