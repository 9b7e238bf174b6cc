"""A JSON file the model reads while it is exported belongs to its target in the editor too
(pipeline/target/opened_files.py): saving it re-exports the target, and the change shows — here, the
JSON file switches `forward` to an op without an ONNX translation, and the error appears on
the line that called it; switching back clears it.
"""

from __future__ import annotations

import pytest

from tests.support.lsp import Client
from tests.support.net_workspace import READS_JSON, write_workspace
from tests.support.workspace import lsp_line

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]  # the language server and the export worker as processes


async def test_saving_a_json_file_forward_reads_exports_again(tmp_path):
    net = write_workspace(tmp_path, READS_JSON)
    activation = tmp_path / "activation.json"
    client = await Client.launch(tmp_path, settings={"debounceMs": 100})
    try:
        client.open(net)
        finished = (await client.exports_finished("net", 1))["per_target"]["net"]["finished"]
        assert not client.diagnostics_of(net)

        client.save(activation, '{"activation": "zeta"}')
        await client.exports_finished("net", finished + 1)
        [problem] = await client.wait_for(lambda: client.diagnostics_of(net), "the unsupported-op error")
        assert problem.code == "unsupported-op"
        assert problem.range.start.line == lsp_line(net, "# activation line")

        client.save(activation, '{"activation": "relu"}')
        await client.wait_for(lambda: client.cleared(net), "the error cleared")
    finally:
        await client.close()
