"""The user's text files (manuscripts, .bib files) read and written as they are.

A file keeps its encoding (UTF-8, UTF-8 with BOM, UTF-16, or a legacy 8-bit code page that an
older LaTeX project may use), and its line endings (LF or CRLF): opening and saving a Windows
Latin-1 ``.tex`` file must not turn it into a Unix UTF-8 one behind the user's back.
"""

from __future__ import annotations

import codecs
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from assistant.errors import AssistantError

#: Legacy encodings tried, in order, when a file is not UTF-8 (latin-1 decodes any byte).
LEGACY_ENCODINGS = ("cp1252", "latin-1")


class BinaryFileError(AssistantError, ValueError):
    """The file is not text (NUL bytes without a UTF-16 byte-order mark)."""


@dataclass(frozen=True)
class TextFormat:
    """How a text file is stored: the codec to write it back with and its line ending."""

    encoding: str = "utf-8"  # "utf-8", "utf-16-le", "utf-16-be", "cp1252" or "latin-1"
    newline: str = "\n"  # "\n" or "\r\n"
    bom: bytes = b""  # the byte-order mark the file starts with (kept when it is rewritten)

    @property
    def is_utf(self) -> bool:
        return self.encoding.startswith("utf")

    def describe(self) -> str:
        return f"{self.encoding}{' with BOM' if self.bom else ''}, {'CRLF' if self.newline == chr(13) + chr(10) else 'LF'}"


def decode_text(data: bytes) -> tuple[str, TextFormat]:
    """``data`` as text with ``\\n`` line endings, and the format to write it back in.
    Raises :class:`BinaryFileError` for data that is not text."""
    bom, encoding = _bom(data)
    if not bom and b"\x00" in data[:8192]:
        raise BinaryFileError("binary file, not text")
    body = data[len(bom) :]
    if bom:
        text = body.decode(encoding)
    else:
        for encoding in ("utf-8", *LEGACY_ENCODINGS):
            try:
                text = body.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
    return text.replace("\r\n", "\n"), TextFormat(encoding, newline, bom)


def _bom(data: bytes) -> tuple[bytes, str]:
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return bom, encoding
    return b"", "utf-8"


def encode_text(text: str, fmt: TextFormat, whole_file: bool = True) -> bytes:
    """``text`` (``\\n`` line endings) stored in ``fmt``, with its byte-order mark when it is the
    ``whole_file`` (not when it is appended); raises ``UnicodeEncodeError`` when a character does
    not exist in a legacy encoding."""
    if fmt.newline != "\n":
        text = text.replace("\r\n", "\n").replace("\n", fmt.newline)
    return (fmt.bom if whole_file else b"") + text.encode(fmt.encoding)


def unencodable(text: str, fmt: TextFormat) -> list[str]:
    """The distinct characters of ``text`` that ``fmt``'s encoding cannot store (in order)."""
    if fmt.is_utf:
        return []
    bad: list[str] = []
    for ch in text:
        if ch not in bad:
            try:
                ch.encode(fmt.encoding)
            except UnicodeEncodeError:
                bad.append(ch)
    return bad


def latex_escape_unencodable(text: str, fmt: TextFormat) -> str:
    """Replace the characters ``fmt`` cannot store by their LaTeX macros (``č`` → ``{\\v{c}}``), as
    BibTeX reads them; raises ``ValueError`` naming a character that has no macro."""
    from pylatexenc.latexencode import unicode_to_latex

    for ch in unencodable(text, fmt):
        macro = unicode_to_latex(ch)
        if macro == ch:
            raise ValueError(
                f"{ch!r} (U+{ord(ch):04X}) cannot be written in {fmt.encoding} and has no LaTeX macro"
            )
        text = text.replace(ch, macro if macro.startswith("{") else "{" + macro + "}")
    return text


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` all at once (a temporary file in the same folder, fsync,
    ``os.replace``): a failure leaves the old file as it was. An existing file keeps its
    permissions; a new one gets the usual ones (0666 less the umask, not mkstemp's 0600)."""
    path = Path(path)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
