"""An unsupported-op message a user can act on.

Twelve stages (an nn.ModuleList) each call two kornia functions on one line,
`get_tps_transform(points, moved)` and `find_fundamental(points, moved)`; both end in linear
algebra torchlib cannot translate. Found by hand (kornia 0.9.0's source read from each call, and
the stock exporter's error, which names only the first op, `aten._linalg_solve_ex.default`):

* get_tps_transform -> `_torch_solve_cast` (kornia/core/utils.py) calls `torch.linalg.solve`:
  `aten._linalg_solve_ex` and its error check `aten._linalg_check_errors`;
* find_fundamental -> run_8point -> _eight_point_null_vector -> `_null_space_lu`
  (kornia/geometry/solvers/homogeneous.py) calls `torch.linalg.lu_factor_ex` (and
  solve_triangular, lu_unpack), and `_torch_svd_cast` (kornia/core/utils.py) `torch.linalg.svd`.

The message must say, per op, the torch function it came from, the library function that called
it with its place, which of the two calls on the line produced it, and the modules as a range.
The message these tests rule out: "no ONNX translation for aten._linalg_solve_ex.default,
with_effects, aten.linalg_lu_factor_ex.default, …; … [module: stages.0, stages.1, stages.10,
stages.11, stages.2, …]" — no torch function, no library function, no call, the module list in
string order.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.realworld.harness import (check_json, copy_workspace, diagnostics, library_line, lsp_session, primary,
                                  related_lines)
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

SOLVE = library_line("kornia/core/utils.py", "out = torch.linalg.solve(A.to(dtype), B.to(dtype))")
SVD = library_line("kornia/core/utils.py", "out1, out2, out3H = torch.linalg.svd(x, full_matrices=full_matrices)")
LU = library_line("kornia/geometry/solvers/homogeneous.py", "torch.linalg.lu_factor_ex(")
STAGE_LINE = "fit = get_tps_transform(points, moved)[0].mean() + find_fundamental(points, moved).mean()"


def _expected_parts(text: str) -> list[str]:
    tps_column = text.index("get_tps_transform(") + 1
    fundamental_column = text.index("find_fundamental(") + 1
    return [
        f"aten._linalg_solve_ex.default (from torch.linalg.solve, in `_torch_solve_cast`, "
        f"kornia/core/utils.py:{SOLVE[1]}, column {tps_column})",
        f"aten.linalg_lu_factor_ex.default (from torch.linalg.lu_factor_ex, in `_null_space_lu`, "
        f"kornia/geometry/solvers/homogeneous.py:{LU[1]}, column {fundamental_column})",
        f"aten._linalg_svd.default (from torch.linalg.svd, in `_torch_svd_cast`, "
        f"kornia/core/utils.py:{SVD[1]}, column {fundamental_column})",
        "[module: stages.0–11]",
    ]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return copy_workspace("kornia_stages", tmp_path_factory.mktemp("stages"))


@pytest.fixture(scope="module")
def checked(workspace):
    return check_json(workspace)


def test_check_message_names_each_op_its_torch_function_library_function_call_and_modules(checked, workspace):
    (finding,) = [d for d in diagnostics(checked, "refiner") if d["code"] == "unsupported-op"]
    refiner = workspace / "refiner.py"
    line = line_of(refiner, STAGE_LINE)
    assert primary(finding, workspace) == (str(refiner.resolve()), line)
    text = refiner.read_text().splitlines()[line - 1]
    for part in _expected_parts(text):
        assert part in finding["message"], (part, finding["message"])
    # The primary range is the first call; the other call is a related location of its own.
    assert text[finding["column"] - 1:finding["end_column"] - 1] == "get_tps_transform(points, moved)"
    others = [r for r in finding["related"] if r["line"] == line]
    assert [r["message"] for r in others] == [
        "aten.linalg_lu_factor_ex.default (from torch.linalg.lu_factor_ex) comes from this call"]
    # Every op's library line is one click away, not only the first op's chain.
    assert {SOLVE, SVD, LU} <= related_lines(finding, workspace)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await lsp_session(copy_workspace("kornia_stages", tmp_path_factory.mktemp("stages-lsp")), ["refiner"])
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_shows_the_same_message(client):
    refiner = client.root / "refiner.py"
    line = line_of(refiner, STAGE_LINE)
    diagnostic = await client.wait_diagnostic(refiner, "unsupported-op", line)
    text = refiner.read_text().splitlines()[line - 1]
    for part in _expected_parts(text):
        assert part in diagnostic.message, (part, diagnostic.message)
    columns = {r.location.range.start.character for r in diagnostic.related_information or []
               if r.location.range.start.line == line - 1}
    assert columns == {text.index("find_fundamental(")}  # 0-based on the wire
