"""``assistant lsp --no-recommend`` on a small real library, driven like Eglot, Neovim and
nvim-cmp drive it (#35): the .bib written by the server itself, CRLF and the file's own style,
keys from the trash and aliases, citation commands, diagnostics after save, two .bib files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assistant.lsp.client import StdioClient
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
