"""The user's text files (manuscripts, .bib files) read and written as they are.

A file keeps its encoding (UTF-8, UTF-8 with BOM, UTF-16, or a legacy 8-bit code page that an
older LaTeX project may use), and its line endings (LF or CRLF): opening and saving a Windows
Latin-1 ``.tex`` file must not turn it into a Unix UTF-8 one behind the user's back.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import AssistantError, FileRefused
from assistant.filewrite import kind_of, write_bytes

#: Legacy encodings tried, in order, when a file is not UTF-8 (latin-1 decodes any byte).
LEGACY_ENCODINGS = ("cp1252", "latin-1")
#: Size caps of the files the program reads whole (bytes); ``ASSISTANT_MAX_FILE_MB`` overrides.
MAX_TEXT_BYTES = 512 * 1024 * 1024


class BinaryFileError(AssistantError, ValueError):
    """The file is not text (NUL bytes without a UTF-16 byte-order mark)."""


def max_file_bytes(default: int = MAX_TEXT_BYTES) -> int:
    """The size cap for whole-file reads (``ASSISTANT_MAX_FILE_MB`` overrides ``default``)."""
    try:
        return int(float(os.environ["ASSISTANT_MAX_FILE_MB"]) * 1024 * 1024)
    except (KeyError, ValueError):
        return default


def human_size(n: float) -> str:
    """``1.5 MiB``, ``12 KiB``, ``300 B``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" or n >= 10 else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.0f} GiB"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symbolic link loop (the link points back to itself)"
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.EACCES:
        return "permission denied"
    if exc.errno == errno.EISDIR:
        return "is a folder, not a file"
    return exc.strerror or str(exc)


def read_file(
    path: str | os.PathLike[str], limit: int | None = None, head: int | None = None
) -> bytes:
    """The bytes of a regular file (the first ``head`` bytes when given), never blocking: a FIFO,
    a device (``/dev/zero``) or a socket is refused before a byte is read, and so is a file over
    ``limit`` bytes (default :func:`max_file_bytes`). Raises :class:`FileRefused`."""
    path = Path(path)
    limit = max_file_bytes() if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read: {_os_reason(exc)}", file=path) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{kind_of(st.st_mode)}; only regular files are read", file=path)
        want = st.st_size if head is None else min(head, st.st_size)
        if head is None and st.st_size > limit:
            raise FileRefused(
                f"file too large ({human_size(st.st_size)}; the limit is {human_size(limit)}, "
                "set ASSISTANT_MAX_FILE_MB to raise it)",
                file=path,
            )
        chunks, got = [], 0
        while got < want:  # a file growing while read is cut at its size when opened
            chunk = os.read(fd, min(want - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"cannot read: {_os_reason(exc)}", file=path) from exc
    finally:
        os.close(fd)


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
        utf16 = _utf16_without_bom(data[:8192])
        if utf16:
            encoding = utf16
        elif _looks_binary(data[:8192]):
            raise BinaryFileError("binary file, not text")
    body = data[len(bom) :]
    if encoding.startswith("utf-16"):
        text = body.decode(encoding, errors="replace")
        crlf = text.count("\r\n")
        newline = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
        return text.replace("\r\n", "\n"), TextFormat(encoding, newline, bom)
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


def _utf16_without_bom(sample: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when ``sample`` is mostly ASCII stored as UTF-16 without a
    byte-order mark (every other byte NUL), else None."""
    even, odd = sample[0::2], sample[1::2]
    if len(sample) < 4:
        return None
    z_even, z_odd = even.count(0) / len(even), odd.count(0) / max(1, len(odd))

    def texty(half: bytes) -> bool:  # the character bytes are printable, not 0x01 0x02...
        return sum(half.count(b) for b in _CONTROL) < 0.05 * max(1, len(half))

    if z_odd > 0.6 and z_even < 0.05 and texty(even):
        return "utf-16-le"
    if z_even > 0.6 and z_odd < 0.05 and texty(odd):
        return "utf-16-be"
    return None


_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))


def _looks_binary(sample: bytes) -> bool:
    """More than 2 % (and 4) control bytes (compressed or machine data), not a stray NUL."""
    return sum(sample.count(b) for b in _CONTROL) > max(4, 0.02 * len(sample))


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


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    protect: Iterable[str | os.PathLike[str]] = (),
    library: str | os.PathLike[str] | None = None,
) -> None:
    """Replace ``path`` by ``data`` all at once through :func:`assistant.filewrite.write_bytes`
    (temporary file in the same folder, fsync, ``os.replace``; never through a symbolic link,
    never a FIFO, a device, a folder, a read-only file, an SQLite database, one of ``protect`` or
    one of ``library``'s own files). Raises :class:`FileRefused` or ``OSError``."""
    write_bytes(path, data, protect=protect, library=library)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """The non-blank lines of a JSON-lines file as ``(line number, object)``.

    A line that is not JSON raises ``ValueError`` naming ``file:line``.
    """
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
