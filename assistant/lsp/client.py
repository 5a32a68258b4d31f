"""A small LSP client over a subprocess's stdio (JSON-RPC with Content-Length framing).

Used by the test suite, ``tools/bench_lsp.py`` and smoke checks to drive ``assistant lsp`` the
way an editor does: requests, notifications, the server's own requests (answered by
``handlers``), and raw bytes for malformed-message checks.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from assistant.errors import AssistantError


class LspError(AssistantError):
    """An error response: ``code`` and ``message`` as the server sent them."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class StdioClient:
    """Start ``command`` and talk LSP to it. ``handlers[method](params)`` answers the server's
    requests (``workspace/applyEdit``, ``window/showMessageRequest``, ...); unanswered ones get
    a null result."""

    def __init__(
        self,
        command: list[str],
        env: dict | None = None,
        cwd: str | Path | None = None,
        handlers: dict[str, Callable[[Any], Any]] | None = None,
        stderr_path: str | Path | None = None,
    ) -> None:
        self.handlers = dict(handlers or {})
        self._stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self._ids = itertools.count(1)
        self._pending: dict[Any, Future] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self.messages: list[dict] = []  # everything received, in order
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # --- wire ---------------------------------------------------------------------------------
    def send_raw(self, body: bytes) -> None:
        """One framed message with an arbitrary (possibly malformed) body."""
        header = f"Content-Length: {len(body)}\r\n\r\n".encode("ascii")
        with self._lock:
            self.proc.stdin.write(header + body)
            self.proc.stdin.flush()

    def _send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode("utf-8"))

    def _read_loop(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self._fail_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            body = out.read(length)
            try:
                message = json.loads(body)
            except ValueError:
                continue
            self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        with self._cond:
            self.messages.append(message)
            self._cond.notify_all()
        if "method" in message and "id" in message:
            self.server_requests.append(message)
            handler = self.handlers.get(message["method"])
            try:
                result = handler(message.get("params")) if handler else None
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            except Exception as exc:
                self._send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32603, "message": str(exc)},
                    }
                )
        elif "method" in message:
            with self._cond:
                self.notifications.append(message)
                self._cond.notify_all()
        else:
            future = self._pending.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)

    def _fail_all(self) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ConnectionError("the server closed its output"))
        self._pending.clear()
        with self._cond:
            self._cond.notify_all()

    # --- API ----------------------------------------------------------------------------------
    def request_future(self, method: str, params: Any = None) -> tuple[int, Future]:
        msg_id = next(self._ids)
        future: Future = Future()
        self._pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id, future

    def request(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        """The result of a request; raises :class:`LspError` for an error response."""
        _, future = self.request_future(method, params)
        return result_of(future.result(timeout=timeout))

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 60.0) -> dict:
        """The first received message (any kind) matching ``predicate``, waiting up to ``timeout``."""
        seen = 0
        with self._cond:
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                if self.proc.poll() is not None:
                    raise ConnectionError("the server exited")
                if not self._cond.wait(timeout=timeout):
                    raise TimeoutError("no matching message")

    def initialize(
        self, root: Path, capabilities: dict | None = None, options: dict | None = None
    ) -> dict:
        params = {
            "processId": None,
            "rootUri": Path(root).resolve().as_uri(),
            "capabilities": capabilities if capabilities is not None else default_capabilities(),
        }
        if options is not None:
            params["initializationOptions"] = options
        result = self.request("initialize", params)
        self.notify("initialized", {})
        return result

    def open(self, path: Path, language_id: str, text: str | None = None, version: int = 1) -> str:
        uri = Path(path).resolve().as_uri()
        text = Path(path).read_text(encoding="utf-8") if text is None else text
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": language_id,
                    "version": version,
                    "text": text,
                }
            },
        )
        return uri

    def close(self, timeout: float = 30.0) -> int:
        """``shutdown`` + ``exit``; the server's exit code."""
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
            return self.proc.wait(timeout=timeout)
        except Exception:
            self.proc.kill()
            return self.proc.wait(timeout=timeout)
        finally:
            if self._stderr not in (None, subprocess.DEVNULL):
                self._stderr.close()


def result_of(message: dict) -> Any:
    if "error" in message:
        err = message["error"]
        raise LspError(err.get("code"), err.get("message", ""), err.get("data"))
    return message.get("result")


def default_capabilities() -> dict:
    """What a typical editor announces (workspace edits with file creation, progress, markdown)."""
    return {
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]},
        },
        "window": {"workDoneProgress": True},
        "textDocument": {
            "completion": {
                "completionItem": {
                    "documentationFormat": ["markdown", "plaintext"],
                    "resolveSupport": {"properties": ["documentation"]},
                }
            },
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "publishDiagnostics": {"versionSupport": True},
        },
    }
