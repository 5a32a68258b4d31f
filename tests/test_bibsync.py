"""Issue 31: the ``.bib`` contract after Save (one implementation: library.bibsync).

Unit tests on the planner, and the bundled LaTeX and Markdown samples through the real window:
open, insert two, undo one, save -> the .bib resolves every citation of the draft (checked by
parsing it against the draft's keys, and with the real ``bibtex`` when it is installed).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from assistant.documents import textops
from assistant.library.bibfile import read_bib
from assistant.library.bibsync import cited_keys, plan_sync, sync_bib
from assistant.textfile import TextFormat

USER_BIB = """% my own bibliography -- keep this comment
@book{knuth1984,
  author    = {Donald E. Knuth},
  title     = {The {\\TeX}book},
  year      = 1984,
}

@misc{uncited_mine,   title = {Something I keep},   year = {2001} }
"""
APP_A = "@article{alpha2020,\n  title = {Alpha},\n  year = {2020},\n}\n"
APP_B = "@article{beta2021,\n  title = {Beta},\n  year = {2021},\n}\n"
LIBRARY = {"alpha2020": APP_A, "beta2021": APP_B, "knuth1984": "@book{knuth1984, title={Other}}"}


def test_plan_adds_cited_removes_app_entries_and_lists_unknown_keys():
    fmt = TextFormat()
    text, report = plan_sync(USER_BIB, ["knuth1984", "alpha2020", "nobody"], LIBRARY.get, fmt)
    assert report.added == ["alpha2020"] and report.unresolved == ["nobody"]
    assert text.startswith(USER_BIB)  # the user's entries and formatting stay byte for byte
    # beta added by the app earlier, now no longer cited: removed; the user's entries stay
    text2, report2 = plan_sync(text + "\n" + APP_B, ["alpha2020"], LIBRARY.get, fmt)
    assert report2.removed == ["beta2021"] and report2.added == []
    assert text2 == text  # no blank lines pile up either
    # the user edited alpha: it is theirs now and stays although no longer cited
    edited = text.replace("{Alpha}", "{Alpha, my edit}")
    text3, report3 = plan_sync(edited, [], LIBRARY.get, fmt)
    assert text3 == edited and report3.removed == []
    # the user's uncited entries stay; the app removes only its own
    text4, report4 = plan_sync(text, [], LIBRARY.get, fmt)
    assert report4.removed == ["alpha2020"] and text4 == USER_BIB


def test_cited_keys_of_both_grammars():
    tex = "A \\cite{a,b}. B \\citep[p.~3]{c}. C [1]."
    assert cited_keys(tex, textops.LATEX) == ["a", "b", "c"]
    md = "A [@a; @b, p. 3]. B [-@c] says. Mail x@y.org."
    assert cited_keys(md, textops.MARKDOWN) == ["a", "b", "c"]


def test_sync_writes_no_backup_and_keeps_old_bytes(tmp_path):
    bib = tmp_path / "refs.bib"
    data = USER_BIB.replace("\n", "\r\n").encode()  # Windows line endings stay
    bib.write_bytes(data)
    report = sync_bib(bib, "\\cite{alpha2020,beta2021}", textops.LATEX, LIBRARY.get)
    assert report.added == ["alpha2020", "beta2021"] and report.written
    assert bib.read_bytes().startswith(data) and b"\n\n" not in bib.read_bytes().replace(
        b"\r\n", b"@"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refs.bib"]  # no .bak, no temp file
    before = bib.read_bytes()
    again = sync_bib(bib, "\\cite{alpha2020,beta2021}", textops.LATEX, LIBRARY.get)
    assert not again.written and bib.read_bytes() == before


# --- the bundled samples through the window ------------------------------------------------
@pytest.fixture
def sample_window(qtbot, tmp_path):
    from assistant.config import RESOURCES_DIR
    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import AppSettings
    from assistant.library.importers import import_paths
    from assistant.library.store import Library

    db = tmp_path / "library.sqlite"
    with Library(db) as lib:
        import_paths(lib, [RESOURCES_DIR / "sample" / "library.bib"], workers=1)
    win = MainWindow(AppSettings(library_path=str(db), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.jobs.start(prepare=False)
    return win


def _insert(win, key: str, after: str) -> None:
    from assistant.retrieval.pipeline import Recommendation

    editor = win.documents.current_editor()
    at = editor.toPlainText().index(after) + len(after)
    editor.select_range(at, at)
    paper = win.library_panel.library.get_by_citekey(key)
    assert paper is not None, key
    assert win.citations.insert_recommendation(
        Recommendation(paper, 1.0, {}, {}, "background", 0.9, {})
    )


def _check_bib(bib: Path, draft: Path, style: str) -> list[str]:
    keys = cited_keys(draft.read_text(encoding="utf-8"), style)
    in_bib = [e.key for e in read_bib(bib)]
    assert sorted(in_bib) == sorted(keys), (in_bib, keys)
    assert not list(bib.parent.glob("*.bak"))
    return keys


def _open_insert_two_undo_one_save(win, draft: Path, anchors: list[str], keys: list[str]):
    editor = win.documents.open_file(draft)
    assert editor is not None
    before = cited_keys(editor.toPlainText(), editor.state.style)
    _insert(win, keys[0], anchors[0])
    _insert(win, keys[1], anchors[1])
    editor.undo()  # the second insert goes
    assert win.documents.save_current()
    after = cited_keys(draft.read_text(encoding="utf-8"), editor.state.style)
    assert after == [*before, keys[0]] or sorted(after) == sorted([*before, keys[0]])
    return editor


def test_latex_sample_compiles_its_citations_after_save(sample_window, tmp_path):
    from assistant.gui.sample import sample_draft_copy

    draft = sample_draft_copy(tmp_path)
    editor = _open_insert_two_undo_one_save(
        sample_window,
        draft,
        ["harvesting the natural variation between several logging policies", "live traffic"],
        ["agarwal2019estimating", "radlinski2013optimized"],
    )
    bib = editor.state.bib_path
    assert bib == draft.with_name("library.bib")
    keys = _check_bib(bib, draft, textops.LATEX)
    assert {"wang2016learningc", "ai2018unbiasedb", "agarwal2019estimating"} == set(keys)
    _bibtex(draft, keys, bib)


def test_markdown_sample_compiles_its_citations_after_save(sample_window, tmp_path):
    from assistant.config import RESOURCES_DIR

    draft = tmp_path / "paper" / "draft.md"
    draft.parent.mkdir()
    shutil.copy(RESOURCES_DIR / "sample" / "draft.md", draft)
    editor = _open_insert_two_undo_one_save(
        sample_window,
        draft,
        ["several logging policies", "interleaving"],
        ["agarwal2019estimating", "radlinski2013optimized"],
    )
    assert editor.state.bib_path == draft.with_name("paper.bib")
    keys = _check_bib(editor.state.bib_path, draft, textops.MARKDOWN)
    assert set(keys) == {"joachims2017unbiased", "agarwal2019estimating"}


_MINI_BST = """ENTRY { title } {} {}
FUNCTION {output.entry} { cite$ write$ newline$ }
READ
ITERATE {output.entry}
"""


def _bibtex(draft: Path, keys: list[str], bib: Path) -> None:
    """Run the real ``bibtex`` on an .aux citing ``keys``: no missing entry, no error."""
    exe = shutil.which("bibtex")
    if exe is None:
        pytest.skip("bibtex not installed (Debian: apt-get install texlive-binaries)")
    work = draft.parent
    (work / "mini.bst").write_text(_MINI_BST)
    aux = work / "check.aux"
    lines = [f"\\citation{{{k}}}" for k in keys]
    lines += ["\\bibstyle{mini}", f"\\bibdata{{{bib.stem}}}"]
    aux.write_text("\n".join(lines) + "\n")
    res = subprocess.run(
        [exe, "check"], cwd=work, capture_output=True, text=True, timeout=60, check=False
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out  # 1 = warnings (a missing entry), 2 = errors
    assert "didn't find a database entry" not in out, out
    assert sorted((work / "check.bbl").read_text().split()) == sorted(keys)
