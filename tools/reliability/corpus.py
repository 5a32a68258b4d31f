"""The generated corpus of bad inputs: odd, damaged, hostile and special files for every importer
and for ``assistant manuscript``. Each case names the good records that must survive its import.

Deterministic (no randomness): the same cases on every run, so a regression shows as a diff.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    name: str
    category: str
    kind: str  # "import" | "manuscript"
    path: Path
    good: list[str] = field(default_factory=list)  # titles that must be in the library after
    env: dict[str, str] = field(default_factory=dict)


GOOD_BIB = "@article{{good{n}, title={{Good record {n}}}, author={{Smith, Jane}}, year={{2020}}}}\n"
GOOD_RIS = "TY  - JOUR\nTI  - Good record {n}\nAU  - Smith, Jane\nPY  - 2020\nER  - \n"


def _good_csl(n: str) -> dict:
    return {"id": f"good{n}", "type": "article-journal", "title": f"Good record {n}"}


def generate(root: Path) -> list[Case]:
    """Write every case under ``root`` (a fresh folder) and return them."""
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def add(
        name: str,
        category: str,
        content: bytes | str | Callable[[Path], None],
        ext: str,
        good: list[str] | None = None,
        kind: str = "import",
        env: dict | None = None,
    ) -> None:
        path = root / f"{len(cases):03d}-{name}{ext}"
        if callable(content):
            content(path)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        cases.append(Case(name, category, kind, path, good or [], env or {}))

    _bibtex(add)
    _ris(add)
    _csljson(add)
    _encodings(add)
    _special(add, root)
    _pdf_and_sqlite(add)
    _manuscripts(add)
    return cases


def _bibtex(add) -> None:
    g = GOOD_BIB.format
    bad = {
        "hash-concat": '@article{c, title = "Concatenated" # " Title", journal = proc # acm}\n',
        "missing-comma": "@article{m, title={No comma} author={A, B}}\n",
        "unclosed-brace": "@article{u, title={Never closed\n",
        "unclosed-quote": '@article{q, title = "never closed}\n',
        "no-title": "@article{n, author={A, B}, year=2020}\n",
        "empty-title": "@article{e, title={}}\n",
        "duplicate-keys": "@article{dup, title={First dup}}\n@article{dup, title={Second dup}}\n",
        "undefined-macro": "@article{um, title={T}, journal = undefinedmacro}\n",
        "crossref-loop": "@inproceedings{x, title={X}, crossref={y}}\n@proceedings{y, title={Y}, crossref={x}}\n",
        "crossref-missing": "@inproceedings{cm, title={Crossref missing}, crossref={nowhere}}\n",
        "paren-entry": "@article(p, title={Parenthesised entry})\n",
        "lone-at": "@\n@@@@\n@article\n",
        "garbage-year": "@article{gy, title={Garbage year}, year={next spring}}\n",
        "garbage-month": "@article{gm, title={Garbage month}, month={13th}}\n",
        "long-key": "@article{" + "k" * 5000 + ", title={Long key}}\n",
        "unicode-key": "@article{schön2020, title={Unicode key}}\n",
        "author-and-and": "@article{aa, title={Many ands}, author={and and and and}}\n",
        "comment-preamble": '@comment{x}\n@preamble{"\\newcommand"}\n@string{s = {x}}\n',
        "deep-braces": "@article{db, title={" + "{" * 5000 + "x" + "}" * 5000 + "}}\n",
        "huge-field": "@article{hf, title={Huge field}, abstract={" + "word " * 400_000 + "}}\n",
        "control-chars": "@article{cc, title={Evil \x1b[31mred\x1b[0m \x07 title}}\n",
        "latex-soup": "@article{ls, title={\\\\\\{\\}\\'{}\\\"\\c\\v{\\u}$$$^_~}}\n",
        "equals-missing": "@article{em, title {x}}\n",
        "only-comments": "% nothing here\n% at all\n",
        "nested-entry": "@article{ne, title={@article{inner, title={x}}}}\n",
        "bad-doi": "@article{bd, title={Bad doi}, doi={not a doi at all}}\n",
        "many-entries": "".join(f"@article{{m{i}, title={{Many {i}}}}}\n" for i in range(3000)),
        "crlf": "@article{cr, title={CRLF entry}}\r\n",
        "tab-soup": "@article{\tts\t,\ttitle\t=\t{Tabs}\t}\n",
        "url-latex": "@article{ul, title={Url}, url={http://x.org/a\\_b\\%20}}\n",
    }
    keep = {  # records of the odd part that must be kept too
        "hash-concat": ["Concatenated Title"],
        "missing-comma": ["No comma"],
        "duplicate-keys": ["First dup", "Second dup"],
        "crossref-missing": ["Crossref missing"],
        "garbage-year": ["Garbage year"],
        "unicode-key": ["Unicode key"],
        "paren-entry": ["Parenthesised entry"],
        "crlf": ["CRLF entry"],
        "many-entries": [f"Many {i}" for i in range(0, 3000, 100)],
    }
    for name, text in bad.items():
        add(f"bib-{name}", "bibtex", g(n=name) + text + g(n=name + "-after"), ".bib",
            [f"Good record {name}", f"Good record {name}-after", *keep.get(name, [])])  # fmt: skip
    add("bib-whitespace-only", "bibtex", " \n\t\n", ".bib")
    add("bib-empty", "bibtex", b"", ".bib")
    add("bib-binary", "bibtex", bytes(range(256)) * 64, ".bib")
    add("bib-no-extension-sniffed", "bibtex", g(n="sniffed"), "", ["Good record sniffed"])


def _ris(add) -> None:
    g = GOOD_RIS.format
    bad = {
        "no-er": "TY  - JOUR\nTI  - No ER record\n",
        "no-ty": "TI  - Orphan title\nER  - \n",
        "only-er": "ER  - \nER  - \n",
        "garbage-tags": "TY  - JOUR\nZZ  - what\n99  - num\nTI  - Garbage tags\nER  - \n",
        "long-line": "TY  - JOUR\nTI  - " + "long " * 200_000 + "\nER  - \n",
        "lowercase-tags": "ty  - JOUR\nti  - lower\ner  - \n",
        "bad-year": "TY  - JOUR\nTI  - Bad year\nPY  - ////\nER  - \n",
        "unknown-type": "TY  - WHAT\nTI  - Unknown type\nER  - \n",
        "pages-only-end": "TY  - JOUR\nTI  - Pages\nEP  - 12\nER  - \n",
        "continuation": "TY  - JOUR\nTI  - Continued\n  on the next line\nER  - \n",
    }
    keep = {"no-er": ["No ER record"], "garbage-tags": ["Garbage tags"], "bad-year": ["Bad year"]}
    for name, text in bad.items():
        add(f"ris-{name}", "ris", g(n=name) + text + g(n=name + "-after"), ".ris",
            [f"Good record {name}", f"Good record {name}-after", *keep.get(name, [])])  # fmt: skip
    add("ris-binary", "ris", b"TY  - \x00\x01\x02" + bytes(range(256)) * 32, ".ris")
    add("ris-empty", "ris", b"", ".ris")
    add("ris-text-only", "ris", "just some text\nnot RIS\n", ".ris")


def _csljson(add) -> None:
    odd_items = {
        "null-author": {"author": None},
        "int-keyword": {"keyword": 5},
        "int-doi": {"DOI": 12345},
        "url-list": {"URL": ["https://x.org", "https://y.org"]},
        "number-name": {"author": [7, {"family": "Lee"}]},
        "title-list": {"title": ["List", "Title"]},
        "date-parts-int": {"issued": {"date-parts": 5}},
        "date-parts-nested-null": {"issued": {"date-parts": [[None]]}},
        "issued-string": {"issued": "spring 2020"},
        "id-int": {"id": 42},
        "id-list": {"id": [1, 2]},
        "author-dict": {"author": {"family": "Solo"}},
        "bool-title-field": {"container-title": True},
        "nested-objects": {"abstract": {"a": {"b": [1, {"c": None}]}}},
        "nan-volume": {"volume": float("nan")},
        "huge-number": {"page": 10**400},
    }
    for name, extra in odd_items.items():
        item = {"id": f"odd-{name}", "title": f"Odd item {name}", **extra}
        if name == "title-list":
            good = ["Odd item title-list"]
            item["title"] = ["Odd item", "title-list"]
        else:
            good = [f"Odd item {name}"]
        text = json.dumps([_good_csl(name), item, _good_csl(name + "-after")], indent=1)
        add(f"csl-{name}", "csljson", text.replace("NaN", "NaN"), ".json",
            [f"Good record {name}", f"Good record {name}-after", *good])  # fmt: skip
    whole = {
        "title-null": json.dumps([_good_csl("tn"), {"id": "tn", "title": None}]),
        "truncated": json.dumps([_good_csl("tr"), _good_csl("tr2")])[:-30],
        "object-not-array": json.dumps({"not": "csl"}),
        "array-of-numbers": "[1, 2, 3]",
        "items-not-list": json.dumps({"items": 5}),
        "deep-nesting": "[" * 100_000 + "]" * 100_000,
        "invalid-json": "[{'single': 'quotes'}]",
        "trailing-comma": json.dumps([_good_csl("tc")])[:-1] + ",]",
        "duplicate-json-keys": '[{"id": "d", "title": "Dup A", "title": "Dup B"}]',
        "huge-string": json.dumps([{"id": "h", "title": "Huge", "abstract": "x" * 3_000_000}]),
    }
    goods = {
        "title-null": ["Good record tn"],
        "trailing-comma": [],
        "duplicate-json-keys": ["Dup B"],
        "huge-string": ["Huge"],
    }
    for name, text in whole.items():
        add(f"csl-{name}", "csljson", text, ".json", goods.get(name, []))


def _encodings(add) -> None:
    good = GOOD_BIB.format(n="enc") + GOOD_BIB.format(n="enc2")
    titles = ["Good record enc", "Good record enc2"]
    add("enc-nul-byte", "encoding", good.replace("\n", "\x00\n", 1).encode(), ".bib", titles)
    add("enc-utf16-le-nobom", "encoding", good.encode("utf-16-le"), ".bib", titles)
    add("enc-utf16-be-nobom", "encoding", good.encode("utf-16-be"), ".bib", titles)
    add("enc-utf16-bom", "encoding", good.encode("utf-16"), ".bib", titles)
    add("enc-utf8-bom", "encoding", b"\xef\xbb\xbf" + good.encode(), ".bib", titles)
    add("enc-latin1", "encoding", (good + "@article{l, title={Caf\xe9}}\n").encode("latin-1"), ".bib", titles)  # fmt: skip
    add("enc-invalid-utf8", "encoding", good.encode() + b"@article{x, title={\xff\xfe\xc3}}\n", ".bib", titles)  # fmt: skip
    add("enc-ris-utf16-nobom", "encoding", GOOD_RIS.format(n="ru").encode("utf-16-le"), ".ris", ["Good record ru"])  # fmt: skip
    add("enc-json-nul", "encoding", json.dumps([_good_csl("jn")]).encode() + b"\x00", ".json", ["Good record jn"])  # fmt: skip
    add("enc-lone-surrogate-escape", "encoding", '[{"id": "s", "title": "Surrogate \\ud800 here"}]', ".json", ["Surrogate \ufffd here"])  # fmt: skip


def _special(add, root: Path) -> None:
    for ext in (".bib", ".ris", ".json", ".pdf"):
        add(f"fifo{ext[1:]}", "special", lambda p: os.mkfifo(p), ext)
    for ext in (".bib", ".ris", ".json", ".pdf"):
        add(f"dev-zero-link{ext[1:]}", "special", lambda p: p.symlink_to("/dev/zero"), ext)
    add("dev-null-link", "special", lambda p: p.symlink_to("/dev/null"), ".bib")
    add("dev-urandom-link", "special", lambda p: p.symlink_to("/dev/urandom"), ".bib")
    add("symlink-loop", "special", lambda p: p.symlink_to(p), ".bib")
    add("dangling-symlink", "special", lambda p: p.symlink_to(root / "missing.bib"), ".bib")
    add("folder-named-bib", "special", lambda p: p.mkdir(), ".bib")

    def mixed_folder(p: Path) -> None:
        p.mkdir()
        (p / "good.bib").write_text(GOOD_BIB.format(n="folder"))
        os.mkfifo(p / "pipe.bib")
        (p / "zero.ris").symlink_to("/dev/zero")
        (p / "loop.json").symlink_to(p / "loop.json")
        (p / "sub").mkdir()
        (p / "sub" / "inner.ris").write_text(GOOD_RIS.format(n="inner"))
        (p / "package.json").write_text('{"name": "not csl"}')

    add("folder-mixed", "special", mixed_folder, "", ["Good record folder", "Good record inner"])

    def capped(p: Path) -> None:
        p.write_text(GOOD_BIB.format(n="capped") * 300)

    add("size-cap", "special", capped, ".bib", env={"ASSISTANT_MAX_FILE_MB": "0.001"})


def _pdf_and_sqlite(add) -> None:
    pdf = _tiny_pdf()
    add("pdf-truncated", "pdf", pdf[: len(pdf) // 2], ".pdf")
    add("pdf-empty", "pdf", b"", ".pdf")
    add("pdf-random", "pdf", bytes((i * 7919) % 256 for i in range(50_000)), ".pdf")
    add("pdf-text-named-pdf", "pdf", "this is not a PDF\n", ".pdf")
    add("pdf-header-only", "pdf", b"%PDF-1.7\n", ".pdf")
    add("pdf-ok", "pdf", pdf, ".pdf")
    add("pdf-encrypted", "pdf", _tiny_pdf(encrypt=True), ".pdf")

    def other_sqlite(p: Path) -> None:
        conn = sqlite3.connect(p)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()

    for name, content in {
        "zotero-foreign": other_sqlite,
        "zotero-text": "not sqlite at all\n",
        "zotero-truncated": b"SQLite format 3\x00" + b"\x00" * 100,
    }.items():
        add(name, "zotero", content, ".sqlite")


def _tiny_pdf(encrypt: bool = False) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A Tiny Paper About Retrieval", fontsize=18)
    page.insert_text((72, 110), "Jane Smith", fontsize=11)
    page.insert_text((72, 140), "Abstract. Dense retrieval is studied [1].", fontsize=10)
    kwargs = {}
    if encrypt:
        kwargs = {
            "encryption": pymupdf.PDF_ENCRYPT_AES_256,
            "owner_pw": "owner",
            "user_pw": "secret",
        }
    data = doc.tobytes(**kwargs)
    doc.close()
    return data


def _manuscripts(add) -> None:
    m = "manuscript"
    keys40 = "; ".join(f"@k{i % 3}" for i in range(48))
    add("md-unclosed-pandoc-48", m, f"# Intro\n\nAs shown [{keys40} and more.\n", ".md", kind=m)
    add("md-unclosed-pandoc-400", m, "Text [" + "; ".join(["@a"] * 400) + "\n", ".md", kind=m)
    add("md-many-brackets", m, "[" * 20_000 + "@x" + "]" * 5, ".md", kind=m)
    add("md-closed-pandoc-60", m, "Shown [" + "; ".join(f"@k{i}" for i in range(60)) + "].\n", ".md", kind=m)  # fmt: skip
    add("txt-author-year-run", m, "(" + ", ".join(["Smith"] * 5000) + "\n", ".txt", kind=m)
    add("txt-narrative-run", m, " ".join(["Smith"] * 5000) + " (20\n", ".txt", kind=m)
    add("txt-numeric-run", m, "[" + ", ".join(["1"] * 20_000) + "\n", ".txt", kind=m)
    add("txt-superscript-run", m, "word" + "¹,²" * 10_000 + "\n", ".txt", kind=m)
    add("txt-long-line-300", m, ("Dense retrieval improves recall [1]. " * 9)[:300], ".txt", kind=m)  # fmt: skip
    add("txt-long-line-5000", m, ("Dense retrieval improves recall [1]. " * 140)[:5000], ".txt", kind=m)  # fmt: skip
    add("txt-one-mb-line", m, "word " * 200_000, ".txt", kind=m)
    add("txt-20000-lines", m, "".join(f"Line {i} of text-\n" for i in range(20_000)), ".txt", kind=m)  # fmt: skip
    add("txt-control-chars", m, "Evil \x1b[2J\x1b[31m text \x07 with escapes [1].\n", ".txt", kind=m)  # fmt: skip
    add("txt-nul", m, b"Some text\x00 with a NUL [1].\n", ".txt", kind=m)
    add("txt-utf16-nobom", m, "Some text in UTF-16 [1].\n".encode("utf-16-le"), ".txt", kind=m)
    add("txt-empty", m, b"", ".txt", kind=m)
    add("txt-binary", m, bytes(range(256)) * 100, ".txt", kind=m)
    add("tex-abs-bibliography", m, "\\section{A}\nText \\cite{a}.\n\\bibliography{/nonexistent/abs/refs}\n", ".tex", kind=m)  # fmt: skip
    add("tex-deep-braces", m, "\\section{" + "{" * 20_000 + "x" + "}" * 20_000 + "}\n", ".tex", kind=m)  # fmt: skip
    add("tex-unclosed-env", m, "\\begin{document}\n\\begin{abstract}\nNever closed \\cite{x\n", ".tex", kind=m)  # fmt: skip
    add("tex-cite-1000-keys", m, "Text \\cite{" + ",".join(f"k{i}" for i in range(1000)) + "}.\n", ".tex", kind=m)  # fmt: skip
    add("tex-unclosed-cite", m, "Text \\cite{" + "a," * 20_000 + "\n", ".tex", kind=m)
    add("tex-many-optional", m, "\\cite" + "[x]" * 10_000 + "{a}\n", ".tex", kind=m)
    add("tex-thebibliography-junk", m, "\\begin{thebibliography}{9}\n" + "\\bibitem{" * 2000 + "\n", ".tex", kind=m)  # fmt: skip
    add("fifo-tex", m, lambda p: os.mkfifo(p), ".tex", kind=m)
    add("dev-zero-md", m, lambda p: p.symlink_to("/dev/zero"), ".md", kind=m)
    add("loop-tex", m, lambda p: p.symlink_to(p), ".tex", kind=m)
    add("pdf-manuscript-truncated", m, _tiny_pdf()[:900], ".pdf", kind=m)
    add("pdf-manuscript-ok", m, _tiny_pdf(), ".pdf", kind=m)
    add("pdf-manuscript-20000-lines", m, _long_pdf, ".pdf", kind=m)


def _long_pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=600, height=14000)
    text = "\n".join(f"Line {i} of one very long page with a hyphen- " for i in range(20_000))
    page.insert_textbox(pymupdf.Rect(10, 10, 590, 13990), text, fontsize=0.6)
    doc.save(path)
    doc.close()
