"""Issue 29: a library file or a manuscript folder from someone else cannot make Cite-Assist
overwrite the user's files, run code, or corrupt the library."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.cli import main
from assistant.errors import AssistantError
from assistant.library.export import render
from assistant.library.models import Paper
from assistant.library.store import Library

BASHRC = "# the user's shell start-up\nexport PATH=$HOME/bin:$PATH\n"
EVIL_NOTE = "x\n touch PWNED \ny"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A temporary HOME holding a ``.bashrc`` (the file an attacker aims at)."""
    home = tmp_path / "victim-home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    monkeypatch.setenv("HOME", str(home))
    return home


def _received_library(folder: Path, targets: list[str]) -> Path:
    """A library as an attacker writes it: a paper with a newline-laden note, and
    ``auto_exports`` rows planted with plain SQL."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "received.sqlite"
    lib = Library(db)
    lib.add_paper(
        Paper(title="Planted paper", authors=["Mallory, M."], year=2020, extra={"note": EVIL_NOTE})
    )
    with lib.transaction():
        for target in targets:
            lib.conn.execute(
                "INSERT INTO auto_exports (path, collection_id, format, last_written_at) "
                "VALUES (?, NULL, 'bibtex', NULL)",
                (target,),
            )
    lib.close()
    return db


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_issue29_1_planted_bashrc_auto_export_is_inert(home, tmp_path):
    bashrc = home / ".bashrc"
    before = _sha(bashrc)
    other = tmp_path / "docs" / "out.bib"
    other.parent.mkdir()
    db = _received_library(tmp_path / "downloads", [str(bashrc), str(other)])
    mine = tmp_path / "mine.bib"
    mine.write_text("@article{mine, title={My own paper}, author={Doe, Jane}, year={2021}}\n")

    code, out = _cli("--db", str(db), "library", "import", "-q", str(mine))
    assert code == 0, out
    assert _sha(bashrc) == before
    assert not other.exists()  # a planted target elsewhere is inert too
    assert not (Path.cwd() / "PWNED").exists() and not (home / "PWNED").exists()

    code, out = _cli("--db", str(db), "library", "auto-export", "--list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "not confirmed on this machine" in lines[str(bashrc)]
    assert "not confirmed on this machine" in lines[str(other)]

    # a dotfile can never be confirmed; another target can, and is written from then on
    code, out = _cli("--db", str(db), "library", "auto-export", "--confirm", str(bashrc))
    assert code != 0 and "dotfile" in out
    code, out = _cli("--db", str(db), "library", "auto-export", "--confirm", str(other))
    assert code == 0, out
    _cli("--db", str(db), "library", "import", "-q", str(mine))
    mine.write_text("@article{mine2, title={Second paper}, author={Doe, Jane}, year={2022}}\n")
    code, out = _cli("--db", str(db), "library", "import", "-q", str(mine))
    assert code == 0, out
    text = other.read_text()
    assert "Second paper" in text and "Planted paper" in text
    assert _sha(bashrc) == before
    # no line of the export starts outside a field
    for line in text.splitlines():
        assert not line.strip() or line.startswith(("@", "  ", "}")), line


def test_issue29_2_new_registration_refuses_dotfiles_system_and_missing_folders(home, tmp_path):
    from assistant.library.autoexport import add_auto_export

    lib = Library(tmp_path / "lib.sqlite")
    lib.add_paper(Paper(title="A paper", authors=["Doe, J."], year=2020))
    (home / ".config").mkdir()
    for target, reason in [
        (home / ".bashrc", "dotfile"),
        (home / ".config" / "x.bib", "hidden folder"),
        (Path("/etc/cite-assist-test.bib"), "system folder"),
        (tmp_path / "nowhere" / "x.bib", "folder does not exist"),
    ]:
        with pytest.raises(AssistantError, match=reason):
            add_auto_export(lib, target)
    assert (home / ".bashrc").read_text() == BASHRC
    entry = add_auto_export(lib, tmp_path / "ok.bib")  # made here: confirmed at once
    assert entry.path == str((tmp_path / "ok.bib").resolve())
    lib.close()
    code, out = _cli("--db", str(tmp_path / "lib.sqlite"), "library", "auto-export", "--list")
    assert code == 0 and "ok.bib" in out and "not confirmed" not in out


def test_issue29_2_bak_symlink_is_not_written_through(home, tmp_path):
    from assistant.library.bibfile import append_entry

    bashrc = home / ".bashrc"
    before = _sha(bashrc)
    project = tmp_path / "cloned-manuscript"
    project.mkdir()
    bib = project / "refs.bib"
    bib.write_text("@article{old, title={Old entry}, author={A, B}, year={2019}}\n")
    (project / "refs.bib.bak").symlink_to(bashrc)
    entry = "@article{new, title={New entry}, author={C, D}, year={2020}}\n"
    with pytest.raises(AssistantError, match="symbolic link"):  # a backup asked for
        append_entry(bib, entry, backup=True)
    assert _sha(bashrc) == before
    assert (project / "refs.bib.bak").is_symlink()
    assert "new" not in bib.read_text()  # refused before anything was written
    append_entry(bib, entry)  # the default writes no backup: the link is never touched
    assert _sha(bashrc) == before and (project / "refs.bib.bak").is_symlink()
    assert "@article{new" in bib.read_text()


def test_issue29_2_bib_that_is_a_symlink_is_not_written_through(home, tmp_path):
    from assistant.library.bibfile import append_entry

    bashrc = home / ".bashrc"
    bib = tmp_path / "refs.bib"
    bib.symlink_to(bashrc)
    with pytest.raises(AssistantError, match="symbolic link"):
        append_entry(bib, "@article{new, title={New}, author={C, D}, year={2020}}\n")
    assert bashrc.read_text() == BASHRC
    assert not (tmp_path / "refs.bib.bak").exists()


_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1])
    conn.execute("PRAGMA journal_mode").fetchone()
    conn.execute("SELECT count(*) FROM papers").fetchone()
    print("open", flush=True)
    sys.stdin.readline()
    n = conn.execute("SELECT count(*) FROM papers").fetchone()[0]
    print(n, conn.execute("PRAGMA integrity_check").fetchone()[0], flush=True)
    """
)


def test_issue29_3_auto_export_onto_the_library_files_with_a_second_program_open(tmp_path):
    from assistant.library.autoexport import add_auto_export

    db = tmp_path / "lib.sqlite"
    lib = Library(db)
    for i in range(5):
        lib.add_paper(Paper(title=f"Paper {i}", authors=["Doe, J."], year=2020))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        own = [f"{db}-wal", f"{db}-shm", f"{db}-journal", str(db), f"{db}.index/meta.json"]
        for target in own:
            with pytest.raises(AssistantError):
                add_auto_export(lib, target)
        # planted rows, even "confirmed" in the store by hand, are never written
        with lib.transaction():
            for target in own:
                lib.conn.execute(
                    "INSERT OR IGNORE INTO auto_exports (path, collection_id, format) "
                    "VALUES (?, NULL, 'bibtex')",
                    (target,),
                )
        from assistant.library import export_trust

        store = export_trust.store_path()
        store.write_text(json.dumps({"libraries": {os.path.realpath(db): own}}))
        for i in range(5, 10):
            lib.add_paper(Paper(title=f"Paper {i}", authors=["Doe, J."], year=2021))
        assert any("-wal" in e for e in lib.auto_export_errors)
        lib.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        out, _ = holder.communicate("go\n", timeout=30)
    finally:
        holder.kill()
    assert out.split() == ["10", "ok"]
    assert lib.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    lib.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM papers").fetchone()[0] == 10
    conn.close()


def test_issue29_1_export_refuses_links_and_special_files_at_the_target(tmp_path):
    from assistant.library.export import export_bibtex

    lib = Library(tmp_path / "lib.sqlite")
    lib.add_paper(Paper(title="A paper", authors=["Doe, J."], year=2020))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "link.bib"
    link.symlink_to(victim)
    fifo = tmp_path / "fifo.bib"
    os.mkfifo(fifo)
    for target, reason in [(link, "symbolic link"), (fifo, "FIFO"), (tmp_path, "folder")]:
        with pytest.raises(AssistantError, match=reason):
            export_bibtex(lib, target)
    for suffix in ("-wal", "-shm", "-journal"):
        with pytest.raises(AssistantError, match="library"):
            export_bibtex(lib, f"{lib.path}{suffix}")
    assert victim.read_text() == "precious\n"
    lib.close()


# -- 3. writers: no line starts outside a field; the output parses back to the same records ----

_TEXT = st.text(
    # line breaks of every kind among BibTeX's special characters (the RIS importer reads
    # braces, backslashes, "$" and "~" as LaTeX: not a line-structure matter, left out)
    alphabet=st.sampled_from(list("abcXYZ019 ,.:;-'\"()[]%&#_@=\n\r\t\x0b\x0c\x85\u2028\u00e9")),
    min_size=1,
    max_size=30,
).filter(lambda s: s.split())


def _norm(value) -> str:
    return " ".join(str(value).split())


def _name(name: str) -> str:
    return ", ".join(_norm(part) for part in name.split(",", 1))


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(title=_TEXT, note=_TEXT, abstract=_TEXT, author=_TEXT)
def test_issue29_3_writers_keep_every_value_inside_its_field(
    tmp_path, title, note, abstract, author
):
    from assistant.library.importers import parse_file

    paper = Paper(
        title=title,
        authors=[f"X{author.replace(',', '')}, Ann"],  # line breaks kept: they must not escape
        year=2020,
        abstract=abstract,
        extra={"note": note},
        citekey="key1",
    )
    bib = render([paper], "bibtex")
    for line in bib.splitlines():
        assert not line.strip() or line.startswith(("@", "  ", "}")), repr(line)
    ris = render([paper], "ris")
    for line in ris.splitlines():
        assert not line or (line[:2].isalnum() and line[2:6] == "  - "), repr(line)
    csl = render([paper], "csl-json")
    assert all(ch not in csl for ch in "\r\x0b\x0c")
    for fmt, ext, text in [("bibtex", "bib", bib), ("ris", "ris", ris), ("csljson", "json", csl)]:
        path = Path(tempfile.mkdtemp(prefix=fmt, dir=tmp_path)) / f"out.{ext}"
        path.write_text(text, encoding="utf-8")
        parsed = parse_file((str(path), fmt))
        assert [r.paper.citekey for r in parsed.records] == ["key1"], (fmt, parsed.issues)
        back = parsed.records[0].paper
        assert _norm(back.title) == _norm(title), fmt
        assert _norm(back.abstract) == _norm(abstract), fmt
        assert _norm(back.extra.get("note", "")) == _norm(note), fmt
        assert [_name(a) for a in back.authors] == [_name(a) for a in paper.authors], fmt


def test_issue29_2_gui_asks_before_keeping_a_received_target_in_sync(qtbot, home, tmp_path):
    from assistant.gui.library_panel import LibraryPanel
    from assistant.library.autoexport import list_auto_exports

    out = tmp_path / "docs" / "sync.bib"
    out.parent.mkdir()
    db = _received_library(tmp_path / "downloads", [str(home / ".bashrc"), str(out)])
    asked: list[str] = []

    class Panel(LibraryPanel):
        def _confirm(self, title, text):
            asked.append(text)
            return True  # the user says yes to everything: a dotfile is not even asked about

    panel = Panel()
    qtbot.addWidget(panel)
    panel.set_library_path(db)
    assert len(asked) == 1 and str(out) in asked[0]
    state = {e.path: e.confirmed for e in list_auto_exports(panel.library)}
    assert state == {str(home / ".bashrc"): False, str(out): True}
    panel.close_library()
    assert (home / ".bashrc").read_text() == BASHRC
