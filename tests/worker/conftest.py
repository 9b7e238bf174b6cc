"""Fixtures for the export worker's tests: real zygotes, real children, real torch exports.

One ExportService (one zygote) is shared by a test module where the tests do not depend on a
fresh worker: a zygote start costs seconds.
"""

from __future__ import annotations

import pytest_asyncio

from onnxlens.server.service.exports import ExportService


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service():
    """One warm worker for the module; no cache, so every export really runs."""
    export_service = ExportService(jobs=2, use_cache=False)
    await export_service.start()
    yield export_service
    await export_service.shutdown()
