"""``assistant lsp`` survives any byte sequence (#29 item 5, #37 item 7): malformed frames get a
JSON-RPC error and the stream resynchronises, oversized frames are refused without reading them,
requests after ``shutdown`` get InvalidRequest, work-done progress begins and ends."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assistant.lsp.client import StdioClient

ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env.update(
        ASSISTANT_HOME=str(tmp_path / "home"),
        ASSISTANT_DB=str(tmp_path / "library.sqlite"),
        ASSISTANT_MODELS=str(tmp_path / "no-models"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.fixture()
def server(tmp_path):
    client = StdioClient(
        [sys.executable, "-m", "assistant.cli", "lsp", "--no-recommend"],
        env=_env(tmp_path),
        handlers={"window/workDoneProgress/create": lambda params: None},
        stderr_path=tmp_path / "server.log",
    )
    client.initialize(tmp_path)
    yield client
    client.close()


def _raw(client: StdioClient, data: bytes) -> None:
    client.proc.stdin.write(data)
    client.proc.stdin.flush()


def _frame(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return header % len(body) + body


def _alive(client: StdioClient, msg_id: int) -> dict:
    """A hover request written raw with ``msg_id``; its answer (any result or error)."""
    _raw(client, _frame(_hover_body(msg_id)))
    return client.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout=20)


def _hover_body(msg_id: int) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": %d, "method": "textDocument/hover", "params": '
        b'{"textDocument": {"uri": "file:///nowhere.tex"}, '
        b'"position": {"line": 0, "character": 0}}}' % msg_id
    )


def _parse_errors(client: StdioClient) -> list[dict]:
    return [m for m in client.messages if m.get("error", {}).get("code") == -32700]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(_frame(_hover_body(501), b"content-length: %d\r\n\r\n"), id="lower-case"),
        pytest.param(_frame(_hover_body(501), b"Content-Length: %d\n\n"), id="lf-only"),
    ],
)
def test_lenient_headers_are_answered(server, frame):
    _raw(server, frame)
    reply = server.wait_for(lambda m: m.get("id") == 501, timeout=20)
    assert "result" in reply
    assert _alive(server, 502).get("result", "x") is None


@pytest.mark.parametrize(
    "junk",
    [
        pytest.param(b'Content-Length: 400\r\n\r\n{"jsonrpc": "2.0", "id"', id="short-body"),
        pytest.param(b"garbage \x00\xff\xfe no header at all\r\n\r\n", id="garbage"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, id="binary"),
        pytest.param(b'Content-Length: 12\r\n\r\n{"a": \xff\xfe }', id="bad-utf8"),
        pytest.param(b"Content-Length: x\r\nContent-Type: y\r\n\r\n", id="bad-length"),
    ],
)
def test_malformed_frame_gets_a_parse_error_and_the_stream_resynchronises(server, junk):
    _raw(server, junk)
    reply = _alive(server, 601)
    assert "result" in reply, reply
    server.wait_for(lambda m: m.get("error", {}).get("code") == -32700, timeout=10)
    assert _alive(server, 602)["result"] is None


def test_huge_content_length_is_refused_without_reading_it(server):
    _raw(server, b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 100_000)
    error = server.wait_for(lambda m: m.get("error", {}).get("code") == -32600, timeout=20)
    assert "1000000000000" in error["error"]["message"]
    assert "result" in _alive(server, 701)
    assert server.proc.poll() is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 801, "method": "textDocument/hover", "params": '
            b'{"textDocument": {"uri": "file:///a.tex"}, "position": {"line": '
            + b"9" * 5000
            + b', "character": 0}}}',
            id="5000-digits",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 801, "method": "textDocument/hover", "params": '
            + b"[" * 50_000
            + b"]" * 50_000
            + b"}",
            id="50000-levels",
        ),
    ],
)
def test_numbers_and_nesting_json_cannot_hold_get_an_answer(server, body):
    _raw(server, _frame(body))
    reply = server.wait_for(lambda m: m.get("id") == 801, timeout=20)
    assert reply["error"]["code"] in (-32700, -32602, -32600)
    assert "result" in _alive(server, 802)


def test_requests_after_shutdown_get_invalid_request(tmp_path):
    """Started as editors start it (``--stdio``: the default transport, accepted)."""
    client = StdioClient(
        [sys.executable, "-m", "assistant.cli", "lsp", "--stdio", "--no-recommend"],
        env=_env(tmp_path),
        stderr_path=tmp_path / "server.log",
    )
    try:
        client.initialize(tmp_path)
        assert client.request("shutdown", None, timeout=20) is None
        reply = _alive(client, 901)
        assert reply["error"]["code"] == -32600
        client.notify("exit", None)
        assert client.proc.wait(timeout=20) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


def test_work_done_progress_begins_and_ends(tmp_path):
    """Models that cannot load (none installed) still end the progress the server began."""
    client = StdioClient(
        [sys.executable, "-m", "assistant.cli", "lsp"],
        env=_env(tmp_path),
        handlers={"window/workDoneProgress/create": lambda params: None},
        stderr_path=tmp_path / "server.log",
    )
    try:
        client.initialize(tmp_path)
        kinds = []

        def progress(m, kind):
            return m.get("method") == "$/progress" and m["params"]["value"]["kind"] == kind

        begin = client.wait_for(lambda m: progress(m, "begin"), timeout=60)
        kinds.append(begin["params"]["value"]["title"])
        end = client.wait_for(lambda m: progress(m, "end"), timeout=120)
        assert end["params"]["token"] == begin["params"]["token"]
        assert end["params"]["value"]["message"]
        assert "ValueError" not in (tmp_path / "server.log").read_text("utf-8", "replace")
    finally:
        client.close()


def test_frame_reader_units():
    from assistant.lsp.framing import FrameReader

    errors: list[tuple] = []
    reader = FrameReader(lambda *a: errors.append(a), max_body=1000)
    ok = b'{"jsonrpc":"2.0","method":"x"}'
    # split anywhere, the same bodies come out
    data = _frame(ok) + _frame(ok, b"content-length:%d\n\n") + _frame(ok)
    bodies = []
    for i in range(len(data)):
        bodies += reader.feed(data[i : i + 1])
    assert bodies == [ok] * 3 and errors == []
    # a refused body is skipped in bounded memory; the next frame still comes through
    assert reader.feed(b"Content-Length: 5000\r\n\r\n" + b"y" * 3000) == []
    assert len(reader.buf) <= 64 and errors[-1][1] == -32600
    assert reader.feed(b"y" * 2000 + _frame(ok)) == [ok]


def test_frame_reader_recovers_every_frame_after_fuzzed_garbage():
    """Frames as a fuzzer writes them: random bytes (CR, LF, braces, colons, digits, a cut-off
    header) before each valid frame, the stream split at random points; every valid frame is
    still read, and memory stays bounded."""
    import random

    from assistant.lsp.framing import FrameReader

    rng = random.Random(29)
    alphabet = b'\r\n{}:[]"0123456789 abcxyzContent-Length\x00\xff'
    ok = b'{"jsonrpc":"2.0","id":%d,"method":"x"}'
    for trial in range(300):
        reader = FrameReader(lambda *a: None, max_body=10_000)
        junk = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 300)))
        if trial % 3 == 0:
            junk += b'Content-Length: 5\r\n\r\n{"a"'  # a short body right before the frame
        body = ok % trial
        data = junk + b"\r\n" + _frame(body)
        bodies, pos = [], 0
        while pos < len(data):
            step = rng.randint(1, 64)
            bodies += reader.feed(data[pos : pos + step])
            pos += step
        assert body in bodies, (trial, junk)
        assert len(reader.buf) <= 64 * 1024 + 64
