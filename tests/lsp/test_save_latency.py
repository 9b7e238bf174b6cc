"""An explicit save exports at once; disk events wait for the debounce time.

The session runs with the longest debounce the settings allow (10 s), so "at once" and
"debounced" are far apart: a save whose export had to wait for the debounce would not have
started within half of it. (A bound relative to the configured debounce, not a speed limit: the
server needs milliseconds to start a job.)
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.support.lsp import Client
from tests.support.workspace import copy_examples

# slow: the language server and the export worker as processes
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DEBOUNCE_MS = 10_000
AT_ONCE_S = DEBOUNCE_MS / 1000 / 2


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await Client.launch(copy_examples(tmp_path_factory.mktemp("latency")), editor="visual-studio-code",
                                 settings={"debounceMs": DEBOUNCE_MS})
    await client.exports_finished("mlp", 1)
    yield client
    await client.close()


def _started(data: dict, target: str) -> int:
    return data["per_target"].get(target, {}).get("started", 0)


async def test_an_editor_save_exports_without_waiting_for_the_debounce(client: Client):
    before = await client.wait_idle(quiet=1.0, timeout=180)
    mlp = client.root / "models/mlp.py"
    client.open(mlp)
    client.save(mlp, mlp.read_text() + "\n# saved\n")
    await client.wait_stats(lambda data: _started(data, "mlp") > _started(before, "mlp"),
                            "the save's export to start", timeout=AT_ONCE_S)
    data = await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)
    assert data["last"]["mlp"]["reason"] == "saved mlp.py"


async def test_a_change_on_disk_waits_for_the_debounce(client: Client):
    before = await client.wait_idle(quiet=1.0, timeout=180)
    mlp = client.root / "models/mlp.py"
    mlp.write_text(mlp.read_text() + "\n# changed on disk, not saved in the editor\n")
    data = await client.wait_stats(lambda data: "mlp" in data["pending"], "the disk change to be pending",
                                   timeout=AT_ONCE_S)
    assert _started(data, "mlp") == _started(before, "mlp")
    data = await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)
    assert data["last"]["mlp"]["reason"].endswith("changed on disk")


async def test_a_second_save_within_the_debounce_is_debounced(client: Client):
    before = await client.wait_idle(quiet=1.0, timeout=180)
    mlp = client.root / "models/mlp.py"
    client.save(mlp, mlp.read_text() + "\n# first\n")
    await client.wait_stats(lambda data: _started(data, "mlp") > _started(before, "mlp"),
                            "the first save's export to start", timeout=AT_ONCE_S)
    client.save(mlp, mlp.read_text() + "\n# second, right after\n")
    data = await client.wait_stats(lambda data: "mlp" in data["pending"], "the second save to be pending",
                                   timeout=AT_ONCE_S)
    assert _started(data, "mlp") == _started(before, "mlp") + 1
