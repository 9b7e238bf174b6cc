"""Inlay hints through the language server, with VS Code's and Neovim's
recorded capabilities: a user's tagger around transformers' BertModel (random init, a small
config: code nobody here wrote; tests/support/tagger.py), its sizes declared as string dims.

Which lines get a hint, found by reading the code: a hint goes on the innermost line of the
workspace that computed a value other lines use (the location rule of the diagnostics). The
BERT call's line hands on `last_hidden_state` ([batch, seq, 32]); the loop `hidden = block(hidden)`
runs `Block.forward`, whose `return` line computes each block's value (three blocks: one hint,
×3 in blocks.0–2) while the loop line itself computes nothing; the head's line hands on the
logits ([batch, seq, 5]). The sizes are named as the spec declares them, not torch's `s0`.
"""

from __future__ import annotations

import re

import pytest
from lsprotocol import types as lsp

from tests.support.lsp import EDITORS, Client
from tests.support.tagger import BERT_LINE, BLOCK_LINE, HEAD_LINE, pyproject, tagger
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

async def _hints(client: Client, path, lines: int) -> dict[int, lsp.InlayHint]:
    """The hints of the whole file, by 1-based line."""
    hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=lines, character=0))))
    return {hint.position.line + 1: hint for hint in hints or []}


@pytest.mark.asyncio
@pytest.mark.parametrize("editor", EDITORS)
async def test_hints_show_what_each_line_produced_with_the_declared_dimension_names(tmp_path, editor):
    write(tmp_path / "pyproject.toml", pyproject("named"))
    model = tmp_path.resolve() / "models" / "tagger.py"
    source = tagger()
    write(model, source)
    client = await Client.launch(tmp_path, editor=editor, settings={"debounceMs": 100})
    try:
        client.open(model)
        await client.exports_finished("tagger", 1)
        length = len(source.splitlines())
        hints = await _hints(client, model, length)
        bert, block, head = line_of(model, BERT_LINE), line_of(model, BLOCK_LINE), line_of(model, HEAD_LINE)
        assert set(hints) == {bert, block, head}, {line: h.label for line, h in hints.items()}
        assert hints[bert].label == "[batch, seq, 32] f32"
        assert hints[block].label == "[batch, seq, 32] f32 ×3 in blocks.0–2"
        assert hints[head].label == "[batch, seq, 5] f32"
        assert not any(re.search(r"\bs\d+\b", h.label) for h in hints.values()), "torch's symbols, not the names"
        text = model.read_text().splitlines()
        for line, hint in hints.items():  # at the end of the line's code
            assert hint.position.character == len(text[line - 1].rstrip())
            assert hint.kind == lsp.InlayHintKind.Type
        # The server asks the editor to refresh them after a result, when it can (Neovim 0.10+;
        # the recorded VS Code 1.65 predates LSP's inlay hints).
        refreshes = client.hint_refreshes
        assert (refreshes > 0) == bool(client.capabilities.workspace.inlay_hint
                                       and client.capabilities.workspace.inlay_hint.refresh_support)

        # Unsaved edits: a line added above the forward moves the hints below it; the edited
        # BERT line loses its hint (what it produces now is not known until the next export).
        edited = source.replace("    def forward(self, input_ids, attention_mask):\n",
                                "    def forward(self, input_ids, attention_mask):\n        # tag each token\n")
        edited = edited.replace(".last_hidden_state\n", ".last_hidden_state  # (batch, seq, hidden)\n")
        client.type(model, edited)
        moved = await _hints(client, model, length + 1)
        assert set(moved) == {block, head + 1}, {line: h.label for line, h in moved.items()}
        assert moved[head + 1].label == "[batch, seq, 5] f32"
        # Hover follows the same mapping: the head's line, where it is now.
        hover = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=model.as_uri()),
            position=lsp.Position(line=head, character=8)))
        assert hover is not None and "`head`" in hover.contents.value, hover

        # The setting turns them off, and on again.
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"inlayHints": False}))
        assert await _hints(client, model, length + 1) == {}
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"inlayHints": True}))
        assert set(await _hints(client, model, length + 1)) == {block, head + 1}
        if refreshes:
            assert client.hint_refreshes >= refreshes + 2, "each change of the setting refreshes them"
    finally:
        await client.close()
