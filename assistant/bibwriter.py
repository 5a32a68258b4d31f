"""The one BibTeX writer: bibtexparser v2 lays the entries out; this module formats the values.

Both the library export (:mod:`assistant.library.export`) and the reference-list stubs
(:mod:`assistant.documents.references`) write through :func:`entry_text`, so every written value
is on one line (issue #29: no value of a received library may start a line of its own),
escaped for BibTeX/LaTeX, and laid out the same way::

    @article{key,
      title = {A Title},
      year = {2020}
    }
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import bibtexparser
from bibtexparser.model import Entry, Field
from bibtexparser.writer import BibtexFormat

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
}
_TRANS = str.maketrans(_ESCAPES)
#: Every line break ``str.splitlines`` knows (with the blanks around it).
_LINE_BREAKS = re.compile(r"[ \t]*[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+[ \t]*")

_FORMAT = BibtexFormat()
_FORMAT.indent = "  "
_FORMAT.value_column = 0
_FORMAT.block_separator = "\n"
_FORMAT.trailing_comma = False


def one_line(value: str) -> str:
    """``value`` on one line: a line break (BibTeX reads it as a space anyway) becomes a space, so
    that no value of a received library can start a line of its own in the written file."""
    value = str(value)
    if value.isprintable():  # (no line break is printable: the common case, without a regex)
        return value
    return _LINE_BREAKS.sub(" ", value)


def escape(value: str) -> str:
    """Escape the characters BibTeX/LaTeX treat specially (``& % $ # _ { } ~ \\``)."""
    value = value.translate(_TRANS)
    return value.replace("\u00a0", "~")


def braced(value: str, verbatim: bool = False) -> str:
    """``{value}`` on one line and escaped; ``verbatim`` values (DOI, URL, file) are written
    unescaped, as biblatex reads them, except for their braces (``\\{`` is read back)."""
    value = one_line(value)
    if verbatim:  # braces inside a URL/DOI/path must not close the field
        return "{" + value.replace("{", r"\{").replace("}", r"\}") + "}"
    return "{" + escape(value) + "}"


def names(people: Iterable[str]) -> str:
    """``{A and B}``; a name without a comma but with spaces (an institution) is braced so that
    BibTeX does not split it into first and last names."""
    out = []
    for name in map(one_line, people):
        text = escape(name)
        out.append(f"{{{text}}}" if "," not in name and " " in name.strip() else text)
    return "{" + " and ".join(out) + "}"


def entry_text(entry_type: str, key: str, fields: Iterable[tuple[str, str]]) -> str:
    """One ``@type{key, ...}`` entry ending in a newline, written by bibtexparser's writer.

    ``fields`` are ``(name, value)`` pairs in output order whose values are already BibTeX
    values (:func:`braced`, :func:`names`, or a bare macro such as ``jan``): the writer adds
    no enclosing or encoding of its own (an empty unparse stack)."""
    entry = Entry(
        one_line(entry_type or "misc"),
        one_line(key or ""),
        [Field(name, one_line(value)) for name, value in fields],
    )
    # one entry per library: bibtexparser refuses two entries with one key in a library, and
    # an export must still write a library that holds such a pair
    return bibtexparser.write_string(
        bibtexparser.Library([entry]), unparse_stack=[], bibtex_format=_FORMAT
    )
