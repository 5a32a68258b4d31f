"""Reading LSP frames from any byte stream: the server survives whatever arrives on stdin.

pygls' reader wants an exact ``Content-Length: N\\r\\n\\r\\n`` header and trusts ``N``: a
lower-case header or LF-only lines leave it deaf, a short body swallows the next frame, and
``Content-Length: 10**12`` reads without bound. This reader instead

- accepts the header name in any case and LF-only line ends (both occur in real clients);
- answers bytes that are not a frame (garbage, a header block without a length) with one
  JSON-RPC parse error and resynchronises on the next ``Content-Length`` header;
- cuts a short body where the next header starts (a raw header line cannot occur inside JSON,
  whose strings hold no raw line breaks), answers it with a parse error and reads on;
- refuses a body over :data:`MAX_BODY` with an error and skips it in bounded chunks;
- answers a body Python's JSON cannot hold (a 5,000-digit number, 50,000 levels of nesting) with
  an error for its ``id`` (invalid parameters, or a request nested too deeply).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

#: the largest message body read (a whole manuscript in didOpen fits many times over)
MAX_BODY = 64 * 1024 * 1024
#: bytes kept while looking for a header in garbage
_MAX_HEADER = 64 * 1024
_CHUNK = 64 * 1024
_HEADER_RE = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,20})[ \t]*\r?\n", re.IGNORECASE)
_FIELD_RE = re.compile(rb"[!-9;-~]+[ \t]*:[^\r\n]*\r?\n")
_BLANK_RE = re.compile(rb"\r?\n")
_END_RE = re.compile(rb"\n\r?\n")
_ID_RE = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,200}")'
)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _parse_int(text: str) -> Any:
    """JSON integers beyond Python's digit limit become floats (validation then refuses them)."""
    return int(text) if len(text) <= 4000 else float(text)


def _request_id(body: bytes) -> Any:
    """The ``id`` of a body JSON could not load, when it stands at the start."""
    m = _ID_RE.match(body[:4096])
    if m is None:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return None


class FrameReader:
    """Splits a byte stream into message bodies; calls ``on_error(id, code, message)`` for
    what is not one."""

    def __init__(self, on_error: Callable[[Any, int, str], None], max_body: int = MAX_BODY):
        self.buf = bytearray()
        self.on_error = on_error
        self.max_body = max_body
        self._garbage = False  # one parse error per run of garbage
        self._skip = 0  # bytes of a refused body still to drop

    def _reject(self, message: str) -> None:
        if not self._garbage:
            self.on_error(None, PARSE_ERROR, message)
        self._garbage = True

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the complete bodies now available."""
        self.buf += data
        out: list[bytes] = []
        while (body := self.pop()) is not None:
            out.append(body)
        return out

    def pop(self) -> bytes | None:
        """The next complete body in the buffer, or None until more bytes arrive."""
        return self._next()

    def rescan(self, body: bytes) -> None:
        """``body`` was not a message (already answered): look for a header inside it (a body
        shorter than its Content-Length swallows the start of the next header)."""
        self.buf[:0] = body[1:]
        self._garbage = True

    def _next(self) -> bytes | None:
        buf = self.buf
        if self._skip:  # a refused body: drop it, unless a header shows the client moved on
            m = _HEADER_RE.search(buf)
            if m is not None and m.start() < self._skip:
                del buf[: m.start()]
                self._skip = 0
            elif len(buf) >= self._skip:
                del buf[: self._skip]
                self._skip = 0
            else:
                cut = max(0, len(buf) - 64)  # the tail may hold the start of a header
                del buf[:cut]
                self._skip -= cut
                return None
        m = _HEADER_RE.search(buf)
        if m is None:
            if not buf.strip():
                buf.clear()  # blank lines between frames
            elif len(buf) > _MAX_HEADER:
                self._reject("parse error: bytes that are not an LSP frame")
                del buf[: len(buf) - 64]
            elif (blank := _END_RE.search(buf)) is not None:
                self._reject("parse error: a header block without Content-Length")
                del buf[: blank.end()]
                return self._next()
            return None
        if buf[: m.start()].strip():
            self._reject("parse error: bytes before the Content-Length header")
        pos = m.end()
        while True:  # further header fields up to the blank line
            blank = _BLANK_RE.match(buf, pos)
            if blank is not None:
                pos = blank.end()
                break
            field = _FIELD_RE.match(buf, pos)
            if field is not None:
                pos = field.end()
                continue
            if b"\n" not in buf[pos:] and len(buf) - pos < _MAX_HEADER:
                return None  # the header is still arriving
            self._reject("parse error: malformed LSP header")
            del buf[: m.end()]
            return self._next()
        length = int(m.group(1))
        if length > self.max_body:
            self.on_error(
                None,
                INVALID_REQUEST,
                f"message of {length} bytes refused (the limit is {self.max_body} bytes)",
            )
            del buf[:pos]
            self._skip = length
            self._garbage = False
            return self._next()
        nxt = _HEADER_RE.search(buf, pos, pos + length)
        if nxt is not None:  # a short body: the next frame starts inside it
            body = bytes(buf[pos : nxt.start()])
            del buf[: nxt.start()]
            self._garbage = False
            return body
        if len(buf) - pos < length:
            return None
        body = bytes(buf[pos : pos + length])
        del buf[: pos + length]
        self._garbage = False
        return body


def decode(body: bytes, object_hook: Callable) -> Any:
    """A body as JSON with ``object_hook`` (huge integers become floats)."""
    return json.loads(body, object_hook=object_hook, parse_int=_parse_int)


async def run_frames(stop_event, stdin: BinaryIO, protocol, error_handler, executor=None) -> None:
    """The server's read loop over ``stdin`` (pygls' ``run_async``, hardened)."""
    loop = asyncio.get_running_loop()
    read = getattr(stdin, "read1", None) or stdin.read
    reader = FrameReader(protocol.send_error)
    while not stop_event.is_set():
        data = await loop.run_in_executor(executor, read, _CHUNK)
        if not data:
            break
        reader.buf += data
        while (body := reader.pop()) is not None:
            try:
                message = decode(body, protocol.structure_message)
            except RecursionError:  # valid JSON nested deeper than Python parses: answer its id
                protocol.send_error(
                    _request_id(body), INVALID_REQUEST, "message nested too deeply to read"
                )
                continue
            except ValueError as exc:  # JSONDecodeError, bad UTF-8: id null (JSON-RPC 2.0)
                protocol.send_error(None, PARSE_ERROR, f"parse error: {str(exc)[:200]}")
                reader.rescan(body)
                continue
            except Exception as exc:
                log.exception("unable to read a message")
                error_handler(exc, None)
                continue
            try:
                protocol.handle_message(message)
            except Exception as exc:
                log.exception("unable to handle a message")
                error_handler(exc, None)
            # let the handler just started read the state its message saw (a request's document
            # version) before the next message in the same chunk changes it
            await asyncio.sleep(0)
