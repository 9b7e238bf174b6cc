"""Work-done progress for one export (window/workDoneProgress/create, then $/progress).

Only used when the client announced `window.workDoneProgress`; otherwise every method is a no-op,
so the export code does not branch on the client.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

# A client that never answers the create request must not hold up the export.
CREATE_TIMEOUT_S = 2.0


def client_supports_progress(server: LanguageServer) -> bool:
    window = server.client_capabilities.window
    return bool(window and window.work_done_progress)


class Progress:
    def __init__(self, server: LanguageServer, token: str | None) -> None:
        self._server = server
        self.token = token
        self._last_message: str | None = None

    @classmethod
    async def begin(cls, server: LanguageServer, message: str, *, cancellable: bool,
                    on_cancel: Callable[[], None] | None = None) -> Progress:
        if not client_supports_progress(server):
            return cls(server, None)
        token = f"onnxlens-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(server.work_done_progress.create_async(token), CREATE_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - no progress bar is better than no export
            log.warning("client did not create progress %s: %s", token, error)
            return cls(server, None)
        if on_cancel is not None:
            # pygls cancels this future on window/workDoneProgress/cancel for the token.
            server.work_done_progress.tokens[token].add_done_callback(
                lambda future: on_cancel() if future.cancelled() else None)
        server.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
            title="onnxlens", message=message, cancellable=cancellable))
        return cls(server, token)

    def report(self, message: str) -> None:
        if self.token is None or message == self._last_message:
            return
        self._last_message = message
        self._server.work_done_progress.report(self.token, lsp.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self._server.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
        self._server.work_done_progress.tokens.pop(self.token, None)
        self.token = None
