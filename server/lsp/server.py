"""The connection: pygls' LanguageServer with onnxlens' protocol, and a clean stop when the
client goes away. It knows no feature: `create_language_server` (app.py) registers them.

Never imports torch: exports run in the worker processes behind ExportService.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable

from lsprotocol import types as lsp
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

from .protocol import OnnxlensProtocol

log = logging.getLogger("onnxlens.server.lsp")

VERSION = "0.1.0"
DISCONNECT_CLEANUP_S = 15.0  # bound on stopping jobs and the worker after the client went away


class OnnxlensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("onnxlens", VERSION, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=OnnxlensProtocol)
        # What to stop while the event loop still runs when the client is gone (jobs, the worker).
        self.on_disconnect: Callable[[], Awaitable[None]] | None = None

    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop, plus what pygls does not do when the client just goes away (stdin
        closed, the editor killed, no shutdown/exit): stop every job and the worker while the
        event loop still runs. Otherwise asyncio.run() only cancels the tasks, a cancelled export
        waits for a worker whose replies nobody reads any more, and the server, the zygote and
        the running child outlive the editor."""
        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def connection() -> None:
            try:
                await run_async(stop_event=self._stop_event, reader=reader, protocol=self.protocol,
                                logger=log, error_handler=self.report_server_error)
            finally:
                log.info("onnxlens: the client is gone; stopping the export worker")
                try:
                    if self.on_disconnect is not None:
                        await asyncio.wait_for(self.on_disconnect(), DISCONNECT_CLEANUP_S)
                except Exception as error:  # noqa: BLE001 - exiting anyway
                    log.warning("onnxlens: cleanup after disconnect failed: %r", error)

        try:
            asyncio.run(connection())
        except BrokenPipeError:
            log.error("onnxlens: the connection to the client was lost")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()
