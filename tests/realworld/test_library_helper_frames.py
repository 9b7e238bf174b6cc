"""An op called by helpers deep inside a library gets its library location.

kornia's `find_homography_dlt(..., solver="svd")` reaches `torch.linalg.svd` through three helpers
of its own, none named `forward`, so torch's non-strict capture records none of them. The
responsible line was found by hand: reading kornia 0.9.0's source from the call in
workspaces/kornia_homography/homography.py (find_homography_dlt -> _homography_from_dlt_system ->
_svd_null_vector -> _torch_svd_cast), confirmed by the stock exporter's error (it names
`aten._linalg_svd.default`) and by a capture with every frame recorded. The line is
kornia/core/utils.py `out1, out2, out3H = torch.linalg.svd(x, full_matrices=full_matrices)`.

torch records only `forward` frames: without the helpers' frames kept during capture, the
finding would sit on the user's call with no related location at all.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.realworld.harness import (check_json, copy_workspace, diagnostics, library_line, lsp_related, lsp_session,
                                  primary, related_lines)
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

# The line that called the op, and the helpers on the way to it (kornia's source, by hand).
SVD_CALL = library_line("kornia/core/utils.py", "out1, out2, out3H = torch.linalg.svd(x, full_matrices=full_matrices)")
HELPER_CALLS = [
    library_line("kornia/geometry/homography.py", "_, _, V = _torch_svd_cast(safe)"),
    library_line("kornia/geometry/homography.py", "H = _svd_null_vector(A).view(-1, 3, 3)"),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return copy_workspace("kornia_homography", tmp_path_factory.mktemp("homography"))


@pytest.fixture(scope="module")
def checked(workspace):
    return check_json(workspace)


def _user_line(workspace):
    path = workspace / "homography.py"
    return str(path.resolve()), line_of(path, 'return find_homography_dlt(points1, points2, solver="svd")')


def test_check_reaches_the_library_line_that_called_the_op(checked, workspace):
    (finding,) = [d for d in diagnostics(checked, "homography") if d["code"] == "unsupported-op"]
    assert primary(finding, workspace) == _user_line(workspace)  # the user's line stays primary
    related = related_lines(finding, workspace)
    assert SVD_CALL in related, finding["related"]
    assert set(HELPER_CALLS) <= related
    innermost = finding["related"][0]
    assert (innermost["line"], innermost["message"]) == (SVD_CALL[1], "inside _torch_svd_cast (library code)")
    assert not any("/torch/" in r["file"] for r in finding["related"])  # torch internals excluded


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await lsp_session(copy_workspace("kornia_homography", tmp_path_factory.mktemp("homography-lsp")), ["homography"])
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_relates_the_library_line_that_called_the_op(client):
    path, line = _user_line(client.root)
    diagnostic = await client.wait_diagnostic(client.root / "homography.py", "unsupported-op", line)
    related = lsp_related(diagnostic)
    assert SVD_CALL in related and set(HELPER_CALLS) <= related, diagnostic.related_information
