"""``assistant lsp --no-recommend`` on a small real library, driven like Eglot, Neovim and
nvim-cmp drive it (#35): the .bib written by the server itself, CRLF and the file's own style,
keys from the trash and aliases, citation commands, diagnostics after save, two .bib files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assistant.lsp.client import LspError, StdioClient
from assistant.lsp.text import LineIndex

ROOT = Path(__file__).resolve().parent.parent
PAPERS = [
    ("Unbiased Learning to Rank with Unbiased Propensity Estimation", ["Ai, Qingyao"], 2018),
    ("Learning to Rank with Selection Bias in Personal Search", ["Wang, Xuanhui"], 2016),
    ("Click Models for Web Search", ["Chuklin, Aleksandr", "Markov, Ilya"], 2015),
    ("A Trashed Paper Nobody Wants", ["Gone, Gary"], 2001),
    ("Merged Away Duplicate", ["Dup, Dora"], 2010),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> dict:
    """A library of five papers: one trashed, one whose old key is an alias of another."""
    from assistant.library import editing
    from assistant.library.models import Paper
    from assistant.library.store import Library

    home = tmp_path_factory.mktemp("lsp-lib")
    db = home / "library.sqlite"
    keys = []
    with Library(db) as lib:
        for title, authors, year in PAPERS:
            out = lib.add_paper(Paper(title=title, authors=authors, year=year, abstract="x"))
            keys.append(out.citekey)
        trashed = lib.get_by_citekey(keys[3])
        editing.trash(lib, [trashed.id])
        renamed = lib.get_by_citekey(keys[4])
        editing.edit_paper(lib, renamed.id, {"citekey": "dup2010new"})
    env = dict(os.environ)
    env.update(
        ASSISTANT_HOME=str(home),
        ASSISTANT_DB=str(db),
        ASSISTANT_MODELS=str(home / "no-models"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    return {"env": env, "keys": keys, "trashed": keys[3], "alias": keys[4]}


def eglot_capabilities() -> dict:
    """Eglot 1.9: applyEdit, but no documentChanges / file creation, no work-done progress."""
    return {
        "workspace": {"applyEdit": True},
        "textDocument": {"completion": {"completionItem": {"snippetSupport": True}}},
    }


class Session:
    def __init__(self, env: dict, folder: Path, capabilities: dict | None = None):
        self.applied: list[dict] = []
        self.client = StdioClient(
            [sys.executable, "-m", "assistant.cli", "lsp", "--no-recommend"],
            env=env,
            handlers={"workspace/applyEdit": self._apply},
            stderr_path=folder / "server.log",
        )
        self.client.initialize(folder, capabilities)
        self.client.wait_for(
            lambda m: m.get("method") == "citeAssist/status" and m["params"]["state"] == "keys",
            timeout=60,
        )

    def _apply(self, params):
        self.applied.append(params)
        return {"applied": True}

    def complete(self, uri: str, text: str, offset: int) -> dict:
        pos = LineIndex(text).position(offset)
        return self.client.request(
            "textDocument/completion",
            {
                "textDocument": {"uri": uri},
                "position": {"line": pos.line, "character": pos.character},
            },
            timeout=60,
        )

    def diagnostics(self, uri: str, after: int = 0) -> list[dict]:
        msg = self.client.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and self.client.messages.index(m) >= after
            ),
            timeout=30,
        )
        return msg["params"]["diagnostics"]

    def close(self):
        self.client.close()


def test_server_writes_the_bib_itself_without_crashing(library, tmp_path):
    """Eglot 1.9 cannot create files: the server appends to the new refs.bib (was:
    AttributeError 'Backend' object has no attribute 'append_bib_entry')."""
    key = library["keys"][0]
    tex = tmp_path / "paper.tex"
    tex.write_text(f"Text \\cite{{{key}}}.\n\\bibliography{{refs}}\n", encoding="utf-8")
    s = Session(library["env"], tmp_path, eglot_capabilities())
    try:
        uri = s.client.open(tex, "latex")
        result = s.client.request(
            "workspace/executeCommand",
            {"command": "citeAssist.addBibEntry", "arguments": [uri, key]},
            timeout=60,
        )
        assert result["added"] is True, result
        assert f"{{{key}," in (tmp_path / "refs.bib").read_text("utf-8")
    finally:
        s.close()


def test_entry_added_to_a_crlf_bib_keeps_crlf_and_the_file_style(library, tmp_path):
    key = library["keys"][1]
    bib = tmp_path / "refs.bib"
    old = "@ARTICLE{old2000,\r\n\tTITLE = {Old},\r\n\tYEAR = {2000}\r\n}\r\n"
    bib.write_bytes(old.encode())
    tex = tmp_path / "paper.tex"
    tex.write_text(f"Text \\cite{{{key}}}.\n\\bibliography{{refs}}\n", encoding="utf-8")
    s = Session(library["env"], tmp_path, eglot_capabilities())
    try:
        uri = s.client.open(tex, "latex")
        s.client.request(
            "workspace/executeCommand",
            {"command": "citeAssist.addBibEntry", "arguments": [uri, key]},
            timeout=60,
        )
        (edit,) = s.applied[-1]["edit"]["changes"][bib.resolve().as_uri()]
        new = edit["newText"]
        assert "\r\n" in new and "\n" not in new.replace("\r\n", "")
        assert new.lstrip().startswith("@INPROCEEDINGS{") or new.lstrip().startswith("@ARTICLE{")
        assert "\r\n\tTITLE = " in new
    finally:
        s.close()
    # a client that cannot edit at all: the server writes, CRLF kept on disk
    s = Session(library["env"], tmp_path, {})
    try:
        uri = s.client.open(tex, "latex")
        s.client.request(
            "workspace/executeCommand",
            {"command": "citeAssist.addBibEntry", "arguments": [uri, key]},
            timeout=60,
        )
        data = bib.read_bytes()
        assert data.startswith(old.encode()) and key.encode() in data
        assert b"\n" not in data.replace(b"\r\n", b"")
    finally:
        s.close()


def _labels(result: dict) -> list[str]:
    return [i["label"] for i in result["items"]]


def test_key_list_leaves_out_the_trash_and_knows_aliases(library, tmp_path):
    tex = tmp_path / "a.tex"
    text = f"See \\cite{{}} and \\cite{{{library['alias']}}}.\n"
    tex.write_text(text, encoding="utf-8")
    (tmp_path / "refs.bib").write_text("", encoding="utf-8")
    s = Session(library["env"], tmp_path)
    try:
        n = len(s.client.messages)
        uri = s.client.open(tex, "latex", text)
        result = s.complete(uri, text, text.index("{}") + 1)
        labels = _labels(result)
        assert library["trashed"] not in labels and "dup2010new" in labels
        assert result["isIncomplete"] is True  # nothing typed: asked again as the user types
        codes = {d["code"] for d in s.diagnostics(uri, n)}
        assert "unknown-key" not in codes  # the merged-away key is an alias, not unknown
    finally:
        s.close()


@pytest.mark.parametrize(
    ("name", "language_id", "text", "cursor"),
    [
        ("a.tex", "latex", "As \\Cite{|} shows.", "|"),
        ("a.tex", "latex", "As \\cites{other}[p.~3]{|} show.", "|"),
        ("a.md", "markdown", "As @| shows.", "|"),
        ("a.md", "latex", "One Eglot entry for both: [@|].", "|"),  # wrong languageId
    ],
)
def test_citation_forms_that_open_completion(library, tmp_path, name, language_id, text, cursor):
    offset = text.index(cursor)
    text = text.replace(cursor, "")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    s = Session(library["env"], tmp_path)
    try:
        uri = s.client.open(path, language_id, text)
        result = s.complete(uri, text, offset)
        assert result is not None and library["keys"][0] in _labels(result)
    finally:
        s.close()


def test_filtering_by_author_title_word_and_year(library, tmp_path):
    s = Session(library["env"], tmp_path)
    keys = library["keys"]
    try:
        for typed, expected in (("chuklin", keys[2]), ("propens", keys[0]), ("2016", keys[1])):
            text = f"See \\cite{{{typed}}}.\n"
            path = tmp_path / "a.tex"
            path.write_text(text, encoding="utf-8")
            uri = s.client.open(path, "latex", text)
            result = s.complete(uri, text, text.index("}"))
            assert expected in _labels(result), (typed, _labels(result))
            item = next(i for i in result["items"] if i["label"] == expected)
            assert typed in item["filterText"].lower()  # the editor's own filter keeps it
            s.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    finally:
        s.close()


def test_two_bib_files_none_named_both_define_keys(library, tmp_path):
    (tmp_path / "a.bib").write_text("@misc{alpha1, title={A}}\n", encoding="utf-8")
    (tmp_path / "b.bib").write_text("@misc{beta2, title={B}}\n", encoding="utf-8")
    text = "Both \\cite{alpha1} and \\cite{beta2}.\n"
    path = tmp_path / "m.tex"
    path.write_text(text, encoding="utf-8")
    s = Session(library["env"], tmp_path)
    try:
        n = len(s.client.messages)
        uri = s.client.open(path, "latex", text)
        assert s.diagnostics(uri, n) == []
        pos = LineIndex(text).position(text.index("beta2") + 1)
        loc = s.client.request(
            "textDocument/definition",
            {
                "textDocument": {"uri": uri},
                "position": {"line": pos.line, "character": pos.character},
            },
        )
        assert loc["uri"].endswith("/b.bib")
    finally:
        s.close()


def test_unclosed_cite_gives_a_one_line_diagnostic(library, tmp_path):
    text = "We show \\cite{nosuch\nthat the rest of the paragraph\ncontinues here}.\n"
    path = tmp_path / "m.tex"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "refs.bib").write_text("", encoding="utf-8")
    s = Session(library["env"], tmp_path)
    try:
        n = len(s.client.messages)
        uri = s.client.open(path, "latex", text)
        diags = s.diagnostics(uri, n)
        assert diags and all(
            d["range"]["start"]["line"] == d["range"]["end"]["line"] for d in diags
        )
    finally:
        s.close()


def test_diagnostic_goes_once_the_bib_entry_is_saved(library, tmp_path):
    """The editor applied the entry to refs.bib and saved it: the warning leaves at the save,
    not at the next edit."""
    key = library["keys"][2]
    bib = tmp_path / "refs.bib"
    bib.write_text("", encoding="utf-8")
    text = f"See \\cite{{{key}}}.\n\\bibliography{{refs}}\n"
    path = tmp_path / "m.tex"
    path.write_text(text, encoding="utf-8")
    s = Session(library["env"], tmp_path)
    try:
        n = len(s.client.messages)
        uri = s.client.open(path, "latex", text)
        assert [d["code"] for d in s.diagnostics(uri, n)] == ["not-in-bib"]
        bib.write_text(f"@misc{{{key},\n  title = {{Click Models}}\n}}\n", encoding="utf-8")
        n = len(s.client.messages)
        s.client.notify("textDocument/didSave", {"textDocument": {"uri": bib.resolve().as_uri()}})
        assert s.diagnostics(uri, n) == []
    finally:
        s.close()


def test_references_rename_symbols_and_bib_diagnostics(library, tmp_path):
    """texlab parity: a key's citations across .tex and .md, renamed everywhere with its .bib
    entry; .bib entries as symbols; duplicate and unused entries flagged in the .bib."""
    bib = tmp_path / "refs.bib"
    bib_text = (
        "@misc{shared2020,\n  title = {Shared Paper}\n}\n\n"
        "@misc{unused2019,\n  title = {Nobody Cites Me}\n}\n\n"
        "@misc{Shared2020,\n  title = {Again}\n}\n"
    )
    bib.write_text(bib_text, encoding="utf-8")
    tex_text = "See \\cite{shared2020} and \\citep{x, shared2020}.\n\\bibliography{refs}\n"
    (tmp_path / "a.tex").write_text(tex_text, encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "b.md").write_text(
        "---\nbibliography: ../refs.bib\n---\nAs [@shared2020] shows.\n", encoding="utf-8"
    )
    s = Session(library["env"], tmp_path)
    try:
        uri = s.client.open(tmp_path / "a.tex", "latex", tex_text)
        pos = LineIndex(tex_text).position(tex_text.index("shared2020") + 2)
        where = {
            "textDocument": {"uri": uri},
            "position": {"line": pos.line, "character": pos.character},
        }
        found = s.client.request(
            "textDocument/references", {**where, "context": {"includeDeclaration": True}}
        )
        by_file = sorted(Path(loc["uri"]).name for loc in found)
        assert by_file == ["a.tex", "a.tex", "b.md", "refs.bib", "refs.bib"], by_file
        prepared = s.client.request("textDocument/prepareRename", where)
        assert prepared["placeholder"] == "shared2020"
        edit = s.client.request("textDocument/rename", {**where, "newName": "common2020"})
        names = {Path(u).name: len(e) for u, e in edit["changes"].items()}
        assert names == {"a.tex": 2, "b.md": 1, "refs.bib": 2}
        with pytest.raises(LspError) as err:
            s.client.request("textDocument/rename", {**where, "newName": "bad key,"})
        assert err.value.code == -32602

        n = len(s.client.messages)
        bib_uri = s.client.open(bib, "bibtex", bib_text)
        symbols = s.client.request(
            "textDocument/documentSymbol", {"textDocument": {"uri": bib_uri}}
        )
        assert [x["name"] for x in symbols] == ["shared2020", "unused2019", "Shared2020"]
        assert symbols[0]["detail"] == "Shared Paper"
        ws = s.client.request("workspace/symbol", {"query": "unused"})
        assert [x["name"] for x in ws] == ["unused2019"]
        diags = s.diagnostics(bib_uri, n)
        codes = sorted((d["code"], d["range"]["start"]["line"]) for d in diags)
        assert codes == [("duplicate-entry", 8), ("unused-entry", 4)], codes
    finally:
        s.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_special_and_oversized_bib_files_are_refused_not_read(library, tmp_path):
    """A FIFO named refs.bib (was: completion and hover dead in every document) and a .bib over
    the size cap (was: read whole) are skipped; the server keeps answering."""
    os.mkfifo(tmp_path / "refs.bib")
    (tmp_path / "big.bib").write_text("@misc{big1, title={B}}\n" + "%" * 2_000_000, "utf-8")
    text = "See \\cite{}.\n\\bibliography{refs,big}\n"
    path = tmp_path / "m.tex"
    path.write_text(text, encoding="utf-8")
    env = dict(library["env"], ASSISTANT_MAX_FILE_MB="1")
    s = Session(env, tmp_path)
    try:
        uri = s.client.open(path, "latex", text)
        result = s.complete(uri, text, text.index("{}") + 1)
        labels = _labels(result)
        assert library["keys"][0] in labels and "big1" not in labels
        pos = LineIndex(text).position(1)
        hover = s.client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": pos.line, "character": 1}},
            timeout=20,
        )
        assert hover is None
    finally:
        s.close()
