"""The zygote keeps a target's random fills between its jobs (real zygote, real children;
pipeline/target/kept_fills.py has the rule, tests/exporter/test_kept_fills.py the byte identity with
the public API): the second export of an unseeded model replays every fill the first computed
and saves the same weights; another target's fills are its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlens.exporter.events import LogEvent
from tests.worker.worker_helpers import WIDE_MLP_SOURCE, spec_for, write_model

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _export(service, spec):
    fills = []

    def on_event(event):
        if isinstance(event, LogEvent) and "random fills" in event.text:
            fills.append(event.text)

    result = await service.export(spec, on_event)
    assert result.status == "ok", result.findings
    [line] = fills
    replayed, computed = line.split(": random fills: ")[1].split(" replayed")[0], line.rsplit(", ", 1)[1]
    return result, int(replayed), int(computed.split()[0])


async def test_the_second_export_replays_the_fills_and_saves_the_same_weights(service, tmp_path):
    # Unseeded: every child starts from the zygote's generator state, so each build draws the same.
    write_model(tmp_path, "mlp.py", WIDE_MLP_SOURCE)
    spec = spec_for(tmp_path, "mlp.py")

    first, replayed_first, computed_first = await _export(service, spec)
    data_first = Path(first.onnx_data).read_bytes()
    second, replayed_second, computed_second = await _export(service, spec)

    assert (replayed_first, replayed_second, computed_second) == (0, computed_first, 0)
    assert computed_first >= 2  # the weight and the bias at least
    assert second.onnx_data == first.onnx_data and Path(second.onnx_data).read_bytes() == data_first


async def test_another_target_computes_its_own(service, tmp_path):
    write_model(tmp_path, "mlp.py", WIDE_MLP_SOURCE)
    await _export(service, spec_for(tmp_path, "mlp.py"))

    _, replayed, computed = await _export(service, spec_for(tmp_path, "mlp.py", name="other"))

    assert replayed == 0 and computed >= 2
