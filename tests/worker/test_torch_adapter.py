"""The adapter of torch's internals in a real worker: the one `onnxlens --version` names, and a
torch without an adapter exporting through the public path with its `torch-version` note.

A real run cannot install an unreleased torch: the public-path tests start the worker with
ONNXLENS_TORCH_VERSION=2.99.0, the torch version the adapter selection sees instead of the
installed one (read in one place, exporter/torch_internals/__init__.py). Everything else is
real: the zygote warms up on the public path, and each job runs the public torch.onnx.export of
a real model in a forked child.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
import pytest_asyncio

from onnxlens.exporter.torch_internals import VERSION_VARIABLE
from onnxlens.server.service.exports import ExportService
from tests.support.workspace import line_of
from tests.worker.worker_helpers import MLP_SOURCE, spec_for, write_model

# the export worker as processes; the adapter each torch gets: on every torch of CI's matrix
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow, pytest.mark.every_torch]

DATA_DEPENDENT = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:  # data-dependent
            return y + 1
        return y - 1


def inputs():
    return (torch.randn(4, 4),)
'''

UNSUPPORTED = '''
import torch


def spectrum(h):
    return torch.linalg.eigvals(h).real  # helper's op


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.linear(x)
        return spectrum(h) + 1  # forward calls the helper


class Direct(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.eigvals(x * 2).real  # direct op


def inputs():
    return (torch.randn(4, 4),)
'''


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def public_service():
    """A worker as on an unreleased torch: no adapter, the public path."""
    service = ExportService(jobs=2, use_cache=False, env={**os.environ, VERSION_VARIABLE: "2.99.0"})
    await service.start()
    yield service
    await service.shutdown()


def _notice(result):
    notes = [f for f in result.findings if f.code == "torch-version"]
    assert len(notes) == 1, result.findings
    note = notes[0]
    assert note.severity == "info" and "\n" not in note.message
    assert note.message.startswith("torch 2.99.0 has no onnxlens adapter")
    assert "public torch.onnx.export" in note.message and "coarser" in note.message
    return note


def _problems(result):
    return [f for f in result.findings if f.code != "torch-version"]


async def test_the_worker_of_an_unknown_torch_takes_the_public_path(public_service, tmp_path):
    await public_service.worker.wait_ready()
    assert public_service.worker.adapter == {"name": "public", "fallback": None}
    assert public_service.cache.versions["torch-adapter"] == "public"  # results of another path: another key


async def test_a_clean_model_exports_with_the_notice_at_its_definition(public_service, tmp_path):
    model = write_model(tmp_path, "models/mlp.py", MLP_SOURCE)
    result = await public_service.export(spec_for(tmp_path, "models/mlp.py", name="mlp"))
    assert result.status == "ok", result.findings
    assert not _problems(result)
    note = _notice(result)
    assert (note.location.file, note.location.line) == (str(model), line_of(model, "class Model"))
    onnx.checker.check_model(onnx.load(result.onnx), full_check=True)
    assert result.node_count  # (the report is written after the result: not waited for here)
    assert line_of(model, "return torch.relu(self.linear(x))") in {info.line for info in result.lines}  # hover


META = MLP_SOURCE.replace("def inputs():", """def on_meta():
    with torch.device("meta"):
        return Model()


def inputs():""")


async def test_a_weights_free_model_exports_its_graph(public_service, tmp_path):
    write_model(tmp_path, "models/meta.py", META)
    result = await public_service.export(spec_for(tmp_path, "models/meta.py", name="meta", model="on_meta"))
    assert result.status == "ok", result.findings
    assert sorted(f.code for f in result.findings) == ["torch-version", "weights-free"]
    assert result.onnx is None and Path(result.graph_onnx).is_file()


async def test_a_capture_failure_lands_on_its_line(public_service, tmp_path):
    model = write_model(tmp_path, "models/branchy.py", DATA_DEPENDENT)
    result = await public_service.export(spec_for(tmp_path, "models/branchy.py", name="branchy"))
    assert result.status == "failed"
    [problem] = _problems(result)
    assert problem.code == "torch-export"
    assert (problem.location.file, problem.location.line) == (str(model), line_of(model, "# data-dependent"))
    _notice(result)


async def test_an_unsupported_op_lands_on_its_line(public_service, tmp_path):
    model = write_model(tmp_path, "models/ops.py", UNSUPPORTED)
    result = await public_service.export(spec_for(tmp_path, "models/ops.py", name="direct", model="Direct"))
    [problem] = _problems(result)
    assert problem.code == "unsupported-op" and "linalg_eig" in problem.message
    assert (problem.location.file, problem.location.line) == (str(model), line_of(model, "# direct op"))
    _notice(result)


async def test_an_op_in_a_helper_is_coarser_never_wrong(public_service, tmp_path):
    """Without the adapter the helper's frames are not recorded: the finding is on forward's
    call of the helper (on the call chain, saying so), not on another line."""
    model = write_model(tmp_path, "models/ops.py", UNSUPPORTED)
    result = await public_service.export(spec_for(tmp_path, "models/ops.py", name="helper"))
    [problem] = _problems(result)
    assert problem.code == "unsupported-op"
    assert (problem.location.file, problem.location.line) == (str(model), line_of(model, "# forward calls the helper"))
    assert "lines of functions it calls are not known" in problem.message
    _notice(result)


async def test_the_worker_uses_the_adapter_onnxlens_version_names(service):
    """The adapter the real zygote loads for this torch is the one the server predicts from the
    version string alone (`onnxlens --version`, the server log, the cache key)."""
    await service.worker.wait_ready()
    script = Path(sys.executable).parent / "onnxlens"
    named = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60).stdout
    adapter = service.worker.adapter
    assert adapter["fallback"] is None
    assert f"torch adapter {adapter['name']} (torch " in named
    assert service.cache.versions["torch-adapter"] == adapter["name"] != "public"
