"""The language server's key list follows the library when another program (the GUI, the CLI)
trashes, renames or merges papers, on the bundled sample library.

Timestamps are stored to the second, so a change within the second of the last one left
``max(updated_at)`` where it was: the key list must notice changes by the library's change
counter, not by clocks (the test holds the clock still to make that second deterministic)."""

from __future__ import annotations

import pytest
from retrieval_helpers import SAMPLE_BIB, SAMPLE_MANUSCRIPT, make_library

from assistant.library import duplicates, editing
from assistant.lsp.backend import Backend

TRASHED = "joachims2017unbiased"
MERGED = ("chapelle2009dynamic", "guo2009click")  # the second is merged into the first


@pytest.fixture()
def gui_and_server(tmp_path, monkeypatch):
    """The GUI's connection to a copy of the sample library and the server's backend on it;
    the clock stands at the library's last change (everything below happens in that second)."""
    db = tmp_path / "library.sqlite"
    lib = make_library(db, SAMPLE_BIB)
    last = max(p.updated_at for p in lib.iter_papers(with_record=False))
    monkeypatch.setattr(editing, "_now", lambda: last)
    monkeypatch.setattr(duplicates, "_now", lambda: last)
    backend = Backend(db)
    yield lib, backend
    lib.close()


def _keys(backend: Backend) -> tuple[set[str], dict[str, str]]:
    found = backend.keys()
    return {e.key for e in found.entries}, found.aliases


def test_a_paper_trashed_in_the_gui_leaves_the_key_list(gui_and_server):
    lib, backend = gui_and_server
    keys, _ = _keys(backend)
    assert TRASHED in keys and len(keys) == lib.count()
    assert not backend.library_changed()
    editing.trash(lib, [lib.get_by_citekey(TRASHED).id])
    assert backend.library_changed()
    keys, _ = _keys(backend)
    assert TRASHED not in keys and len(keys) == lib.count()
    assert backend.paper(TRASHED) is None  # hover / diagnostics: not a library paper any more
    editing.restore(lib, [lib.get_by_citekey(TRASHED, include_trashed=True).id])
    assert backend.library_changed() and TRASHED in _keys(backend)[0]


def test_a_renamed_key_is_offered_and_the_old_one_resolves(gui_and_server):
    lib, backend = gui_and_server
    _keys(backend)
    paper = lib.get_by_citekey(SAMPLE_MANUSCRIPT)
    editing.edit_paper(lib, paper.id, {"citekey": "ai2018renamed"})
    assert backend.library_changed()
    keys, aliases = _keys(backend)
    assert "ai2018renamed" in keys and SAMPLE_MANUSCRIPT not in keys
    assert aliases[SAMPLE_MANUSCRIPT] == "ai2018renamed"
    assert backend.paper(SAMPLE_MANUSCRIPT).key == "ai2018renamed"


def test_a_merged_record_s_key_becomes_an_alias(gui_and_server):
    lib, backend = gui_and_server
    keep, gone = (lib.get_by_citekey(k) for k in MERGED)
    _keys(backend)
    duplicates.merge(lib, keep.id, [gone.id])
    assert backend.library_changed()
    keys, aliases = _keys(backend)
    assert gone.citekey not in keys and aliases[gone.citekey] == keep.citekey
    assert backend.paper(gone.citekey).key == keep.citekey


def test_writes_that_change_no_paper_do_not_reload_the_keys(gui_and_server):
    lib, backend = gui_and_server
    _keys(backend)
    lib.set_meta("citekey_pattern", "[auth][year]")  # a setting, not a paper
    assert not backend.library_changed()
