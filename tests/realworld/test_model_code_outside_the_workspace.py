"""Model code that is not in the workspace, and constructs that are not ops.

torch ships example models (ExportDB, torch/_export/db/examples); two of them fail with the stock
exporter (`torch.onnx.export(model, example_args, dynamic_shapes=..., dynamo=True)` run over every
example: only these two fail, with ConversionError):

* `dynamic_shape_map`: functorch's `map(body, xs, y)` becomes the higher-order op
  `torch.ops.higher_order.map_impl`, which torchlib cannot translate;
* `dynamic_shape_round`: `round(x.shape[0] / 2)` over a dynamic size becomes a `builtins.round`
  node, which torchlib cannot translate either.

The responsible lines, found by hand: the line of each example's `forward` that the stock error's
node comes from (its FX `stack_trace`, read from the exported program), i.e. `return map(body,
xs, y)` and `return x[: round(x.shape[0] / 2)]`. Those lines are in torch's files, which are
torch's internals for any other model: taken as such, the finding would sit at the workspace's
factory with no related location.
`mapped` has the same two constructs in the user's own code: each must land on its call.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.realworld.harness import (check_json, copy_workspace, diagnostics, library_line, lsp_related, lsp_session,
                                  primary, related_lines)
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

MAP_LINE = library_line("torch/_export/db/examples/dynamic_shape_map.py", "return map(body, xs, y)")
ROUND_LINE = library_line("torch/_export/db/examples/dynamic_shape_round.py", "return x[: round(x.shape[0] / 2)]")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return copy_workspace("exportdb", tmp_path_factory.mktemp("exportdb"))


@pytest.fixture(scope="module")
def checked(workspace):
    return check_json(workspace)


def _only(found, code="unsupported-op"):
    (finding,) = [d for d in found if d["code"] == code]
    return finding


def test_check_relates_the_line_of_an_exportdb_model_that_uses_map(checked, workspace):
    finding = _only(diagnostics(checked, "exportdb_map"))
    factory = workspace / "exportdb.py"
    assert primary(finding, workspace) == (str(factory.resolve()), line_of(factory, "def map_model():"))
    assert MAP_LINE in related_lines(finding, workspace), finding["related"]
    assert "the higher-order op torch.ops.higher_order.map_impl" in finding["message"]
    assert "torch/_export/db/examples/dynamic_shape_map.py:" in finding["message"]


def test_check_relates_the_line_of_an_exportdb_model_that_rounds_a_dynamic_size(checked, workspace):
    finding = _only(diagnostics(checked, "exportdb_round"))
    assert ROUND_LINE in related_lines(finding, workspace), finding["related"]
    assert "Python's round() on a symbolic (dynamic) size" in finding["message"]


def test_check_puts_map_and_round_in_the_users_code_on_their_calls(checked, workspace):
    found = diagnostics(checked, "mapped")
    mapped = workspace / "mapped.py"
    by_line = {d["line"]: d for d in found if d["code"] == "unsupported-op"}
    text_of = mapped.read_text().splitlines()
    map_finding = by_line[line_of(mapped, "mapped = map(body, xs, y)")]
    round_finding = by_line[line_of(mapped, "return x[: round(x.shape[0] / 2)]")]
    for finding, call in ((map_finding, "map(body, xs, y)"), (round_finding, "round(x.shape[0] / 2)")):
        line = text_of[finding["line"] - 1]
        assert line[finding["column"] - 1:finding["end_column"] - 1] == call
    assert "higher-order op" in map_finding["message"] and "Python's round()" in round_finding["message"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await lsp_session(copy_workspace("exportdb", tmp_path_factory.mktemp("exportdb-lsp")),
                               ["exportdb_map", "exportdb_round", "mapped"])
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_relates_the_exportdb_lines(client):
    factory = client.root / "exportdb.py"
    map_finding = await client.wait_diagnostic(factory, "unsupported-op", line_of(factory, "def map_model():"))
    assert MAP_LINE in lsp_related(map_finding), map_finding.related_information
    round_finding = await client.wait_diagnostic(factory, "unsupported-op", line_of(factory, "def round_model():"))
    assert ROUND_LINE in lsp_related(round_finding), round_finding.related_information
    mapped = client.root / "mapped.py"
    await client.wait_diagnostic(mapped, "unsupported-op", line_of(mapped, "mapped = map(body, xs, y)"))
