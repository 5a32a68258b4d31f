"""Helpers shared by the importers: reading files safely and the record type they yield."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assistant.errors import AssistantError
from assistant.library.models import ImportIssue, Paper
from assistant.textfile import BinaryFileError, FileRefused, decode_text, read_file


class ImportFileError(AssistantError):
    """A whole file cannot be imported (unreadable, binary, empty, wrong format)."""


@dataclass
class ParsedRecord:
    """One record read from a file, ready for ``Library.add_paper``."""

    paper: Paper
    line: int | None
    fmt: str


@dataclass
class ParsedFile:
    """What a format parser returns for one file (records, skipped count and issues)."""

    path: str
    records: list[ParsedRecord] = field(default_factory=list)
    issues: list[ImportIssue] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    nbytes: int = 0

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(
        self, paper: Paper, line: int | None, fmt: str, raw_year: str = "", label: str = "record"
    ) -> None:
        """Keep ``paper``; a date the importer could not read as a year is kept as written
        (``extra["year"]``, exported as is) and reported as a warning instead of being dropped."""
        raw_year = " ".join(str(raw_year or "").split())
        if raw_year and paper.year is None:
            paper.extra["year"] = raw_year
            self.issues.append(
                ImportIssue(
                    self.path,
                    line or 0,
                    f"{label}: year {raw_year!r} is not a year "
                    "(kept as text, not used by the year filter)",
                    "warning",
                )
            )
        self.records.append(ParsedRecord(paper, line, fmt))


def read_text(path: Path, issues: list[ImportIssue] | None = None) -> str:
    """Decode a text file (:func:`assistant.textfile.decode_text`: UTF-8/UTF-16 with a BOM, else
    UTF-8, else cp1252/latin-1 with a warning naming the first offending line and byte).

    Raises ``ImportFileError`` for unreadable, empty or binary files.
    """
    try:
        data = read_file(path)  # regular files only, size-capped: never a FIFO or /dev/zero
    except FileRefused as exc:
        raise ImportFileError(exc.reason) from exc
    if not data.strip():
        raise ImportFileError("empty file")
    try:
        text, fmt = decode_text(data)
    except BinaryFileError as exc:
        raise ImportFileError("binary file (not a text bibliography)") from exc
    if fmt.encoding.startswith("utf-16") and not fmt.bom and issues is not None:
        issues.append(
            ImportIssue(str(path), 0, f"no byte-order mark; read as {fmt.encoding}", "warning")
        )
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        if issues is not None:
            issues.append(
                ImportIssue(
                    str(path),
                    line,
                    f"{text.count(chr(0))} NUL byte(s) removed (a damaged or padded file?)",
                    "warning",
                )
            )
        text = text.replace("\x00", "")
    if not fmt.is_utf:
        text, bad = _decode_lines(data, fmt.encoding)
        text = text.replace("\x00", "")
        if bad and issues is not None:
            lines = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
            issues.append(
                ImportIssue(
                    str(path),
                    bad[0],
                    f"not valid UTF-8 on {len(bad)} line(s) ({lines}); those lines decoded as "
                    f"{fmt.encoding}, the others as UTF-8",
                    "warning",
                )
            )
    return text


def _decode_lines(data: bytes, legacy: str) -> tuple[str, list[int]]:
    """Each line as UTF-8 when it is valid UTF-8, else in ``legacy``: a UTF-8 file with one
    Latin-1 byte keeps its other records right. Returns the text and the legacy lines."""
    out, bad = [], []
    for n, line in enumerate(data.split(b"\n"), 1):
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(line.decode(legacy, errors="replace"))
            bad.append(n)
    return "\n".join(out), bad


def parse_text_file(path: str | Path, parse_text: Callable[[str, str], ParsedFile]) -> ParsedFile:
    """Read ``path`` with :func:`read_text` and parse it with ``parse_text(text, source)``; decoding
    warnings come first among the issues. Raises ``ImportFileError`` for unreadable files."""
    path = Path(path)
    issues: list[ImportIssue] = []
    result = parse_text(read_text(path, issues), str(path))
    result.issues[:0] = issues
    try:
        result.nbytes = path.stat().st_size
    except OSError:
        pass
    return result
