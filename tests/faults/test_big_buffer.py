"""Fault matrix, big-buffer rows: a generated Python file open in the editor. The code action
on its `class` line (the "Add … as an ONNX export target" offer parses the buffer) never delays
a hover: a buffer past the size of a model of the user's (2 MB) is not parsed, a smaller one is
parsed in the helper process (server/offload.py), not on the event loop, where a thread would
not help either (ast holds the GIL for the whole parse).

Measured here (2-core machine, other test runs beside it), hovering every 20 ms while the code
action ran: 10 MB, the code action answered in 0.05 s, the hover beside it in 29 ms; 300 kB of
generated functions, parsed in 2.6 s in the helper, 97 hovers, median 1.3 ms, 90th percentile
5.7 ms, slowest 17 ms. The bound is 100 ms, past which a hover feels delayed. A parse on the
event loop would hold every request behind it: the first hover beside the 10 MB buffer's code
action would get no answer in 30 s.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.support.faults import Session, exported, make_fault_workspace
from tests.support.lsp import REQUEST_WAIT, uri
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

HOVER_BOUND = 0.100  # seconds: past this a hover feels delayed
BLOCKED = 1.0  # seconds: a hover that waited for a parse (which takes seconds) would take longer


def generated_module(size: int) -> tuple[str, int]:
    """A model class, then generated functions up to `size` characters; its `class` line."""
    head = "import torch\nfrom torch import nn\n\n\nclass Generated(nn.Module):\n    def forward(self, x):\n        return x\n\n"
    body = []
    length, i = len(head), 0
    while length < size:
        chunk = f"def f{i}(x, y=3):\n    return x * {i} + y\n\n"
        body.append(chunk)
        length += len(chunk)
        i += 1
    return head + "".join(body), 5


async def hovers_during(session: Session, request: asyncio.Future, path: Path, line: int) -> list[float]:
    """Hover on `path`:`line` every 20 ms until `request` is answered; each hover's seconds."""
    took = []
    while not request.done():
        started = time.monotonic()
        reply = await asyncio.wait_for(session.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri(path)), position=lsp.Position(line=line - 1, character=8))),
            REQUEST_WAIT)
        took.append(time.monotonic() - started)
        assert reply is not None, "the hover lost its content"
        await asyncio.sleep(0.02)
    return took


async def code_action_with_hovers(session: Session, ws, big: Path, class_line: int) -> tuple[list, list[float], float]:
    session.open(big)
    await session.ping(ws.net)  # the didOpen has been read
    started = time.monotonic()
    request = asyncio.ensure_future(session.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri(big)),
        range=lsp.Range(start=lsp.Position(line=class_line - 1, character=0), end=lsp.Position(line=class_line - 1, character=0)),
        context=lsp.CodeActionContext(diagnostics=[]))))
    took = await hovers_during(session, request, ws.net, forward_line(ws.net))
    actions = await asyncio.wait_for(request, REQUEST_WAIT)
    return actions or [], took, time.monotonic() - started


def forward_line(net: Path) -> int:
    return next(i for i, text in enumerate(net.read_text().splitlines(), 1) if "self.lin(x)" in text)


def assert_not_delayed(took: list[float], what: str) -> None:
    """Nine hovers in ten within 100 ms, none blocked: one hiccup of a loaded
    2-core machine is no delay by the parse, which would hold every hover for its seconds."""
    ranked = sorted(took)
    assert ranked[len(ranked) * 9 // 10] < HOVER_BOUND and ranked[-1] < BLOCKED, \
        f"{what}: hovers took {[round(t * 1000) for t in ranked]} ms"


@pytest.mark.asyncio
async def test_a_big_buffers_code_action_does_not_delay_a_hover(tmp_path):
    ws = make_fault_workspace(tmp_path)
    session = await Session.launch(ws.root)
    try:
        await session.wait_for(lambda: exported(ws.onnx, 1), "the first export")
        await session.wait_idle()

        # 10 MB: past the size of a model of the user's, not parsed at all
        huge = ws.root / "models" / "generated.py"
        text, class_line = generated_module(10_000_000)
        write(huge, text)
        actions, took, _ = await code_action_with_hovers(session, ws, huge, class_line)
        assert not [a for a in actions if "export target" in a.title]
        assert_not_delayed(took, "10 MB")

        # 300 kB of generated functions: parsed in the helper (seconds), the offer made, hovers
        # answered meanwhile
        big = ws.root / "models" / "generated_small.py"
        text, class_line = generated_module(300_000)
        write(big, text)
        actions, took, seconds = await code_action_with_hovers(session, ws, big, class_line)
        assert [a.title for a in actions if "export target" in a.title] == ["Add Generated as an ONNX export target"]
        assert len(took) >= 5, f"the parse took {seconds:.2f} s: too short to hover during it"
        assert_not_delayed(took, f"during a {seconds:.1f} s parse")
    finally:
        await session.close()
