"""``assistant lsp`` driven like an editor: a JSON-RPC client over the server's stdio, the bundled
sample library imported and indexed into a temporary folder, the sample draft open."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from conftest import _session_models_dir

from assistant.gui import sample
from assistant.lsp.client import LspError, StdioClient
from assistant.lsp.text import LineIndex, uri_to_path

pytestmark = pytest.mark.skipif(
    not sample.SAMPLE_BIB.is_file() or not sample.SAMPLE_DRAFT.is_file(),
    reason="assistant/resources/sample/library.bib or draft.tex not in the checkout",
)

DRAFT_KEYS = ("wang2016learningc", "ai2018unbiasedb")
READY_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory) -> dict:
    """The sample library imported and indexed once for this module; the server's environment."""
    from assistant.service import Service, ServiceSettings

    home = tmp_path_factory.mktemp("lsp-home")
    env = dict(os.environ)
    env.update(
        ASSISTANT_HOME=str(home),
        ASSISTANT_DB=str(home / "library.sqlite"),
        ASSISTANT_MODELS=str(_session_models_dir(tmp_path_factory)),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    saved = {k: os.environ.get(k) for k in ("ASSISTANT_HOME", "ASSISTANT_DB", "ASSISTANT_MODELS")}
    os.environ.update({k: env[k] for k in saved})
    try:
        engine = Service(ServiceSettings(db_path=home / "library.sqlite"))
        setup = sample.setup_sample(engine)
        assert setup.status.ready, setup.status.describe()
        engine.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return env


class Editor:
    """The client side: applies the server's workspace edits to files like an editor that saves."""

    def __init__(self, env: dict, log: Path, capabilities: dict | None = None) -> None:
        self.applied: list[dict] = []
        self.picks: list[dict] = []
        self.client = StdioClient(
            [sys.executable, "-m", "assistant.cli", "lsp"],
            env=env,
            handlers={
                "workspace/applyEdit": self._apply,
                "window/showMessageRequest": self._pick,
                "window/workDoneProgress/create": lambda params: None,
            },
            stderr_path=log,
        )
        self.capabilities = capabilities

    def _pick(self, params):
        self.picks.append(params)
        return params["actions"][0]

    def _apply(self, params):
        self.applied.append(params)
        edit = params["edit"]
        for change in edit.get("documentChanges") or []:
            if change.get("kind") == "create":
                path = uri_to_path(change["uri"])
                if not path.exists():
                    path.write_text("", encoding="utf-8")
                continue
            path = uri_to_path(change["textDocument"]["uri"])
            if path.suffix == ".bib":  # the manuscript itself stays as the test holds it
                path.write_text(apply_edits(path.read_text("utf-8"), change["edits"]), "utf-8")
        return {"applied": True}

    def wait_ready(self) -> dict:
        return self.client.wait_for(
            lambda m: (
                m.get("method") == "citeAssist/status"
                and m["params"]["state"] in ("ready", "failed")
            ),
            timeout=READY_TIMEOUT_S,
        )["params"]


def apply_edits(text: str, edits: list[dict]) -> str:
    index = LineIndex(text)
    spans = []
    for e in edits:
        r = e["range"]
        start = index.offset(_pos(r["start"]))
        end = index.offset(_pos(r["end"]))
        spans.append((start, end, e["newText"]))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _pos(p):
    from lsprotocol import types

    return types.Position(p["line"], p["character"])


def position_of(text: str, offset: int) -> dict:
    p = LineIndex(text).position(offset)
    return {"line": p.line, "character": p.character}


def _bib_entry(key: str, env: dict) -> str:
    from assistant.library.export import paper_to_bibtex
    from assistant.library.store import Library

    with Library(Path(env["ASSISTANT_DB"])) as lib:
        return paper_to_bibtex(lib.get_by_citekey(key))


@pytest.fixture(scope="module")
def project(sample_home, tmp_path_factory) -> dict:
    """A manuscript folder: the sample draft (one citation emptied, one unknown key added) and a
    library.bib holding only ai2018unbiasedb."""
    folder = tmp_path_factory.mktemp("paper")
    draft = sample.SAMPLE_DRAFT.read_text(encoding="utf-8")
    assert all(f"\\cite{{{k}}}" in draft for k in DRAFT_KEYS)
    text = draft.replace("\\cite{wang2016learningc}", "\\cite{}")
    text = text.replace(
        "Interleaving compares two rankers online",
        "Interleaving \\cite{nosuchkey2020} compares two rankers online",
    )
    (folder / "draft.tex").write_text(text, encoding="utf-8")
    (folder / "library.bib").write_text(
        "% the author's own comment\n" + _bib_entry("ai2018unbiasedb", sample_home) + "\n",
        encoding="utf-8",
    )
    return {"folder": folder, "draft": folder / "draft.tex", "text": text}


@pytest.fixture(scope="module")
def editor(sample_home, project, tmp_path_factory):
    """One server for the module's flow tests: initialized, the draft open, models ready."""
    log = tmp_path_factory.mktemp("lsp-log") / "server.log"
    ed = Editor(sample_home, log)
    ed.client.initialize(project["folder"])
    ed.uri = ed.client.open(project["draft"], "latex", project["text"])
    status = ed.wait_ready()
    assert status["state"] == "ready", (status, log.read_text(errors="replace")[-3000:])
    yield ed
    assert ed.client.close() == 0
    assert ed.client.proc.returncode == 0


def _completion(ed: Editor, uri: str, text: str, offset: int) -> dict:
    return ed.client.request(
        "textDocument/completion",
        {"textDocument": {"uri": uri}, "position": position_of(text, offset)},
    )


def test_first_completion_is_answered_while_the_models_load(sample_home, project, tmp_path):
    # an empty models folder: the server builds its encoder first (the first start after an
    # install, ~10 s), so "ready" comes long after any prompt answer and the order is not a race
    env = dict(sample_home, ASSISTANT_MODELS=str(tmp_path / "models"))
    ed = Editor(env, tmp_path / "server.log")
    try:
        ed.client.initialize(project["folder"])
        uri = ed.client.open(project["draft"], "latex", project["text"])
        text = project["text"]
        offset = text.index("\\cite{}") + len("\\cite{")
        msg_id, future = ed.client.request_future(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": position_of(text, offset)},
        )
        first = future.result(timeout=60)
        ready = ed.wait_ready()
        assert ready["state"] == "ready"
        order = [
            i
            for i, m in enumerate(ed.client.messages)
            if m.get("id") == msg_id
            or (m.get("method") == "citeAssist/status" and m["params"]["state"] == "ready")
        ]
        assert ed.client.messages[order[0]].get("id") == msg_id, "answered only after loading"
        result = first["result"]
        assert result["isIncomplete"] is True  # recommendations follow once ready
        labels = [i["label"] for i in result["items"]]
        # library keys, capped on the server (newest papers first, not the alphabetically first)
        assert len(labels) == 100 and labels != sorted(labels, key=str.lower)
        # once ready, the same request brings the recommendations first
        again = _completion(ed, uri, text, offset)
        assert again["isIncomplete"] is True  # an empty slot: the editor asks again as one types
        assert "recommended #1" in again["items"][0]["detail"]
    finally:
        ed.client.close()


def test_completion_resolve_and_bib_edit(editor, project):
    text, uri = project["text"], editor.uri
    offset = text.index("\\cite{}") + len("\\cite{")
    result = _completion(editor, uri, text, offset)
    items = sorted(result["items"], key=lambda i: i["sortText"])
    top = [i["label"] for i in items[:5]]
    assert "wang2016learningc" in top
    item = next(i for i in items if i["label"] == "wang2016learningc")
    # detail: title, authors, year, intent
    assert "Learning to Rank with Selection Bias in Personal Search" in item["detail"]
    assert "Wang" in item["detail"] and "2016" in item["detail"]
    # the GUI's chip rule (service.chip_texts): a label only when it says something
    assert "uncertain" not in item["detail"]
    assert item["textEdit"]["newText"] == "wang2016learningc"
    assert "documentation" not in item  # filled lazily
    resolved = editor.client.request("completionItem/resolve", item)
    assert "selection bias" in resolved["documentation"]["value"].lower()  # the abstract

    # accepting it: the .bib lacks the entry -> the item's command adds it by a workspace edit
    command = item["command"]
    assert command["command"] == "citeAssist.addBibEntry"
    bib = project["folder"] / "library.bib"
    before = bib.read_text("utf-8")
    out = editor.client.request(
        "workspace/executeCommand",
        {"command": command["command"], "arguments": command["arguments"]},
    )
    assert out["added"] is True and Path(out["path"]) == bib.resolve()
    after = bib.read_text("utf-8")
    assert after.startswith(before)  # appended, nothing rewritten
    assert after.count("@inproceedings{wang2016learningc,") == 1
    edit = editor.applied[-1]["edit"]["documentChanges"][-1]
    assert uri_to_path(edit["textDocument"]["uri"]) == bib.resolve()
    # a second time: already there, no edit
    n = len(editor.applied)
    again = editor.client.request(
        "workspace/executeCommand",
        {"command": command["command"], "arguments": command["arguments"]},
    )
    assert again["added"] is False and len(editor.applied) == n
    # the next completion no longer proposes to add it
    result = _completion(editor, uri, text, offset)
    item = next(i for i in result["items"] if i["label"] == "wang2016learningc")
    assert "command" not in item


def test_typed_prefix_lists_matching_keys_first(editor, project):
    text = project["text"].replace("\\cite{}", "\\cite{agar}")
    editor.client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": editor.uri, "version": 2},
            "contentChanges": [{"text": text}],
        },
    )
    offset = text.index("\\cite{agar}") + len("\\cite{agar")
    try:
        result = _completion(editor, editor.uri, text, offset)
        items = sorted(result["items"], key=lambda i: i["sortText"])
        labels = [i["label"] for i in items]
        n_match = sum(1 for label in labels if label.startswith("agar"))
        assert n_match >= 3 and all(label.startswith("agar") for label in labels[:n_match])
        assert len(labels) > n_match  # then the recommendations
        assert (
            items[0]["textEdit"]["range"]["start"]["character"]
            == (position_of(text, offset - 4)["character"])
        )
    finally:
        editor.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": editor.uri, "version": 3},
                "contentChanges": [{"text": project["text"]}],
            },
        )


@pytest.mark.parametrize("key", DRAFT_KEYS)
def test_acceptance_draft_citations_in_top5(editor, project, key, tmp_path):
    """Completion inside ``\\cite{`` where the sample draft cites ``key``: ``key`` is in the top 5."""
    draft = sample.SAMPLE_DRAFT.read_text(encoding="utf-8")
    text = draft.replace(f"\\cite{{{key}}}", "\\cite{")  # an unfinished marker, as typed
    path = tmp_path / "draft.tex"
    path.write_text(text, encoding="utf-8")
    uri = editor.client.open(path, "latex", text)
    try:
        offset = draft.index(f"\\cite{{{key}}}") + len("\\cite{")
        result = _completion(editor, uri, text, offset)
        top = [i["label"] for i in sorted(result["items"], key=lambda i: i["sortText"])[:5]]
        assert key in top, top
    finally:
        editor.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_hover_definition_and_diagnostics(editor, project):
    text, uri = project["text"], editor.uri
    offset = text.index("ai2018unbiasedb") + 3
    hover = editor.client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": position_of(text, offset)},
    )
    value = hover["contents"]["value"]
    assert "Unbiased Learning to Rank with Unbiased Propensity Estimation" in value  # title
    assert "Qingyao Ai" in value and "2018" in value and "SIGIR" in value  # authors, year, venue
    assert "propensity" in value.lower().split("2018", 1)[1]  # the abstract

    loc = editor.client.request(
        "textDocument/definition",
        {"textDocument": {"uri": uri}, "position": position_of(text, offset)},
    )
    bib = (project["folder"] / "library.bib").resolve()
    assert uri_to_path(loc["uri"]) == bib
    bib_lines = bib.read_text("utf-8").splitlines()
    line = bib_lines[loc["range"]["start"]["line"]]
    start, end = loc["range"]["start"]["character"], loc["range"]["end"]["character"]
    assert line[start:end] == "ai2018unbiasedb" and line.startswith("@inproceedings{")

    # hovering plain text: nothing
    plain = editor.client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": position_of(text, text.index("Clickthrough"))},
    )
    assert plain is None

    def has_unknown(m):
        return m.get("method") == "textDocument/publishDiagnostics" and any(
            d.get("code") == "unknown-key" for d in m["params"]["diagnostics"]
        )

    diags = editor.client.wait_for(has_unknown, timeout=60)["params"]["diagnostics"]
    unknown = [d for d in diags if d["code"] == "unknown-key"]
    assert len(unknown) == 1 and "nosuchkey2020" in unknown[0]["message"]
    assert unknown[0]["severity"] == 2
    r = unknown[0]["range"]
    lines = text.splitlines()
    assert lines[r["start"]["line"]][r["start"]["character"] : r["end"]["character"]] == (
        "nosuchkey2020"
    )
    assert not any(d["code"] == "unknown-key" and "ai2018" in d["message"] for d in diags)


def test_code_actions_find_missing_and_recommend_here(editor, project):
    text, uri = project["text"], editor.uri
    at = text.index("Click models such as the")
    pos = position_of(text, at + 10)
    acts = editor.client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": {"start": pos, "end": pos},
            "context": {"diagnostics": []},
        },
    )
    titles = [a["title"] for a in acts]
    assert "Recommend citations here" in titles
    assert "Find missing citations in this document" in titles

    find = next(a for a in acts if a["title"].startswith("Find missing"))
    out = editor.client.request("workspace/executeCommand", find["command"])
    assert out["count"] >= 1 and out["with_suggestions"] is True

    def has_missing(m):
        return m.get("method") == "textDocument/publishDiagnostics" and any(
            d.get("code") == "missing-citation" for d in m["params"]["diagnostics"]
        )

    diags = editor.client.wait_for(has_missing, timeout=120)["params"]["diagnostics"]
    missing = [d for d in diags if d["code"] == "missing-citation"]
    assert all(d["severity"] == 3 for d in missing)  # Information
    flagged = {
        " ".join(
            text[
                LineIndex(text).offset(_pos(d["range"]["start"])) : LineIndex(text).offset(
                    _pos(d["range"]["end"])
                )
            ].split()
        )
        for d in missing
    }
    assert any(s.startswith("Click models such as the dynamic Bayesian") for s in flagged), flagged
    bayes = next(d for d in missing if "Bayesian" in str(d["data"]) or d["data"]["keys"])
    assert bayes["data"]["keys"]

    # its quick fix cites a suggested paper in that sentence
    fixes = editor.client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": bayes["range"],
            "context": {"diagnostics": [bayes]},
        },
    )
    cite = [a for a in fixes if a["title"].startswith("Cite ")]
    assert cite and cite[0]["kind"] == "quickfix"
    new_text = apply_edits(text, cite[0]["edit"]["changes"][uri])
    key = bayes["data"]["keys"][0]
    assert f"\\cite{{{key}}}" in new_text

    # "Recommend citations here": the editor is asked to pick one, the citation goes in
    # Eglot sends the word at point as the range: it counts as the cursor (the citation goes at
    # the sentence's end, not after the word); the command answers before the pick
    here = next(a for a in acts if a["title"] == "Recommend citations here")
    word = text.index("models", at)
    start, end = position_of(text, word), position_of(text, word + len("models"))
    here["command"]["arguments"][1:] = [
        start["line"],
        start["character"],
        end["line"],
        end["character"],
    ]
    n, picks = len(editor.applied), len(editor.picks)
    out = editor.client.request("workspace/executeCommand", here["command"], timeout=60)
    assert out["pending"] is True and out["chosen"] is None and out["suggestions"]
    deadline = time.monotonic() + 60
    while len(editor.applied) < n + 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(editor.picks) == picks + 1
    assert len(editor.picks[-1]["actions"]) == len(out["suggestions"])
    assert len(editor.applied) == n + 1
    chosen = out["suggestions"][0]["key"]  # the test editor picks the first
    changes = editor.applied[-1]["edit"]["documentChanges"]
    doc_edit = next(c for c in changes if c.get("textDocument", {}).get("uri") == uri)
    cited = apply_edits(text, doc_edit["edits"])
    assert f"models~\\cite{{{chosen}}}" not in cited  # not mid-sentence after the word
    assert f"\\cite{{{chosen}}}." in cited.split("satisfaction it brings")[1][:40] or (
        f"~\\cite{{{chosen}}}" in cited
    )


def test_markdown_front_matter_bib_and_pandoc_completion(editor, tmp_path):
    md = (
        "---\ntitle: Click bias\nbibliography: refs.bib\n---\n\n"
        "Personal search raises additional problems, because queries are private and the "
        "click logs are sparse [@wa].\n"
    )
    path = tmp_path / "paper.md"
    path.write_text(md, encoding="utf-8")
    uri = editor.client.open(path, "markdown", md)
    try:
        offset = md.index("[@wa") + len("[@wa")
        result = _completion(editor, uri, md, offset)
        items = sorted(result["items"], key=lambda i: i["sortText"])
        assert items[0]["label"].startswith("wa")
        item = next(i for i in items if i["label"] == "wang2016learningc")
        assert item["command"]["arguments"] == [uri, "wang2016learningc"]
        editor.client.request("workspace/executeCommand", item["command"])
        bib = tmp_path / "refs.bib"  # created: the document names it
        assert bib.read_text("utf-8").lstrip().startswith("@inproceedings{wang2016learningc,")
    finally:
        editor.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_malformed_and_unknown_messages_get_errors_and_the_server_lives(editor, project):
    client = editor.client
    with pytest.raises(LspError) as err:
        client.request("citeAssist/noSuchMethod", {})
    assert err.value.code == -32601

    def error_with(code):
        return lambda m: "error" in m and m["error"]["code"] == code and m.get("id") is None

    client.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": "textDocument/hover", ')
    assert client.wait_for(error_with(-32700), timeout=30)["error"]["message"]
    client.send_raw(b'[{"jsonrpc": "2.0", "id": 7, "method": "initialize"}]')
    client.wait_for(error_with(-32600), timeout=30)
    client.send_raw(b'{"id": 8, "method": "textDocument/hover", "params": {}}')
    assert client.wait_for(lambda m: m.get("id") == 8 and "error" in m)["error"]["code"] == -32600
    with pytest.raises(LspError) as err:
        client.request("textDocument/completion", {"textDocument": 5})
    assert err.value.code == -32602
    with pytest.raises(LspError) as err:
        client.request(
            "workspace/executeCommand",
            {"command": "citeAssist.addBibEntry", "arguments": [1, 2, 3]},
        )
    assert err.value.code == -32602
    client.notify("citeAssist/unknownNotification", {"x": 1})  # ignored, no answer
    # still serving
    text = project["text"]
    hover = client.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": editor.uri},
            "position": position_of(text, text.index("ai2018") + 2),
        },
    )
    assert "Unbiased Learning to Rank" in hover["contents"]["value"]


def test_cancel_request_and_document_change_stop_recommendations(editor, project):
    client, uri = editor.client, editor.uri
    base = project["text"]
    # a sentence no earlier request asked for (no cached recommendations)
    marker = "Offline metrics computed from editorial judgments do not always agree"
    text = base.replace(marker, marker + " \\cite{}")
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 10}, "contentChanges": [{"text": text}]},
    )
    offset = text.index(marker) + len(marker) + len(" \\cite{")
    params = {"textDocument": {"uri": uri}, "position": position_of(text, offset)}
    msg_id, future = client.request_future("textDocument/completion", params)
    client.notify("$/cancelRequest", {"id": msg_id})
    reply = future.result(timeout=60)
    assert reply.get("error", {}).get("code") == -32800, reply  # RequestCancelled

    # a change while recommending: the answer keeps the keys and asks to be re-queried
    text2 = text.replace("editorial judgments", "editorial relevance judgments")
    offset2 = offset + len(" relevance")
    _, future = client.request_future("textDocument/completion", params)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 11}, "contentChanges": [{"text": text2}]},
    )
    result = future.result(timeout=60)["result"]
    assert result["isIncomplete"] is True
    assert not any("recommended #" in i["detail"] for i in result["items"])
    # the next request for the new text gets recommendations
    t0 = time.perf_counter()
    fresh = _completion(editor, uri, text2, offset2)
    assert any("recommended #" in i["detail"] for i in fresh["items"])
    assert time.perf_counter() - t0 < 120
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 12}, "contentChanges": [{"text": base}]},
    )


def test_server_without_library_still_answers(tmp_path, sample_home):
    env = dict(sample_home, ASSISTANT_DB=str(tmp_path / "empty.sqlite"))
    ed = Editor(env, tmp_path / "server.log")
    try:
        ed.client.initialize(tmp_path)
        text = "We build on prior work \\cite{}.\n"
        path = tmp_path / "a.tex"
        path.write_text(text, encoding="utf-8")
        uri = ed.client.open(path, "latex", text)
        status = ed.wait_ready()
        assert status["state"] == "failed" and "empty" in status["message"]
        result = _completion(ed, uri, text, text.index("{}") + 1)
        assert result["items"] == [] and result["isIncomplete"] is False
    finally:
        ed.client.close()


def test_papers_imported_meanwhile_show_up(editor, project, sample_home):
    """An import from the CLI while the editor is open: the new key completes without a restart."""
    from assistant.library.models import Paper
    from assistant.library.store import Library

    with Library(Path(sample_home["ASSISTANT_DB"])) as lib:
        outcome = lib.add_paper(
            Paper(
                title="Zebra Crossings of Click Logs",
                authors=["Quagga, Zed"],
                year=2024,
                abstract="A new paper imported while the server runs.",
            )
        )
    key = outcome.citekey
    text = project["text"].replace("\\cite{}", "\\cite{quag}")
    editor.client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": editor.uri, "version": 50}, "contentChanges": [{"text": text}]},
    )
    offset = text.index("\\cite{quag}") + len("\\cite{quag")
    labels: list[str] = []
    deadline = time.monotonic() + 60
    while key not in labels and time.monotonic() < deadline:
        labels = [i["label"] for i in _completion(editor, editor.uri, text, offset)["items"]]
        time.sleep(0.5)
    assert labels[0] == key

    # ... and the recommender is reloaded with the new paper indexed
    def second_ready(_m):
        readies = [
            m
            for m in editor.client.messages
            if m.get("method") == "citeAssist/status" and m["params"]["state"] == "ready"
        ]
        return len(readies) >= 2

    editor.client.wait_for(second_ready, timeout=READY_TIMEOUT_S)
    assert (
        "177 papers"
        in [m for m in editor.client.messages if m.get("method") == "citeAssist/status"][-1][
            "params"
        ]["message"]
    )
