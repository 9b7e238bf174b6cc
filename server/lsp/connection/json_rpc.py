"""The JSON-RPC protocol of the server: pygls' LSP protocol, with the answers the spec asks for
where pygls gives none.

* A request whose params do not match the LSP schema (a string where a position belongs, a
  missing field): pygls turns it into an exception inside its reader loop and drops the
  message, so the client waits forever. Here it gets InvalidParams with the request's id.
* A body that is no JSON, and a frame that could not be read (framing.py): a ParseError
  response with a null id (JSON-RPC 2.0: the id could not be read), and a warning in the log.
  pygls would pop up "Error in server" in the editor for each.
* A request after `shutdown`: InvalidRequest (LSP 3.17, "shutdown"). pygls drops it, and the
  client waits forever. Notifications after shutdown are dropped; `exit` still exits, once the
  requests still running (the `shutdown` itself) are answered.
"""

from __future__ import annotations

import asyncio
import json
import logging
from types import SimpleNamespace
from typing import Any

from lsprotocol.types import EXIT
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol

from onnxlens.server.lsp.connection.framing import FramingError

log = logging.getLogger(__name__)

EXIT_GRACE = 10.0  # seconds `exit` waits for the answers of requests still running

# A message handle_message ignores (its jsonrpc version does not match): the request was
# answered already.
_ANSWERED = SimpleNamespace(jsonrpc="answered")


class OnnxlensProtocol(LanguageServerProtocol):
    def receive(self, body: bytes) -> None:
        """One message's body, as the frame reader delivered it."""
        try:
            message = json.loads(body, object_hook=self.structure_message)
        except (ValueError, RecursionError) as error:  # not JSON (UnicodeDecodeError is a ValueError)
            self.refuse_unreadable(f"the message is no JSON: {error}")
            return
        except JsonRpcException as error:  # a notification or response pygls cannot read
            log.warning("onnxlens: a message that does not match the LSP schema was dropped: %s", error)
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but no JSON-RPC message (a list, a number)
            self.refuse_unreadable("the message is no JSON-RPC object")
            return
        try:
            self.handle_message(message)
        except Exception:  # noqa: BLE001 - one message's failure must not end the connection
            log.exception("onnxlens: a message from the client could not be handled")

    def refuse_unreadable(self, reason: str) -> None:
        log.warning("onnxlens: unreadable message from the client (%s); answered with a parse error", reason)
        self._send_response(None, None, JsonRpcParseError(message=f"Parse error: {reason}").to_response_error())

    def framing_error(self, error: FramingError) -> None:
        self.refuse_unreadable(f"{error.reason}; skipped to the next message")

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if not (isinstance(data, dict) and "method" in data and "id" in data):
                raise  # a notification or a response: nobody waits for an answer
            log.warning("invalid params for %r (request %r): answered with an error",
                        data.get("method"), data.get("id"))
            answer = JsonRpcInvalidParams(
                message=f"invalid params for {data.get('method')!r}: they do not match the "
                        "LSP schema") if not isinstance(error, JsonRpcInvalidParams) else error
            self._send_response(data["id"], None, answer.to_response_error())
            return _ANSWERED

    def handle_message(self, message) -> None:
        method = getattr(message, "method", None)
        if self._shutdown and method is not None and method != EXIT and getattr(message, "id", None) is not None:
            log.warning("onnxlens: %s after shutdown: answered with InvalidRequest", method)
            self._send_response(message.id, None, JsonRpcInvalidRequest(
                message=f"the server is shut down: {method} is not accepted after shutdown").to_response_error())
            return
        if method == EXIT and self._exit_after_answers(message):
            return
        super().handle_message(message)

    def _exit_after_answers(self, message) -> bool:
        """`exit` while requests are still being answered (a client that sends `shutdown` and
        `exit` without waiting for the answer between them): exit once they are answered, at
        most EXIT_GRACE seconds later, instead of closing the output under their answers."""
        pending = [future for future in self._request_futures.values() if not future.done()]
        if not pending:
            return False
        loop = asyncio.get_running_loop()
        remaining = set(pending)
        exited = False

        def exit_now() -> None:
            nonlocal exited
            if not exited:
                exited = True
                super(OnnxlensProtocol, self).handle_message(message)

        def answered(future) -> None:  # after pygls' own callback, which sent the answer
            remaining.discard(future)
            if not remaining:
                loop.call_soon_threadsafe(exit_now)

        for future in pending:
            future.add_done_callback(answered)
        loop.call_later(EXIT_GRACE, exit_now)
        return True
