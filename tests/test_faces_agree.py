"""One query builder and one exclusion rule: the GUI, the CLI, the language server and manuscript
analysis give the same ranked list for the same sentence of the bundled sample draft (each face
through its own code path, the GUI offscreen)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, sample_imported_by_cli

from assistant.cli import main
from assistant.service import (
    MANUSCRIPT_K,
    Service,
    ServiceSettings,
    analyse_manuscript,
    textops,
)

SAMPLE = REPO_ROOT / "assistant" / "resources" / "sample"
#: two sentences of the sample draft the missing-citation finder flags; the second one's
#: paragraph cites wang2016learningc and ai2018unbiasedb (the exclusion rule has work to do)
SENTENCES = (
    "Click models such as the\ndynamic Bayesian network model later separated",
    "Counterfactual learning to rank corrects for position bias",
)
CITED = {"wang2016learningc", "ai2018unbiasedb"}


@pytest.fixture(scope="module")
def sample_env(tmp_path_factory) -> dict[str, str]:
    """The sample library imported and indexed once (through the CLI, as a user would)."""
    return sample_imported_by_cli(tmp_path_factory, "faces-home")


def _manuscript(db: Path, text: str):
    """The flagged sentences of SENTENCES (their spans) and their suggestions."""
    service = Service(ServiceSettings(db_path=db))
    try:
        analysis = analyse_manuscript(service, text, fmt="latex")
    finally:
        service.close()
    items = [next(m for m in analysis.missing if m.sentence.startswith(s)) for s in SENTENCES]
    spans = [(m.start, m.end) for m in items]
    return spans, [[(r.citekey, round(r.score, 4)) for r in m.recommendations] for m in items]


def _cli(env, draft: Path, text: str, spans) -> list[list[tuple[str, float]]]:
    out = []
    for start, end in spans:
        args = ["recommend", text[start:end], "--manuscript", str(draft), "--json"]
        result = CliRunner().invoke(main, [*args, "-k", str(MANUSCRIPT_K)], env=env)
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        assert got["mode"] == "local"
        out.append([(it["citekey"], round(it["score"], 4)) for it in got["items"]])
    return out


def _lsp(db: Path, text: str, spans) -> list[list[tuple[str, float]]]:
    from assistant.lsp import backend as lsp_backend
    from assistant.lsp.backend import Backend

    backend = Backend(db)
    try:
        backend.prepare()
        meta = lsp_backend.manuscript_meta(text, textops.LATEX)
        out = []
        for start, end in spans:  # the "recommend for the selection" command's two calls
            query = backend.query(text, textops.LATEX, start, end, meta)
            found = backend.recommend(query, MANUSCRIPT_K)
            out.append([(s.key, round(s.score, 4)) for s in found])
    finally:
        backend.close()
    return out


def _gui(qtbot, db: Path, draft: Path, spans) -> list[list[tuple[str, float]]]:
    pytest.importorskip("pytestqt")
    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import AppSettings

    win = MainWindow(AppSettings(library_path=str(db), k=MANUSCRIPT_K, first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.engine_ready, timeout=600_000):
        win.jobs.start()
    editor = win.documents.open_file(draft)
    assert editor.state.style == textops.LATEX
    out = []
    for start, end in spans:
        editor.select_range(start, end)
        with qtbot.waitSignal(win.recommendations_ready, timeout=120_000) as blocker:
            assert win.recommender.recommend() is not None
        result = blocker.args[0]
        assert result.mode == "local"
        out.append([(r.paper.citekey, round(r.score, 4)) for r in result.items])
    win.close()
    return out


def test_gui_cli_lsp_and_manuscript_give_the_same_ranked_list(sample_env, qtbot, tmp_path):
    db = Path(sample_env["ASSISTANT_DB"])
    draft = tmp_path / "draft.tex"
    shutil.copy(SAMPLE / "draft.tex", draft)
    text = draft.read_text(encoding="utf-8")
    spans, suggested = _manuscript(db, text)
    faces = {
        "manuscript": suggested,
        "cli": _cli(sample_env, draft, text, spans),
        "lsp": _lsp(db, text, spans),
        "gui": _gui(qtbot, db, draft, spans),
    }
    for lists in faces.values():
        assert [len(ranked) for ranked in lists] == [MANUSCRIPT_K] * len(spans)
        assert not CITED & {key for ranked in lists for key, _ in ranked}  # already cited: out
    assert faces["cli"] == faces["manuscript"], faces
    assert faces["lsp"] == faces["manuscript"], faces
    assert faces["gui"] == faces["manuscript"], faces
