"""The main window on a small real library (offscreen): recommend, intent chips, insert, errors.

The library is three real ACM-DL proceedings (~250 papers) imported once per session; the
default encoder is built once per session (conftest's shared ASSISTANT_MODELS) and the index
once (next to the session DB).
"""

from __future__ import annotations

import html
import os
import re
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

pytest.importorskip("pytestqt")
pytest.importorskip("PySide6")

from PySide6.QtCore import QTimer

from assistant.documents import textops
from assistant.gui.settings import AppSettings
from assistant.library.bibfile import read_bib

READY_TIMEOUT_MS = 600_000  # first run builds the encoder and the index
RESULT_TIMEOUT_MS = 120_000


@pytest.fixture(scope="session")
def gui_library(tmp_path_factory) -> Path:
    """The bundled sample library (176 real ACM records with abstracts) shared by the GUI tests:
    a clean clone without ../shared runs them too."""
    from assistant.config import RESOURCES_DIR
    from assistant.library.importers import import_paths
    from assistant.library.store import Library

    db = tmp_path_factory.mktemp("gui-lib") / "library.sqlite"
    lib = Library(db)
    report = import_paths(lib, [RESOURCES_DIR / "sample" / "library.bib"], workers=1)
    assert report.added > 100, report
    lib.close()
    return db


@pytest.fixture
def window(qtbot, gui_library):
    from assistant.gui.main_window import MainWindow

    settings = AppSettings(library_path=str(gui_library), k=8, first_run_done=True)
    win = MainWindow(settings)
    win.quiet_close = True
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.engine_ready, timeout=READY_TIMEOUT_MS):
        win.jobs.start()
    assert win.last_error_dialog is None, win.last_error_dialog and win.last_error_dialog.text()
    return win


def _target_paper(db: Path):
    """A paper of the library with a distinctive title and an abstract (the expected hit)."""
    from assistant.library.store import Library

    lib = Library(db)
    try:
        papers = [p for p in lib.iter_papers() if p.abstract and len(p.title.split()) >= 6]
    finally:
        lib.close()
    papers.sort(key=lambda p: p.citekey or "")
    return papers[len(papers) // 3]


def _open_draft(win, tmp_path: Path, sentence: str):
    draft = tmp_path / "draft.tex"
    draft.write_text(
        "\\documentclass{article}\n\\begin{document}\n\\section{Introduction}\n"
        "Information retrieval systems help people find documents. "
        + sentence
        + " We build on this line of work.\n\n\\bibliography{refs}\n\\end{document}\n",
        encoding="utf-8",
    )
    editor = win.documents.open_file(draft)
    assert editor is not None and editor.state.bib_path == (tmp_path / "refs.bib").resolve()
    text = editor.toPlainText()
    start = text.index(sentence)
    editor.select_range(start, start + len(sentence))
    return editor


def ui_gap_limit_ms() -> float:
    """100 ms, scaled up by the CPU overload factor (on a shared 2-core box with a load of 16 a
    thread waits ~8x longer for a core); printed so the raw number is always visible."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    limit = 100.0 * max(1.0, load)
    print(f"UI gap limit {limit:.0f} ms (load per core {load:.1f})")
    return limit


class Heartbeat:
    """A 5 ms QTimer on the UI thread; the largest gap between ticks is how long the UI was blocked."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.last = None
        self.gaps: list[float] = []

    def _tick(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.gaps.append((now - self.last) * 1000)
        self.last = now

    def __enter__(self):
        self.last = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.stop()

    @property
    def max_gap_ms(self) -> float:
        return max(self.gaps, default=0.0)


def test_recommend_and_insert(window, qtbot, tmp_path, gui_library):
    target = _target_paper(gui_library)
    sentence = f"Prior work studied {target.title.rstrip('.')}."
    editor = _open_draft(window, tmp_path, sentence)
    assert editor.state.style == textops.LATEX

    with Heartbeat() as beat:
        with qtbot.waitSignal(window.recommendations_ready, timeout=RESULT_TIMEOUT_MS) as blocker:
            assert window.recommender.recommend() is not None
        qtbot.waitUntil(window.results_panel.is_complete, timeout=5000)
        qtbot.wait(20)
    result = blocker.args[0]
    print(
        f"recommendation: {len(beat.gaps)} heartbeats, max UI gap {beat.max_gap_ms:.1f} ms, "
        f"timings {result.timings_ms}"
    )
    # the event loop kept running while the worker computed (a warm recommendation can take
    # only a few 5 ms ticks: the gap bound below is the real check)
    assert len(beat.gaps) >= 2
    assert beat.max_gap_ms < ui_gap_limit_ms(), f"UI thread blocked for {beat.max_gap_ms:.0f} ms"

    panel = window.results_panel
    assert result.mode == "local"
    assert 0 < len(panel.cards) <= 8
    keys = [card.rec.paper.citekey for card in panel.cards]
    assert target.citekey in keys[:3], (target.title, [c.rec.paper.title for c in panel.cards])
    for (
        card
    ) in panel.cards:  # every card has a chip; labelled ones are colour-coded with confidence
        assert card.chip.intent in ("", "background", "method", "result")
        if card.chip.intent:  # a per-paper label with its confidence, or "uncertain" if weak
            assert card.chip.text().startswith(card.chip.intent)
            assert ("uncertain" in card.chip.text()) == card.chip.uncertain
            assert card.chip.uncertain or "%" in card.chip.text()
            assert (
                card.rec.intent_confidence is not None and 0.0 <= card.rec.intent_confidence <= 1.0
            )
    if any(
        "intent" in w for w in result.warnings
    ):  # no intent model in this checkout: said in the UI
        assert "intent" in panel.header.text() and all(
            c.chip.text() == "intent n/a" for c in panel.cards
        )
    else:
        assert any(card.chip.intent for card in panel.cards), "the intent stage labelled nothing"
    card = panel.cards[keys.index(target.citekey)]
    card.expand_button.click()
    details = html.unescape(re.sub(r"<[^>]+>", "", card.details.text()))
    assert card.details.isVisibleTo(card) and " ".join(target.abstract.split())[:40] in " ".join(
        details.split()
    )
    assert "<b>" in card.details.text()  # query words marked in the matched snippet

    # insert: \cite{key} before the sentence's period; the entry is appended to refs.bib (once)
    # when the manuscript is saved
    card.insert_button.click()
    text = editor.toPlainText()
    assert f"~\\cite{{{target.citekey}}}." in text
    bib = tmp_path / "refs.bib"
    assert not bib.exists()
    card.insert_button.click()  # a second insert adds no second key and no duplicate entry
    assert editor.toPlainText().count(target.citekey) == 1
    assert "Cited" in window.status_label.text()
    assert window.documents.save_current()
    assert [e.key for e in read_bib(bib)] == [target.citekey]

    # filters: the paper is now cited -> hidden by "Hide cited"
    panel.set_results(
        result.items, cited_keys=textops.cited_keys(editor.toPlainText(), textops.LATEX)
    )
    qtbot.waitUntil(panel.is_complete, timeout=5000)
    assert target.citekey not in [c.rec.paper.citekey for c in panel.cards]
    # unticking it asks again with the cited papers kept (the service's exclusion rule)
    with qtbot.waitSignal(window.recommendations_ready, timeout=RESULT_TIMEOUT_MS):
        panel.exclude_cited.setChecked(False)
    qtbot.waitUntil(panel.is_complete, timeout=5000)
    assert target.citekey in [c.rec.paper.citekey for c in panel.cards]

    # copy BibTeX
    copied = window.citations.copy_bibtex(card.rec)
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == copied and target.citekey in copied


def test_newer_request_replaces_older(window, qtbot, tmp_path, gui_library):
    target = _target_paper(gui_library)
    editor = _open_draft(window, tmp_path, f"Prior work studied {target.title.rstrip('.')}.")
    text = editor.toPlainText()
    received = []
    window.recommendations_ready.connect(received.append)
    first = text.index("Information retrieval systems")
    editor.select_range(
        first, first + len("Information retrieval systems help people find documents.")
    )
    gen1 = window.recommender.recommend()
    second = text.index("Prior work")
    editor.select_range(second, second + 20)
    editor.select_range(second, second)  # cursor only: the sentence around it
    gen2 = window.recommender.recommend()
    assert gen2 == gen1 + 1
    qtbot.waitUntil(lambda: len(received) >= 1, timeout=RESULT_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not window.runner.is_busy("recommend"), timeout=RESULT_TIMEOUT_MS)
    qtbot.wait(200)
    assert len(received) == 1, "the stale result must be dropped"
    assert "Prior work studied" in received[0].query.text


def test_the_about_box_names_the_models_and_the_quality_tier_in_use(window):
    """Help → About said "Reranker: auto" (the setting) beside "Encoder: minilm" (the model in
    use): it names the cross-encoder the quality tier uses, and the tier with its reason."""
    from assistant.gui.menus import about_text

    status = window.engine.status()
    about = about_text(window)
    assert status.reranker == "reranker-minilm" and window.settings.reranker == "auto"
    assert f"Encoder: <b>{status.model}</b><br>Reranker: <b>reranker-minilm</b>" in about
    assert f"Quality: <b>{status.quality}</b>" in about
    assert status.quality.startswith("quality auto → ")


def test_corrupt_pdf_import_shows_error(window, qtbot, tmp_path):
    bad = tmp_path / "broken-manuscript.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00\xffgarbage" * 200)
    tabs_before = window.tabs.count()
    with qtbot.waitSignal(window.error_shown, timeout=60_000):
        window.documents.import_pdf(bad)
    box = window.last_error_dialog
    assert box is not None and box.isVisible()
    assert "broken-manuscript.pdf" in box.text()
    assert window.tabs.count() == tabs_before


def test_library_panel_search_and_details(window, qtbot, gui_library):
    target = _target_paper(gui_library)
    panel = window.library_panel
    assert panel.model.rowCount() > 100
    assert "papers" in panel.status_label.text() and "embedded" in panel.status_label.text()
    word = max(target.title.split(), key=len).strip(":,.")
    panel.search_edit.setText(word)
    qtbot.waitUntil(lambda: panel.model.rowCount() < 100, timeout=5000)
    col = panel.model.columns.index("title")
    titles = [panel.model.index(r, col).data() for r in range(panel.model.rowCount())]
    assert target.title in titles
    panel.table.setCurrentIndex(panel.model.index(titles.index(target.title), 0))
    assert target.abstract[:40] in panel.details.inputs["abstract"].toPlainText()
    panel.search_edit.setText("")
    qtbot.waitUntil(lambda: panel.model.rowCount() > 100, timeout=5000)
    panel.table.sortByColumn(panel.model.columns.index("year"), Qt.SortOrder.AscendingOrder)
    years = [panel.model.index(r, panel.model.columns.index("year")).data() for r in range(20)]
    assert all(years) and years == sorted(years)


def test_highlighter_marks_citations(qtbot):
    from assistant.gui.editor import ManuscriptEditor

    editor = ManuscriptEditor(style=textops.LATEX)
    qtbot.addWidget(editor)
    editor.setPlainText("As shown before \\cite{smith2020} and [3], see \\cite{}.")
    editor.highlighter.rehighlight()
    formats = editor.document().firstBlock().layout().formats()
    covered = {(f.start, f.start + f.length) for f in formats}
    text = editor.toPlainText()
    start = text.index("\\cite{smith2020}")
    assert (start, start + len("\\cite{smith2020}")) in covered
    start = text.index("[3]")
    assert (start, start + 3) in covered


def test_manuscript_pdf_import_shows_text_citations_and_marks(window, qtbot, acm_dev_dir):
    pdf = sorted(acm_dev_dir.glob("*/*.pdf"))[0]
    before = window.tabs.count()
    window.documents.import_pdf(pdf)
    qtbot.waitUntil(lambda: window.tabs.count() == before + 1, timeout=120_000)
    editor = window.documents.current_editor()
    assert editor.state.read_only and pdf.name in window.tabs.tabText(window.tabs.currentIndex())
    text = editor.toPlainText()
    assert len(text) > 5000
    spans = textops.citation_spans(text)
    assert len(spans) >= 5  # existing [n] markers are found (and highlighted)
    block = editor.document().findBlock(spans[0].start)
    starts = {f.start + block.position() for f in block.layout().formats()}
    assert spans[0].start in starts
    assert editor.marks, "no missing-citation suggestion in the margin"
    mark = editor.marks[0]
    assert "Missing citation?" in mark.reason and mark.end > mark.start
    assert len(editor.extraSelections()) == len(editor.marks)
    # one count everywhere: status bar, margin marks, the flagged-sentence list
    assert f"{len(editor.marks)} sentences may need a citation" in window.status_label.text()
    assert window.flagged_list.list.count() == len(editor.marks)


def test_import_files_with_progress_updates_library_and_index(qtbot, tmp_path):
    """A fresh, empty library (this test's ASSISTANT_DB): import a BibTeX file in the background."""
    from assistant.gui.main_window import MainWindow

    win = MainWindow(AppSettings(first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.engine_ready, timeout=READY_TIMEOUT_MS):
        win.jobs.start()
    assert win.library_panel.model.rowCount() == 0
    win.documents.current_editor().setPlainText("Query expansion improves recall.")
    with qtbot.waitSignal(win.error_shown, timeout=60_000) as err:
        win.recommender.recommend()
    assert "empty" in err.args[0]  # errors appear in the UI, not the console
    bib = tmp_path / "mine.bib"
    bib.write_text(
        """@article{a1, title={Query expansion with pseudo relevance feedback for web search},
 author={Rocchio, Joseph}, year={1971}, abstract={We expand queries with terms from top documents.}}
@inproceedings{a2, title={Learning to rank with gradient boosted trees}, author={Burges, Chris}, year={2010}}
@article{broken, title={unclosed
""",
        encoding="utf-8",
    )
    progress_messages = []
    win.runner.signals.progress.connect(lambda ch, gen, e: progress_messages.append(e.message))
    with qtbot.waitSignal(win.engine_ready, timeout=READY_TIMEOUT_MS) as blocker:
        win.jobs.import_library([bib])
    status = blocker.args[0]
    assert status.papers == 2 and status.embedded == 2 and status.model
    assert win.library_panel.model.rowCount() == 2
    assert any("Importing" in m for m in progress_messages) and any(
        "Embedding" in m for m in progress_messages
    )
    assert "2 papers" in win.library_panel.status_label.text()
    box = win.last_error_dialog  # the broken entry is reported in the UI, with its line
    assert box is not None and "problem" in box.text()


def test_mode_override_and_alt_shortcut_insert(window, qtbot, tmp_path, gui_library):
    target = _target_paper(gui_library)
    editor = _open_draft(window, tmp_path, f"Prior work studied {target.title.rstrip('.')}.")
    editor.select_range(
        editor.toPlainText().index("Prior work") + 3, editor.toPlainText().index("Prior work") + 3
    )
    window.mode_box.setCurrentIndex(window.mode_box.findData("paragraph"))
    with qtbot.waitSignal(window.recommendations_ready, timeout=RESULT_TIMEOUT_MS) as blocker:
        window.recommender.recommend()
    result = blocker.args[0]
    assert result.mode == "paragraph" and "Information retrieval systems" in result.query.text
    assert window.mode_label.text().strip() == "→ paragraph"
    qtbot.waitUntil(window.results_panel.is_complete, timeout=5000)
    first = window.results_panel.cards[0].rec.paper.citekey
    assert window.citations.insert_result(1)  # what Alt+1 does; the cursor was in the sentence
    assert f"\\cite{{{first}}}" in editor.toPlainText()
    assert not window.citations.insert_result(99)


def test_adapt_to_library_trains_reindexes_and_switches_encoder(qtbot, tmp_path, gui_library):
    """Library → Adapt to my library: a real (2-step) fine-tune, re-index, and the engine uses it."""
    import shutil

    from assistant.config import index_dir_for
    from assistant.gui.main_window import MainWindow
    from assistant.retrieval.index import DEFAULT_MAX_LENGTH, index_status
    from assistant.training.encoder import EncoderOptions

    db = tmp_path / "library.sqlite"
    shutil.copy(gui_library, db)  # the shared library's index stays on the default encoder
    (tmp_path / "blacklist.txt").write_text("")
    win = MainWindow(AppSettings(library_path=str(db), k=5, first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.engine_ready, timeout=READY_TIMEOUT_MS):
        win.jobs.start()
    before = index_status(index_dir_for(db))

    options = EncoderOptions(
        name="adapted-gui-test",
        out_dir=str(tmp_path / "adapted"),
        work_dir=str(tmp_path / "work"),
        n_queries=16,
        batch_size=4,
        max_steps=2,
        blacklist=str(tmp_path / "blacklist.txt"),
    )  # max_length: the index's
    ready, errors = [], []
    win.engine_ready.connect(ready.append)
    win.error_shown.connect(errors.append)
    win.jobs.adapt_to_library(options=options, confirm=False)
    qtbot.waitUntil(lambda: bool(ready or errors), timeout=READY_TIMEOUT_MS)
    assert not errors, errors

    meta = index_status(index_dir_for(db))
    assert meta["encoder"] == "adapted-gui-test" and meta["fingerprint"] != before["fingerprint"]
    # trained and re-indexed at the index's length (the default, 256, when the test indexed)
    assert meta["max_length"] == before["max_length"] == DEFAULT_MAX_LENGTH
    assert win.settings.encoder == "adapted-gui-test"
    assert "Adapted encoder 'adapted-gui-test'" in win.status_label.text()
    result = win.engine.recommend("neural ranking models for ad hoc retrieval")
    assert result.items and win.engine.recommender.encoder.fingerprint == meta["fingerprint"]


def test_open_and_save_keep_the_files_encoding_and_line_endings(window, qtbot, tmp_path):
    """A cp1252/CRLF manuscript opens readable and saves byte-identical; a character cp1252 cannot
    store makes the save switch to UTF-8 with a warning instead of losing it; a binary file is refused."""
    draft = tmp_path / "legacy.tex"
    original = (
        "\\documentclass{article}\r\n\\begin{document}\r\nCaf\u00e9 society was studied before.\r\n"
        "\\end{document}\r\n"
    ).encode("cp1252")
    draft.write_bytes(original)
    os.chmod(draft, 0o640)
    editor = window.documents.open_file(draft)
    assert editor is not None and "Caf\u00e9 society" in editor.toPlainText()
    assert (editor.state.text_format.encoding, editor.state.text_format.newline) == (
        "cp1252",
        "\r\n",
    )
    assert window.documents.save_current() and draft.read_bytes() == original
    assert os.stat(draft).st_mode & 0o777 == 0o640  # saving keeps the file's permissions
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    editor.insertPlainText("Ko\u010di agreed.\n")
    window.last_error_dialog = None
    assert window.documents.save_current()
    saved = draft.read_bytes().decode("utf-8")  # now UTF-8, nothing lost
    assert (
        "Caf\u00e9 society" in saved
        and "Ko\u010di agreed." in saved
        and "\r\n\\end{document}" in saved
    )
    assert window.last_error_dialog is not None and "UTF-8" in window.last_error_dialog.text()
    binary = tmp_path / "binary.tex"
    binary.write_bytes(b"\x00\x01PK" * 100)
    window.last_error_dialog = None
    assert window.documents.open_file(binary) is None
    assert window.last_error_dialog is not None and "binary file" in window.last_error_dialog.text()
