"""Work-done progress for one export (window/workDoneProgress/create, then $/progress).

Only used when the client announced `window.workDoneProgress` (Client.begin_progress passes no
manager otherwise); then every method is a no-op, so the export code does not branch on the client.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from lsprotocol import types as lsp
from pygls.progress import Progress as ProgressManager

log = logging.getLogger(__name__)

# A client that never answers the create request must not hold up the export.
CREATE_TIMEOUT_S = 2.0


class Progress:
    def __init__(self, manager: ProgressManager | None, token: str | None) -> None:
        self._manager = manager
        self.token = token
        self._last_message: str | None = None

    @classmethod
    async def begin(cls, manager: ProgressManager | None, message: str, *, cancellable: bool,
                    on_cancel: Callable[[], None] | None = None) -> Progress:
        """`manager`: pygls' progress API, None when the client does not show progress."""
        if manager is None:
            return cls(None, None)
        token = f"onnxlens-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(manager.create_async(token), CREATE_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - no progress bar is better than no export
            log.warning("client did not create progress %s: %s", token, error)
            return cls(None, None)
        if on_cancel is not None:
            # pygls cancels this future on window/workDoneProgress/cancel for the token.
            manager.tokens[token].add_done_callback(lambda future: on_cancel() if future.cancelled() else None)
        manager.begin(token, lsp.WorkDoneProgressBegin(title="onnxlens", message=message, cancellable=cancellable))
        return cls(manager, token)

    def report(self, message: str) -> None:
        if self._manager is None or self.token is None or message == self._last_message:
            return
        self._last_message = message
        self._manager.report(self.token, lsp.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        if self._manager is None or self.token is None:
            return
        self._manager.end(self.token, lsp.WorkDoneProgressEnd(message=message))
        self._manager.tokens.pop(self.token, None)
        self.token = None
