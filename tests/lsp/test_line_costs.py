"""Cost per line through the language server, with VS Code's and Neovim's
recorded capabilities: a user's tagger around transformers' BertModel (random init, a small
config: code nobody here wrote; tests/support/tagger.py), verified by onnxruntime.

Which lines cost, found by reading the code: every node of BERT's forward is on the user's BERT
call (the innermost line of the workspace on its stack), and so are the sizes of the inputs
BERT reads for its masks (torch traces them at no line; they count for the line that uses
them); `Block.forward`'s `return` line runs three times (three blocks: Linear, Tanh, Add each);
the head's line is one Linear. Those three lines, and nothing else.

The lenses' times are checked against onnxruntime's own profile of the run (the JSON file it
wrote, read here with json: the sum of its kernel events), not against onnxlens's numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.support.lsp import EDITORS, Client
from tests.support.tagger import BERT_LINE, BLOCK_LINE, HEAD_LINE, pyproject, tagger
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

_LENS = re.compile(r"^onnxlens: tagger (?P<share>[\d.<]+) % of inference \((?P<time>[\d.]+) (?P<unit>µs|ms|s)\)"
                   r", (?P<ops>.+)$")
_UNIT_US = {"µs": 1.0, "ms": 1000.0, "s": 1_000_000.0}


async def _cost_lenses(client: Client, path: Path) -> dict[int, re.Match]:
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))
    found = {}
    for lens in lenses or []:
        match = _LENS.match(lens.command.title)
        if match:
            assert lens.range.start.line + 1 not in found, lens.command.title
            found[lens.range.start.line + 1] = match
    return found


def _microseconds(match: re.Match) -> float:
    return float(match["time"]) * _UNIT_US[match["unit"]]


def _onnxruntime_total(profile: Path) -> float:
    """Every kernel's time in onnxruntime's profile, as onnxruntime wrote it."""
    events = json.loads(profile.read_text())
    return sum(e["dur"] for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"))


@pytest.mark.asyncio
@pytest.mark.parametrize("editor", EDITORS)
async def test_cost_lenses_add_up_to_onnxruntimes_profile_on_the_lines_that_cost(tmp_path, editor):
    write(tmp_path / "pyproject.toml", pyproject("named").replace("verify = false", "verify = true"))
    model = tmp_path.resolve() / "models" / "tagger.py"
    source = tagger()
    write(model, source)
    client = await Client.launch(tmp_path, editor=editor, settings={"debounceMs": 100, "costLensThreshold": 0})
    try:
        client.open(model)
        # Off by default: verified, no profile, no cost lens.
        await client.exports_finished("tagger", 1)
        assert await _cost_lenses(client, model) == {}
        profile = tmp_path / ".onnxlens" / "reports" / "tagger.profile.json"
        assert not profile.exists()

        # The editor's setting turns it on: every target is exported again, profiled.
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"profile": True}))
        await client.exports_finished("tagger", 2)
        lenses = await _cost_lenses(client, model)
        bert, block, head = line_of(model, BERT_LINE), line_of(model, BLOCK_LINE), line_of(model, HEAD_LINE)
        assert set(lenses) == {bert, block, head}, {line: m.group(0) for line, m in lenses.items()}
        assert max(lenses, key=lambda line: _microseconds(lenses[line])) == bert

        # Within 5 % of onnxruntime's own total (the titles round: µs, or 0.01 ms).
        total = _onnxruntime_total(profile)
        shown = sum(_microseconds(match) for match in lenses.values())
        assert total > 0 and abs(shown - total) <= 0.05 * total, (shown, total)
        shares = [float(match["share"]) for match in lenses.values() if not match["share"].startswith("<")]
        assert abs(sum(shares) - 100) <= 5, shares

        # The report's table, the most expensive line first (the export's process writes the
        # report after it has sent the result).
        report = tmp_path / ".onnxlens" / "reports" / "tagger.md"
        text = await client.wait_for(lambda: report.is_file() and "## Cost per line" in report.read_text()
                                     and report.read_text(), "the report's cost per line")
        table = text.split("## Cost per line", 1)[1].split("\n## ", 1)[0]
        rows = {int(row.split(":", 1)[1].split("`", 1)[0]): row for row in table.splitlines()
                if row.startswith("| `models/tagger.py:")}
        assert list(rows)[0] == bert and set(rows) == {bert, block, head}, table
        # Every kernel, by op type as onnxruntime ran it: three blocks of Linear, Tanh and Add.
        assert "MatMul" in rows[bert] and "3 Tanh" in rows[block], table

        # The threshold leaves out the lines below it; a line typed above moves the others' lenses.
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"costLensThreshold": 50}))
        assert set(await _cost_lenses(client, model)) == {bert}
        client.type(model, source.replace("    def forward(self, input_ids, attention_mask):\n",
                                          "    def forward(self, input_ids, attention_mask):\n        # tag\n"))
        assert set(await _cost_lenses(client, model)) == {bert + 1}
    finally:
        await client.close()
