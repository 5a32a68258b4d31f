"""JSON-RPC hardening: every bad message gets a proper error response, the server keeps running.

pygls answers unknown methods itself (``-32601``). This protocol adds the rest of JSON-RPC 2.0:
a body that is not JSON -> ``-32700`` (id null); a message that is not a request object (no or
a wrong ``jsonrpc``, a batch array, a bare value) -> ``-32600``; a known method with parameters
of the wrong shape -> ``-32602`` for that request's id.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass
class _Rejected:
    """A message that could not be turned into a request; answered with ``code``."""

    id: Any
    code: int
    message: str


def _valid_id(value: Any) -> Any:
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class SafeProtocol(LanguageServerProtocol):
    """pygls' LSP protocol answering malformed messages instead of only logging them."""

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "method" in data and "id" in data:
                code = INVALID_PARAMS if isinstance(exc, JsonRpcInvalidParams) else exc.code
                return _Rejected(
                    _valid_id(data.get("id")),
                    code,
                    f"invalid parameters for {data.get('method')!r}",
                )
            raise

    def handle_message(self, message):
        if isinstance(message, _Rejected):
            self.send_error(message.id, message.code, message.message)
            return
        version = getattr(message, "jsonrpc", None)
        if version is None or version != self.VERSION:
            msg_id = _valid_id(message.get("id")) if isinstance(message, dict) else None
            if msg_id is None:
                msg_id = _valid_id(getattr(message, "id", None))
            self.send_error(
                msg_id,
                INVALID_REQUEST,
                'not a JSON-RPC 2.0 request (expected an object with "jsonrpc": "2.0")',
            )
            return
        if self._shutdown and getattr(message, "method", "") != "exit":
            msg_id = getattr(message, "id", None)
            if msg_id is not None and getattr(message, "method", None):
                self.send_error(msg_id, INVALID_REQUEST, "the server is shutting down")
            return  # notifications and responses after shutdown are dropped
        super().handle_message(message)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """A JSON-RPC error response (``id`` null when the request's id is unknown)."""
        self._send_data(
            {"jsonrpc": self.VERSION, "id": msg_id, "error": {"code": code, "message": message}}
        )


def report_unreadable(protocol: SafeProtocol, error: Exception) -> bool:
    """Answer a message body that is not JSON with a parse error; True when it was one."""
    if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
        protocol.send_error(None, PARSE_ERROR, f"parse error: {error}")
        return True
    return False
