"""The JSON-RPC protocol of the server: pygls' LSP protocol, answering malformed requests.

pygls turns a request whose params do not match the LSP schema (a string where a position
belongs, a missing field) into an exception inside its reader loop and drops the message: the
client never gets a response and waits forever. Here such a request gets the JSON-RPC error
response the spec asks for (InvalidParams, with the request's id), and the server goes on.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)

# A message handle_message ignores (its jsonrpc version does not match): the request was
# answered already.
_ANSWERED = SimpleNamespace(jsonrpc="answered")


class OnnxlensProtocol(LanguageServerProtocol):
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
