"""The language server's helper process (server/offload.py), run for real: results and
exceptions come back, a cancelled or timed-out call kills the helper and the next call gets a
new one, and closing it leaves no process. The functions are the standard library's (the
helper imports them by name, as it does ours)."""

from __future__ import annotations

import asyncio
import operator
import os
import time
from pathlib import Path

import psutil
import pytest

from onnxlens.server.fixits.buffer_targets import new_target_fixes
from onnxlens.server.offload import Offload, OffloadError


@pytest.mark.asyncio
async def test_a_call_returns_the_result_and_raises_the_error():
    offload = Offload()
    try:
        assert await offload.call(operator.add, 2, 3) == 5
        pid = offload.pid
        with pytest.raises(ValueError):
            await offload.call(int, "not a number")
        assert await offload.call(operator.mul, 4, 5) == 20
        assert offload.pid == pid, "an exception in the function is no reason for a new helper"
    finally:
        await offload.close()
    assert not psutil.pid_exists(pid)


@pytest.mark.asyncio
async def test_a_cancelled_call_kills_the_helper_and_the_next_call_works(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    offload = Offload()
    try:
        call = asyncio.ensure_future(offload.call(Path.read_text, fifo))
        # Opening the FIFO for writing returns once the helper has opened it for reading: the
        # call is running in the helper, blocked until the writer closes.
        writer = await asyncio.to_thread(open, fifo, "w")
        busy = offload.pid
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        writer.close()
        assert not psutil.pid_exists(busy)
        assert await offload.call(operator.add, 2, 2) == 4
        assert offload.pid != busy
    finally:
        await offload.close()


@pytest.mark.asyncio
async def test_a_call_over_the_timeout_is_stopped():
    offload = Offload(timeout=0.5)
    try:
        with pytest.raises(OffloadError, match="took over 0.5 s"):
            await offload.call(time.sleep, 600)
        assert offload.pid is None
        assert await offload.call(operator.add, 3, 3) == 6
    finally:
        await offload.close()


@pytest.mark.asyncio
async def test_the_target_fixes_travel_back_whole(tmp_path):
    model = tmp_path / "net.py"
    text = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n"
    model.write_text(text)
    offload = Offload()
    try:
        fixes, notes = await offload.call(new_target_fixes, model, text, tmp_path, 5, 5)
    finally:
        await offload.close()
    assert notes == []
    assert [f.title for f in fixes] == ["Add Net as an ONNX export target"]
    assert fixes == new_target_fixes(model, text, tmp_path, 5, 5)[0]
