"""The language server's text logic without a server: slots, keys, positions, .bib files, order."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from assistant.documents import textops
from assistant.lsp import backend, bibfiles, completion, diagnostics
from assistant.lsp.citations import key_at, key_spans, slot_at
from assistant.lsp.text import DocState, LineIndex


def _cursor(marked: str) -> tuple[str, int]:
    return marked.replace("|", ""), marked.index("|")


@pytest.mark.parametrize(
    ("marked", "prefix", "keys"),
    [
        (r"as shown \cite{|}", "", []),
        (r"as shown \citep[p.~3]{smi|}", "smi", []),
        (r"as shown \citet{a, b|}", "b", ["a"]),
        (r"as shown \parencite{a,|, c}", "", ["a", "c"]),
        (r"as shown \autocite[see][12]{ke|y, z}", "ke", ["z"]),
        ("as shown \\cite{\nab|", "ab", []),
    ],
)
def test_latex_slots(marked, prefix, keys):
    text, offset = _cursor(marked)
    slot = slot_at(text, offset, backend.LATEX)
    assert slot is not None and slot.prefix == prefix and slot.keys == keys
    assert text[slot.replace_start : offset] == prefix
    assert text[slot.marker_start :].startswith("\\")


@pytest.mark.parametrize(
    "marked",
    [
        r"plain text| here",
        r"\cite{a} done|",
        r"% \cite{commented|",
        r"\section{Intro|}",
    ],
)
def test_not_a_latex_slot(marked):
    text, offset = _cursor(marked)
    assert slot_at(text, offset, backend.LATEX) is None


def test_pandoc_slots():
    text, offset = _cursor("as [see @a, p. 3; @sm|ith] shows")
    slot = slot_at(text, offset, backend.MARKDOWN)
    assert slot.prefix == "sm" and slot.keys == ["a"] and slot.replace_end == text.index("]")
    text, offset = _cursor("as [@|")
    assert slot_at(text, offset, backend.MARKDOWN).prefix == ""
    text, offset = _cursor("mail me@exa|mple.org")
    assert slot_at(text, offset, backend.MARKDOWN) is None


def test_key_spans_skip_comments_code_and_mail():
    tex = "A \\cite{a, b}.\n% \\cite{hidden}\nB \\nocite{*} \\citep[3]{c}\n"
    assert [s.key for s in key_spans(tex, backend.LATEX)] == ["a", "b", "c"]
    for span in key_spans(tex, backend.LATEX):
        assert tex[span.start : span.end] == span.key
    md = "A [@a; -@b] x.\n\n```\n[@code]\n```\nmail [me@x.org] and [see @c]\n"
    spans = key_spans(md, backend.MARKDOWN)
    assert [s.key for s in spans] == ["a", "b", "c"]
    assert key_at(md, md.rindex("@c") + 1, backend.MARKDOWN).key == "c"
    assert key_at(md, md.index("@code") + 2, backend.MARKDOWN) is None
    assert key_at(tex, tex.index("b}"), backend.LATEX).key == "b"
    assert key_at(tex, 0, backend.LATEX) is None


def test_positions_count_utf16_units_and_crlf():
    text = "a😀b\r\nÀ \\cite{k}\n"
    index = LineIndex(text, "utf-16")
    k = text.index("k")
    pos = index.position(k)
    assert (pos.line, pos.character) == (1, 8)
    assert index.offset(pos) == k
    after_emoji = index.position(text.index("b"))
    assert after_emoji.character == 3  # the emoji is two UTF-16 units
    assert index.offset(types.Position(0, 3)) == text.index("b")
    assert LineIndex(text, "utf-32").position(text.index("b")).character == 2
    assert index.offset(types.Position(0, 99)) == text.index("\r")  # clamped to the line
    assert index.offset(types.Position(9, 0)) == len(text)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_positions_agree_with_pygls_text_document(encoding):
    """Inside a line, LineIndex gives pygls' TextDocument positions (its PositionCodec does
    the unit counting); it differs on purpose where LSP does: U+2028 or a form feed is no line
    break, a character past the end of a line means the line's end, and the end of the text is
    on the last line (pygls puts it on a line after the last)."""
    from pygls.workspace import PositionCodec, TextDocument

    text = "Ä😀 \\cite{k}\r\nzweite Zeile 中文\n\nlast 😀😀 x"
    doc = TextDocument("file:///t.tex", text, position_codec=PositionCodec(encoding))
    index = LineIndex(text, encoding)
    for offset in range(len(text)):
        if text[offset - 1 : offset + 1] == "\r\n":
            continue  # between \r and \n: pygls counts it into the line
        pos = index.position(offset)
        assert pos == doc.client_position_at_offset(offset), offset
        assert index.offset(pos) == doc.offset_at_position(pos) == offset
    assert index.position(len(text)) == types.Position(
        3, {"utf-8": 15, "utf-16": 11, "utf-32": 9}[encoding]
    )
    odd = "a\u2028b\x0cc\nd"
    assert LineIndex(odd, encoding).position(odd.index("d")) == types.Position(1, 0)
    assert LineIndex(odd, encoding).offset(types.Position(0, 99)) == odd.index("\n")


def test_bib_names_and_locations(tmp_path):
    tex = "\\bibliography{refs, ../shared/all, ../nowhere}\n% \\addbibresource{old.bib}\n"
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "all.bib").write_text("")
    doc = _doc(tmp_path / "paper" / "main.tex", tex, backend.LATEX)
    paths = bibfiles.bib_paths(doc)
    assert paths == [
        (tmp_path / "paper" / "refs.bib").resolve(),  # may be created: inside the folder
        (tmp_path / "shared" / "all.bib").resolve(),  # named and existing: used where it is
    ]  # ../nowhere.bib: would be created outside the manuscript's folder
    md = "---\ntitle: T\nbibliography:\n  - a.bib\n  - 'b.bib'\n---\ntext"
    assert textops.bib_names(md, textops.MARKDOWN) == ["a.bib", "b.bib"]
    # nothing named: the one .bib next to the manuscript, never one elsewhere
    (tmp_path / "paper").mkdir(exist_ok=True)
    (tmp_path / "other.bib").write_text("")
    plain = _doc(tmp_path / "paper" / "main.tex", "No bibliography here.", backend.LATEX)
    assert bibfiles.bib_paths(plain) == []
    (tmp_path / "paper" / "only.bib").write_text("")
    assert bibfiles.bib_paths(plain) == [(tmp_path / "paper" / "only.bib").resolve()]
    (tmp_path / "paper" / "second.bib").write_text("")
    assert bibfiles.bib_paths(plain) == [  # two and none named: both define keys
        (tmp_path / "paper" / "only.bib").resolve(),
        (tmp_path / "paper" / "second.bib").resolve(),
    ]


def _doc(path: Path, text: str, style: str) -> DocState:
    return DocState(path.resolve().as_uri(), text, 1, style)


ENTRY = (
    "@article{smith2020deep,\n  title = {Deep Things},\n  doi = {10.1/ABC},\n  year = {2020}\n}\n"
)


def test_bib_entries_are_located_and_additions_skip_duplicates(tmp_path):
    bib_path = tmp_path / "refs.bib"
    bib_path.write_text("% mine\n\n@book{\n  other,\n  title={X}}\n\n" + ENTRY, encoding="utf-8")
    cache = bibfiles.BibCache(lambda p: None)
    bibs = bibfiles.BibSet([cache.get(bib_path)])
    entry = bibs.find("smith2020deep")
    lines = bib_path.read_text().splitlines()
    assert lines[entry.line][entry.start : entry.end] == "smith2020deep"
    other = bibs.find("OTHER")  # BibTeX compares keys case-insensitively
    assert lines[other.line][other.start : other.end] == "other"
    assert bibs.key_for_doi("https://doi.org/10.1/abc") == "smith2020deep"
    new = "@article{lee2021x,\n  title = {New},\n  doi = {10.2/x}\n}\n"
    assert bibfiles.addition_for(bibs, "smith2020deep", ENTRY, None) is None  # same key
    assert bibfiles.addition_for(bibs, "renamed", ENTRY, "10.1/abc") is None  # same DOI
    add = bibfiles.addition_for(bibs, "lee2021x", new, "10.2/x")
    assert add.path == bib_path and not add.create and add.offset == len(bib_path.read_text())
    assert add.text == "\n" + new.strip() + "\n"  # one blank line between entries
    # the cache follows the file on disk
    bib_path.write_text(bib_path.read_text() + "\n" + new)
    assert cache.get(bib_path).entries[-1].key == "lee2021x"
    missing = bibfiles.BibSet([cache.get(tmp_path / "new.bib")])
    created = bibfiles.addition_for(missing, "lee2021x", new, None)
    assert created.create and created.text == new.strip() + "\n"


def _key(key: str, title: str = "T") -> backend.KeyEntry:
    return backend.KeyEntry(key, title, ("Smith, Ann",), 2020, "", None)


def _suggestion(key: str) -> backend.Suggestion:
    return backend.Suggestion(
        key, 1, f"Title {key}", ("Lee, Bo",), 2019, "", None, 1.0, "method", 0.8, "method 80%"
    )


def test_completion_order_keys_then_recommendations(tmp_path):
    keys = completion.KeyIndex([_key(k) for k in ("zeta2020", "alpha2019", "Alpine2020", "beta")])
    text, offset = _cursor("see \\cite{al|}")
    doc = _doc(tmp_path / "a.tex", text, backend.LATEX)
    slot = slot_at(text, offset, backend.LATEX)
    recs = [_suggestion("zeta2020"), _suggestion("alpine2020x")]
    empty = bibfiles.BibSet([])
    result = completion.build_list(doc, slot, keys, recs, empty, False)
    labels = [i.label for i in sorted(result.items, key=lambda i: i.sort_text)]
    assert labels == ["alpha2019", "Alpine2020", "zeta2020", "alpine2020x"]
    rec = next(i for i in result.items if i.label == "zeta2020")
    assert (
        "method 80%" in rec.detail
    )  # the service's chip text, as the GUI shows it and "recommended #1" in rec.detail
    assert rec.filter_text.startswith("al")  # stays visible while "al" is typed
    # nothing typed yet: recommendations first
    text, offset = _cursor("see \\cite{|}")
    doc = _doc(tmp_path / "a.tex", text, backend.LATEX)
    slot = slot_at(text, offset, backend.LATEX)
    result = completion.build_list(doc, slot, keys, recs, empty, False, label_details=True)
    labels = [i.label for i in sorted(result.items, key=lambda i: i.sort_text)]
    assert labels[:2] == ["zeta2020", "alpine2020x"] and "alpha2019" in labels[2:]
    # citar-like rows: author and year next to the key, the title (and intent) after
    assert result.items[0].label_details.detail == " Lee 2019"
    assert result.items[0].label_details.description == "Title zeta2020 · method 80%"


def test_completion_uses_the_bib_key_of_the_same_paper(tmp_path):
    bib_path = tmp_path / "refs.bib"
    bib_path.write_text(ENTRY, encoding="utf-8")
    bibs = bibfiles.BibSet([bibfiles.BibCache(lambda p: None).get(bib_path)])
    entry = backend.KeyEntry("smith2020deepa", "Deep Things", (), 2020, "", "10.1/abc")
    keys = completion.KeyIndex([entry, _key("smyth2021")])
    text, offset = _cursor("\\cite{sm|}")
    doc = _doc(tmp_path / "a.tex", text, backend.LATEX)
    result = completion.build_list(
        doc, slot_at(text, offset, backend.LATEX), keys, None, bibs, True
    )
    by_label = {i.label: i for i in result.items}
    assert "smith2020deep" in by_label and by_label["smith2020deep"].command is None
    assert by_label["smyth2021"].command.arguments == [doc.uri, "smyth2021"]
    assert result.is_incomplete


def test_key_diagnostics(tmp_path):
    (tmp_path / "refs.bib").write_text(ENTRY, encoding="utf-8")
    text = (
        "\\bibliography{refs}\nA \\cite{smith2020deep, lib2020, ghost}. "
        "\\begin{thebibliography}{1}\\bibitem{local} L.\\end{thebibliography}\\cite{local}"
    )
    doc = _doc(tmp_path / "a.tex", text, backend.LATEX)
    bibs = bibfiles.bib_set(doc, bibfiles.BibCache(lambda p: None))
    found = diagnostics.key_diagnostics(doc, completion.KeyIndex([_key("lib2020")]), bibs)
    assert [(d.data["key"], d.code) for d in found] == [
        ("lib2020", diagnostics.NOT_IN_BIB),
        ("ghost", diagnostics.UNKNOWN_KEY),
    ]


def test_missing_marks_follow_their_sentence():
    old = "Intro. Claim one is here. Middle text. Claim two is here."
    found = [
        backend.Missing(
            old.index("Claim one"),
            old.index("Claim one") + 18,
            "Claim one is here.",
            0.9,
            [],
            ["k1"],
            ["T1"],
        ),
        backend.Missing(
            old.index("Claim two"), len(old), "Claim two is here.", 0.8, ["cue"], [], []
        ),
    ]
    marks = diagnostics.marks_from(found)
    assert "Suggested: k1" in marks[0].message
    new = old.replace("Middle", "A longer middle")
    moved = diagnostics.reanchor(marks, old, new)
    assert [new[m.start : m.end] for m in moved] == ["Claim one is here.", "Claim two is here."]
    edited = old.replace("Claim one is", "Claim one was")
    kept = diagnostics.reanchor(marks, old, edited)
    assert [m.sentence for m in kept] == ["Claim two is here."]


def test_paragraphs_end_at_blank_lines_of_any_kind():
    text = "First para line.\r\n\r\nSecond para. Two sentences.\n  \t\nThird."
    start, end = textops.paragraph_bounds(text, text.index("Two"))
    assert text[start:end] == "Second para. Two sentences."
    start, end = textops.paragraph_bounds(text, 3)
    assert text[start:end] == "First para line."
    assert text[slice(*textops.paragraph_bounds(text, len(text)))] == "Third."


def test_the_server_never_imports_qt():
    import subprocess
    import sys

    code = (
        "import sys, assistant.lsp.server, assistant.cli.lsp, assistant.service; "
        "bad = [m for m in sys.modules if m.startswith('PySide6')]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_only_the_backend_reaches_the_core():
    """assistant/lsp talks to the product through backend.py (the service + the documents
    layer's grammar); the other modules import only each other, errors and the CLI wiring."""
    import ast

    allowed = {"assistant", "assistant.errors", "assistant.cli"}
    bad = []
    for path in sorted((Path(backend.__file__).parent).glob("*.py")):
        if path.name == "backend.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            bad += [
                f"{path.name}: {n}"
                for n in names
                if n.split(".")[0] == "assistant"
                and not n.startswith("assistant.lsp")
                and n not in allowed
            ]
    assert not bad, bad


def test_bib_only_entries_filter_by_author_title_word_and_year(tmp_path):
    """A manuscript with only a .bib (no library): typing an author, a title word or a year
    finds the entry, as texlab and citar do."""
    bib_path = tmp_path / "refs.bib"
    bib_path.write_text(
        ENTRY + "@book{k1,\n  author = {Knuth, Donald E.},\n  title = {The {TeX}book},\n"
        "  year = 1984\n}\n",
        encoding="utf-8",
    )
    bibs = bibfiles.BibSet([bibfiles.BibCache(lambda p: None).get(bib_path)])
    for typed, key in (("knu", "k1"), ("texbook", "k1"), ("1984", "k1"), ("deep", "smith2020deep")):
        text, offset = _cursor(f"\\cite{{{typed}|}}")
        doc = _doc(tmp_path / "a.tex", text, backend.LATEX)
        result = completion.build_list(
            doc, slot_at(text, offset, backend.LATEX), None, None, bibs, False
        )
        assert [i.label for i in result.items] == [key], typed
