"""The writing loop in real widgets (issue 18): insert, undo, non-BMP text, layout, keyboard.

Each test is named after the defect it reproduces and drives the real MainWindow (offscreen):
selection/caret in the editor, a click on a result card's Insert, Ctrl+Z through Qt's shortcut
system. Recommendation lists are real ``Recommendation`` objects of library papers; the tests
that need the pipeline itself are in test_gui_window.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("PySide6")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from assistant.documents import textops
from assistant.gui import qtext
from assistant.gui.settings import AppSettings
from assistant.library.bibfile import read_bib
from assistant.library.models import Paper
from assistant.retrieval.pipeline import Recommendation


def _rec(n: int, intent="method", conf=0.9, probs=None, title=None) -> Recommendation:
    paper = Paper(
        title=title or f"Dense passage retrieval for open-domain question answering part {n}",
        id=n,
        citekey=f"karpukhin2020dense{n}",
        authors=["Karpukhin, Vladimir", "Oguz, Barlas"],
        year=2020,
        venue="EMNLP",
        abstract="We show that retrieval can be practically implemented using dense representations.",
    )
    probs = probs or {intent: conf, "background": round(1 - conf, 3)}
    return Recommendation(paper, 1.0 - n / 100, {"bm25": 1.0}, {}, intent, conf, probs)


@pytest.fixture
def window(qtbot, tmp_path):
    from assistant.gui.main_window import MainWindow

    settings = AppSettings(library_path=str(tmp_path / "lib.sqlite"), first_run_done=True)
    win = MainWindow(settings)
    win.quiet_close = True
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    qtbot.waitExposed(win)
    return win


def _open(win, tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    editor = win.documents.open_file(path)
    win.citations.set_bib_path(editor.state, tmp_path / "refs.bib")
    return editor


def _show(win, qtbot, recs) -> None:
    win.results_panel.set_results(recs, "test results")
    qtbot.waitUntil(win.results_panel.is_complete, timeout=5000)


def _caret(editor, pos: int) -> None:
    editor.select_range(pos, pos)


def test_insert_splits_words(window, qtbot, tmp_path):
    """Defect 1: with only a caret the citation went exactly there (``def~\\cite{..}ault``)."""
    text = "\\begin{document}\nThe default ranking uses BM25. It works well.\n\\end{document}\n"
    editor = _open(window, tmp_path, "draft.tex", text)
    _caret(editor, text.index("default") + 3)  # inside "default"
    _show(window, qtbot, [_rec(1)])
    qtbot.mouseClick(window.results_panel.cards[0].insert_button, Qt.MouseButton.LeftButton)
    out = editor.toPlainText()
    assert "The default ranking uses BM25~\\cite{karpukhin2020dense1}. It works" in out
    # Markdown: same rule, pandoc marker, front matter added, merged into the adjacent citation
    md = "Retrieval is hard. Dense models help [@old2019].\n"
    editor = _open(window, tmp_path, "draft.md", md)
    _caret(editor, md.index("models") + 2)
    qtbot.mouseClick(window.results_panel.cards[0].insert_button, Qt.MouseButton.LeftButton)
    out = editor.toPlainText()
    assert "Dense models help [@old2019; @karpukhin2020dense1]." in out
    assert out.startswith("---\nbibliography: refs.bib\n---\n")


def test_cite_command_choice_and_merge(window, qtbot, tmp_path):
    """The user's command (Settings) is used and merged only into a marker of the same kind."""
    from dataclasses import replace

    window.settings = replace(window.settings, cite_command="\\citep")
    text = "\\begin{document}\nBM25 is strong \\citep{robertson}. Next.\n\\end{document}\n"
    editor = _open(window, tmp_path, "a.tex", text)
    _caret(editor, text.index("strong"))
    _show(window, qtbot, [_rec(1)])
    window.citations.insert_result(1)
    assert "\\citep{robertson,karpukhin2020dense1}." in editor.toPlainText()
    text2 = "\\begin{document}\nBM25 is strong \\cite{robertson}. Next.\n\\end{document}\n"
    editor = _open(window, tmp_path, "b.tex", text2)
    _caret(editor, text2.index("strong"))
    window.citations.insert_result(1)
    assert "\\cite{robertson}~\\citep{karpukhin2020dense1}." in editor.toPlainText()


def test_non_bmp_characters_shift_offsets(window, qtbot, tmp_path):
    """Defect 2: 𝑀𝑑𝑜𝑐 / emoji are 2 UTF-16 units: query lost characters, Insert raised."""
    text = (
        "\\begin{document}\nWe score 𝑀𝑑𝑜𝑐 with 🙂 care. "
        "Post-retrieval reranking improves precision \\cite{nogueira}. End.\n\\end{document}\n"
    )
    editor = _open(window, tmp_path, "math.tex", text)
    sentence = "Post-retrieval reranking improves precision"
    start = text.index(sentence)
    editor.select_range(start, start + len(sentence))
    query, _spec = window.recommender.build_query()
    assert query.text == sentence
    # the highlighter colours exactly the \cite marker, not a shifted range
    block = editor.document().findBlockByNumber(1)
    cite_at = block.text().index("\\cite{nogueira}")
    formats = block.layout().formats()
    cite_ranges = [(f.start, f.length) for f in formats if f.format.fontWeight() > 500]
    assert (qtext.to_qt(block.text(), cite_at), len("\\cite{nogueira}")) in cite_ranges
    _show(window, qtbot, [_rec(2)])
    qtbot.mouseClick(window.results_panel.cards[0].insert_button, Qt.MouseButton.LeftButton)
    assert "precision \\cite{nogueira,karpukhin2020dense2}. End." in editor.toPlainText()
    assert "𝑀𝑑𝑜𝑐 with 🙂 care." in editor.toPlainText()


def test_undo_removes_citation_and_bib_entry(window, qtbot, tmp_path):
    """Defect 9: Ctrl+Z right after Insert (focus on the button) undoes it; the .bib entry goes
    too (entries are written on save, only for citations still in the text)."""
    text = "\\begin{document}\nDense retrieval works. Sparse too.\n\\end{document}\n"
    editor = _open(window, tmp_path, "u.tex", text)
    _caret(editor, text.index("retrieval"))
    _show(window, qtbot, [_rec(1), _rec(2)])
    button = window.results_panel.cards[0].insert_button
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert "\\cite{karpukhin2020dense1}" in editor.toPlainText()
    bib = tmp_path / "refs.bib"
    assert not bib.exists()  # nothing written before the draft is saved
    window.results_panel.cards[1].insert_button.setFocus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.toPlainText() == text
    window.citations.insert_result(2)
    assert window.documents.save_current()
    keys = [e.key for e in read_bib(bib)]
    assert keys == ["karpukhin2020dense2"]  # the undone citation's entry was never written


def test_missing_citation_underline_goes_after_citing(window, qtbot, tmp_path):
    from assistant.gui.editor import MarginMark

    text = "\\begin{document}\nPrior work showed large gains. We continue.\n\\end{document}\n"
    editor = _open(window, tmp_path, "m.tex", text)
    s = text.index("Prior")
    e = text.index("gains.") + len("gains.")
    editor.set_marks([MarginMark(s, e, "claim"), MarginMark(text.index("We"), len(text) - 16, "x")])
    window.flagged.show_flagged(editor)
    assert window.flagged_list.list.count() == 2
    _caret(editor, s + 3)
    _show(window, qtbot, [_rec(1)])
    window.citations.insert_result(1)
    assert len(editor.marks) == 1 and len(editor.extraSelections()) == 1
    assert window.flagged_list.list.count() == 1
    assert editor.toPlainText()[editor.marks[0].start :].startswith("We continue")


def test_latex_commands_leak_into_query(window, tmp_path):
    """Defect 6: ``\\section{Method} Our first stage…`` was sent as is."""
    text = (
        "\\begin{document}\n\\section{Method} Our first stage ranks \\emph{all} papers "
        "\\cite{a}.\n\\end{document}\n"
    )
    editor = _open(window, tmp_path, "q.tex", text)
    start = text.index("\\section")
    editor.select_range(start, text.index("\\cite{a}.") + 9)
    query, _ = window.recommender.build_query()
    assert query.text == "Our first stage ranks all papers."


def test_intent_chips_carry_no_per_paper_information(window, qtbot):
    """Defect 8 / issue 34.2: the sentence's label x10 said nothing: no per-paper chip then, one
    sentence-level label in the header; a chip only where the model is confident about the paper."""
    same = [_rec(n, "method", 0.51, {"method": 0.51, "background": 0.49}) for n in range(1, 5)]
    _show(window, qtbot, same)
    assert all(c.chip.uncertain and c.chip.isHidden() for c in window.results_panel.cards)
    assert "the sentence reads as: method 51%" in window.results_panel.header.text()
    mixed = [_rec(1, "method", 0.9), _rec(2, "result", 0.8), _rec(3, "background", 0.4)]
    _show(window, qtbot, mixed)
    chips = [c.chip for c in window.results_panel.cards]
    assert [c.text() for c in chips[:2]] == ["method 90%", "result 80%"]
    assert not chips[0].isHidden() and not chips[1].isHidden()
    assert chips[2].uncertain and chips[2].isHidden()  # weak evidence: no chip
    assert "sentence reads as" not in window.results_panel.header.text()


def test_need_reranks_instead_of_emptying_the_list(window, qtbot):
    """Issue 34.2: "Need: result" hid every card that was not labelled result."""
    _show(window, qtbot, [_rec(1, "method"), _rec(2, "method")])
    panel = window.results_panel
    wanted = []
    panel.need_changed.connect(wanted.append)
    panel.intent_filter.setCurrentIndex(panel.intent_filter.findData("result"))
    qtbot.waitUntil(panel.is_complete)
    assert wanted == ["result"]  # the window recommends again, re-ranked for that need
    assert len(panel.cards) == 2 and not panel.empty_label.isVisible()


def test_stopword_only_query_warns(window, qtbot, tmp_path):
    """Defect 10b: a stop-word-only query returned random papers."""
    text = "\\begin{document}\nThis is what it was.\n\\end{document}\n"
    editor = _open(window, tmp_path, "s.tex", text)
    _show(window, qtbot, [_rec(1)])
    _caret(editor, text.index("what"))
    assert window.recommender.recommend() is None
    assert not window.results_panel.cards  # old cards cleared
    assert "no content words" in window.results_panel.header.text()


@pytest.mark.parametrize("size", [(1024, 700), (1920, 1080)])
def test_layout_cards_clip(window, qtbot, size):
    """Defect 7: chip and Insert clipped; the editor collapsed at 1024x700."""
    window.resize(*size)
    getattr(window, "size_docks", lambda: None)()
    long = "A very long title " * 12
    _show(window, qtbot, [_rec(1, title=long), _rec(2, "result", 0.8)])
    qtbot.wait(50)
    assert window.documents.current_editor().width() >= 300
    viewport = window.results_panel.scroll.viewport()
    for card in window.results_panel.cards:
        for widget in (card.chip, card.insert_button):
            assert widget.isVisible()
            right = widget.mapTo(viewport, widget.rect().topRight()).x()
            assert right <= viewport.width(), (size, widget.objectName(), right, viewport.width())
    panel, combo = window.results_panel, window.results_panel.intent_filter
    assert combo.mapTo(panel, combo.rect().topRight()).x() <= panel.width()
    assert combo.width() >= combo.sizeHint().width() - 2, "the intent filter is squeezed"


def test_keyboard_reaches_result_cards(window, qtbot, tmp_path):
    text = "\\begin{document}\nDense retrieval works. Next.\n\\end{document}\n"
    editor = _open(window, tmp_path, "k.tex", text)
    _caret(editor, 3 + text.index("Dense"))
    _show(window, qtbot, [_rec(1), _rec(2)])
    editor.setFocus()
    qtbot.keyClick(
        editor,
        Qt.Key.Key_R,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert QApplication.focusWidget() is window.results_panel.cards[0]
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Down)
    assert QApplication.focusWidget() is window.results_panel.cards[1]
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    assert "\\cite{karpukhin2020dense2}" in editor.toPlainText()


def test_help_and_edit_menus(window):
    titles = [a.text() for a in window.menuBar().actions()]
    assert "&Edit" in titles and "&Help" in titles
    from assistant import __version__
    from assistant.gui.menus import about_text, show_shortcuts

    about = about_text(window)
    assert __version__ in about and "Encoder" in about and "Device" in about
    from assistant.inference.runtime import _LOADED, RuntimeInfo

    _LOADED["/m/reranker-minilm/model.fp16.onnx"] = RuntimeInfo(
        "cuda", "CUDAExecutionProvider", "fp16", 0, notes=["2 of 90 nodes run on CPU"]
    )
    try:  # each loaded model says the device it really uses, and its CPU fallbacks
        assert "reranker-minilm: CUDA fp16 — 2 of 90 nodes run on CPU" in about_text(window)
    finally:
        _LOADED.pop("/m/reranker-minilm/model.fp16.onnx")
    box = show_shortcuts(window)
    assert "Ctrl+Shift+R" in box.text()
    box.close()


def test_find_replace(window, qtbot, tmp_path):
    editor = _open(window, tmp_path, "f.tex", "alpha beta alpha\n")
    window.find_bar.open_find(True)
    window.find_bar.find_edit.setText("alpha")
    window.find_bar.replace_edit.setText("gamma")
    assert window.find_bar.replace_all() == 2
    assert editor.toPlainText() == "gamma beta gamma\n"
    editor.undo()
    assert editor.toPlainText() == "alpha beta alpha\n"


def test_qtext_boundary_round_trip():
    text = "a𝑀b🙂c"
    assert [qtext.to_qt(text, i) for i in range(6)] == [0, 1, 3, 4, 6, 7]
    assert [qtext.to_py(text, q) for q in (0, 1, 2, 3, 4, 5, 6, 7)] == [0, 1, 1, 2, 3, 3, 4, 5]
    assert textops.insertion_point("We use 𝑀𝑑𝑜𝑐 here.", 3, 3) == len("We use 𝑀𝑑𝑜𝑐 here")


def _pdfgen():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "pdfgen", Path(__file__).parent / "fixtures" / "documents" / "pdfgen.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_manuscript_pdf_recommends_itself_and_cited(window, qtbot, tmp_path):
    """Defect 5: the PDF recommended itself, its references showed with Hide cited on, its own
    contribution sentences were flagged, the count changed on Ctrl+Shift+M."""
    from dataclasses import replace

    from assistant.retrieval.pipeline import RecommendationResult
    from assistant.retrieval.query import Query
    from assistant.service import excluded_ids

    pdfgen = _pdfgen()
    pdf = pdfgen.make_paper(tmp_path / "paper.pdf")
    lib = window.engine.library
    own = lib.add_paper(Paper(title=pdfgen.TITLE, year=2020, doi="10.1145/1234567.7654321"))
    ref = lib.add_paper(
        Paper(
            title="Content-Based Citation Recommendation",
            year=2018,
            authors=["Bhagavatula, Chandra"],
            doi="10.18653/v1/N18-1022",
        )
    )
    other = lib.add_paper(Paper(title="Something else entirely about ranking", year=2019))
    ids = [getattr(x, "id", x) for x in (own, ref, other)]
    with qtbot.waitSignal(
        window.runner.busy_changed, timeout=60000, check_params_cb=lambda c, b: c == "pdf" and not b
    ):
        window.documents.import_pdf(pdf)
    editor = window.documents.current_editor()
    state = editor.state
    assert ids[0] in state.extras["self_ids"] and ids[1] in state.extras["cited_ids"]
    flagged_text = [editor.toPlainText()[m.start : m.end] for m in editor.marks]
    assert not any("In this paper" in t or "We present" in t for t in flagged_text)
    first = len(editor.marks)
    assert window.flagged_list.list.count() == first
    with qtbot.waitSignal(
        window.runner.busy_changed,
        timeout=60000,
        check_params_cb=lambda c, b: c == "analyse" and not b,
    ):
        window.documents.find_missing()
    assert len(editor.marks) == first == window.flagged_list.list.count()
    # the service's one exclusion rule on the tab's query: itself always, its reference with
    # Hide cited (the GUI no longer filters a list after ranking)
    query, _spec = window.recommender.build_query()
    config = window.engine.default_config(exclude_cited=True)
    assert {ids[0], ids[1]} <= excluded_ids(lib, query, config)
    assert ids[2] not in excluded_ids(lib, query, config)
    kept = excluded_ids(lib, query, replace(config, exclude_cited=False))
    assert ids[0] in kept and ids[1] not in kept
    papers = [lib.get(i) for i in ids[1:]]  # a list with the reference (Hide cited unticked)
    items = [Recommendation(p, 1.0 - n / 10) for n, p in enumerate(papers)]
    window.recommender._recommended(
        RecommendationResult(Query(text="citation recommendation"), "local", items)
    )
    qtbot.waitUntil(window.results_panel.is_complete)
    shown = [c.rec.paper.id for c in window.results_panel.cards]
    assert shown == [ids[2]]  # its reference marked cited and hidden while Hide cited is on
