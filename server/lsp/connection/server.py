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
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from onnxlens.server.lsp.connection.framing import FrameReader, FramingError
from onnxlens.server.lsp.connection.json_rpc import OnnxlensProtocol

log = logging.getLogger("onnxlens.server.lsp")

VERSION = "0.1.0"
READ_CHUNK = 1 << 16  # bytes read from stdin at a time
DISCONNECT_CLEANUP_S = 15.0  # bound on stopping jobs and the worker after the client went away


class OnnxlensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("onnxlens", VERSION, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=OnnxlensProtocol)
        # What to stop while the event loop still runs when the client is gone (jobs, the worker).
        self.on_disconnect: Callable[[], Awaitable[None]] | None = None

    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop with two differences.

        Messages are framed by framing.py, not by pygls' reader: a bad header or a body over
        the limit is answered with a parse error and the stream resyncs at the next message
        (pygls goes deaf, or dies of MemoryError).

        When the client just goes away (stdin closed, the editor killed, no shutdown/exit) every
        job and the worker are stopped while the event loop still runs. Otherwise asyncio.run()
        only cancels the tasks, a cancelled export waits for a worker whose replies nobody
        reads any more, and the server, the zygote and the running child outlive the editor."""
        self._stop_event = threading.Event()
        stream = stdin or sys.stdin.buffer
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def read_messages() -> None:
            frames = FrameReader()
            loop = asyncio.get_running_loop()
            while not self._stop_event.is_set():
                data = await loop.run_in_executor(self.thread_pool, stream.read1, READ_CHUNK)
                if not data:
                    return
                for item in frames.feed(data):
                    if isinstance(item, FramingError):
                        self.protocol.framing_error(item)
                    else:
                        self.protocol.receive(item)

        async def connection() -> None:
            try:
                await read_messages()
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
