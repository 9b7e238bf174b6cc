"""The graph's change on save through the language server, with VS Code's and
Neovim's recorded capabilities: a user's tagger around transformers' BertModel (random init, a
small config; tests/support/tagger.py), its sizes declared `Dim.AUTO`.

Two saves, each checked against what the ONNX files on disk say (read with onnx, not onnxlens):

* a LayerNorm added after the blocks: the status, the progress's end and the report say exactly
  its nodes (one LayerNormalization) and the initializer bytes the files differ by; the one line
  it changed gets a lens (the lines below it moved, their text did not change: no lens); nothing
  unexpected, no note;
* a line that views the token ids as 16 per row: torch.export specializes the sequence length
  (`Dim.AUTO`), so the ONNX model only accepts 16 tokens (onnxruntime refuses 20): a
  `graph-change` note on that line.
"""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import numpy
import onnx
import onnxruntime
import pytest
from lsprotocol import types as lsp

from onnxlens.exporter.graph_change import signed_bytes
from tests.support.lsp import EDITORS, Client
from tests.support.tagger import pyproject, tagger
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

TAGGER = tagger()
NORM_LINE = "        hidden = self.norm(hidden)\n"
WITH_NORM = TAGGER.replace("        self.head = nn.Linear(32, 5)\n",
                           "        self.head = nn.Linear(32, 5)\n        self.norm = nn.LayerNorm(32)\n") \
    .replace("        return self.head(hidden)\n", NORM_LINE + "        return self.head(hidden)\n")
VIEW_LINE = "        input_ids = input_ids.view(input_ids.shape[0], 16)\n"
WITH_VIEW = WITH_NORM.replace("    def forward(self, input_ids, attention_mask):\n",
                              "    def forward(self, input_ids, attention_mask):\n" + VIEW_LINE)


def _graph(path: Path) -> tuple[collections.Counter, int]:
    """Op types and initializer bytes of an .onnx file, read with onnx."""
    model = onnx.load(str(path), load_external_data=False)
    ops = collections.Counter(node.op_type for node in model.graph.node)
    size = 0
    for tensor in model.graph.initializer:
        count = 1
        for dim in tensor.dims:
            count *= dim
        size += count * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return ops, size


def _change_section(report: Path) -> str | None:
    text = report.read_text() if report.is_file() else ""
    if "## Change since the last export" not in text:
        return None
    section = text.split("## Change since the last export", 1)[1].split("\n## ", 1)[0]
    return section if "Nothing to compare" not in section else None


def _runs(path: Path, *, tokens: int) -> bool:
    """Whether onnxruntime runs the model on 2 rows of `tokens` token ids."""
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = numpy.zeros((2, tokens), dtype=numpy.int64)
    try:
        session.run(None, {"input_ids": ids, "attention_mask": numpy.ones_like(ids)})
    except Exception:  # noqa: BLE001 - onnxruntime's errors share no base class worth naming
        return False
    return True


async def _lenses(client: Client, path: Path) -> dict[int, list[str]]:
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))
    found: dict[int, list[str]] = {}
    for lens in lenses or []:
        found.setdefault(lens.range.start.line + 1, []).append(lens.command.title)
    return found


@pytest.mark.asyncio
@pytest.mark.parametrize("editor", EDITORS)
async def test_each_save_reports_what_the_graph_changed(tmp_path, editor):
    write(tmp_path / "pyproject.toml", pyproject("auto"))
    root = tmp_path.resolve()
    model, onnx_file = root / "models" / "tagger.py", root / ".onnxlens" / "tagger.onnx"
    write(model, TAGGER)
    client = await Client.launch(tmp_path, editor=editor, settings={"debounceMs": 100},
                                 experimental={"onnxlens": {"exportStatus": True}})
    try:
        client.open(model)
        await client.exports_finished("tagger", 1)
        first = client.statuses[-1]
        assert first["state"] == "ok" and first["change"] is None, first  # nothing to compare with yet
        shutil.copy(onnx_file, tmp_path / "before.onnx")

        # A LayerNorm: exactly its nodes, in the status, the progress's end and the report.
        client.save(model, WITH_NORM)
        await client.exports_finished("tagger", 2)
        status = client.statuses[-1]
        (ops_before, bytes_before), (ops_after, bytes_after) = _graph(tmp_path / "before.onnx"), _graph(onnx_file)
        assert ops_after - ops_before == {"LayerNormalization": 1} and not ops_before - ops_after
        expected = f"+1 node (LayerNormalization), {signed_bytes(bytes_after - bytes_before)}"
        assert status["change"] == expected, status
        assert status["summary"].endswith(f"; {expected}")
        ends = [r.message for reports in client.progress_reports.values() for r in reports
                if isinstance(r, lsp.WorkDoneProgressEnd) and r.message.startswith("tagger:")]
        if client.capabilities.window.work_done_progress:
            assert ends[-1] == status["summary"]
        norm = line_of(model, NORM_LINE.strip())
        changed = {line: [t for t in titles if "since the last export" in t]
                   for line, titles in (await _lenses(client, model)).items()}
        changed = {line: titles for line, titles in changed.items() if titles}
        assert list(changed) == [norm], changed  # the lines below it moved, unchanged
        assert changed[norm][0].startswith("onnxlens: tagger +1 node (LayerNormalization)")
        # The report is written after the result: wait for this export's.
        section = await client.wait_for(lambda: _change_section(root / ".onnxlens" / "reports" / "tagger.md"),
                                        "the report's change section", 30)
        assert expected in section and "hidden = self.norm(hidden)" in section
        assert not [d for d in client.diagnostics_of(model) if d.code == "graph-change"]

        # A view that fixes the sequence length: flagged on that line.
        client.save(model, WITH_VIEW)
        await client.exports_finished("tagger", 3)
        view = line_of(model, VIEW_LINE.strip())
        note = await client.wait_diagnostic(model, "graph-change", view)
        assert note.severity == lsp.DiagnosticSeverity.Information
        assert "input `input_ids` axis 1 is fixed to 16" in note.message, note.message
        assert _runs(onnx_file, tokens=16) and not _runs(onnx_file, tokens=20), "only 16 tokens now"
        assert "axis 1: " in client.statuses[-1]["change"]
    finally:
        await client.close()
