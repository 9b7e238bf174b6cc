"""A helper process for the language server's CPU-heavy pure functions.

Parsing an editor's buffer with `ast` holds the GIL for the whole parse (a 13 MB generated file:
7–18 s here), so a thread does not keep the server's event loop answering; another process
does. `Offload.call(function, *args)` runs `function(*args)` in the helper and returns its
result; the event loop goes on meanwhile.

* The helper is `python -m onnxlens.server.offload`, started on first use with the server's own
  interpreter and isolation flag, in the filesystem root (exporter/launch.py). It exits when its
  stdin closes, and on Linux is killed when the server dies, even in the middle of a call.
* Functions are top-level functions (pickled by reference); arguments and results are pickled.
  Both ends are this package, and the helper runs none of the workspace's code (it reads text).
* One call at a time. A call that is cancelled (the client cancelled its request) or runs over
  `timeout` kills the helper, which the next call starts again; OffloadError says why. An
  exception raised by the function is raised by `call`.

Torch-free and LSP-free.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

from onnxlens.exporter.launch import WORKING_DIRECTORY, interpreter_environment

T = TypeVar("T")
OFFLOAD_TIMEOUT = 60.0  # seconds a call may take (a 2 MB buffer parses in ~3 s here)
_LENGTH = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1


class OffloadError(Exception):
    """The helper did not answer: it timed out, died, or could not start."""


class Offload:
    def __init__(self, timeout: float = OFFLOAD_TIMEOUT) -> None:
        self.timeout = timeout
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.returncode is None else None

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        async with self._lock:
            try:
                ok, value = await asyncio.wait_for(self._exchange(function, args), self.timeout)
            except asyncio.TimeoutError:
                await self.close()
                raise OffloadError(f"{function.__name__} took over {self.timeout:g} s: stopped") from None
            except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError) as error:
                await self.close()
                raise OffloadError(f"the helper process failed: {error!r}") from None
            except BaseException:  # cancelled: the helper is busy with work nobody wants
                await self.close()
                raise
        if not ok:
            raise value
        return value

    async def _exchange(self, function: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
        process = await self._started()
        assert process.stdin is not None and process.stdout is not None
        payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        process.stdin.write(_LENGTH.pack(len(payload)) + payload)
        await process.stdin.drain()
        (length,) = _LENGTH.unpack(await process.stdout.readexactly(_LENGTH.size))
        return pickle.loads(await process.stdout.readexactly(length))

    async def _started(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            isolated = ["-I"] if sys.flags.isolated else []
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, *isolated, "-m", "onnxlens.server.offload", str(os.getpid()), cwd=WORKING_DIRECTORY,
                env=interpreter_environment(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        return self._process

    async def close(self) -> None:
        """Stop the helper (a call in flight fails)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def _die_with(parent: int) -> None:
    """SIGKILL when the server dies, even in the middle of a call (stdin's end is only seen
    between calls). Linux only; elsewhere the helper ends at the next read."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the server died before prctl
        os._exit(0)


def main(parent: int) -> None:
    """The helper: one request at a time from stdin, its answer to stdout, until stdin closes."""
    _die_with(parent)
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print must not corrupt the replies
    while (header := _read_exactly(requests, _LENGTH.size)) is not None:
        body = _read_exactly(requests, _LENGTH.unpack(header)[0])
        if body is None:
            return
        function, args = pickle.loads(body)
        try:
            answer = (True, function(*args))
        except Exception as error:  # noqa: BLE001 - handed to the caller, who decides
            answer = (False, error)
        try:
            payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - an exception that does not pickle
            payload = pickle.dumps((False, RuntimeError(f"{type(answer[1]).__name__}: {error}")))
        replies.write(_LENGTH.pack(len(payload)) + payload)
        replies.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]))
