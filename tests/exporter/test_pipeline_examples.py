"""The pipeline on the bundled examples: real torch exports, compared with the public API."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from onnxlens.exporter.onnx_pair import public_api_difference
from onnxlens.exporter.events import StageEvent
from onnxlens.exporter.types import STAGES

from tests.exporter.engine_support import shared_pipeline, spec_for
from tests.support.workspace import copy_examples, line_of

pytestmark = pytest.mark.slow  # every bundled example exported and compared with the public API's export


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return copy_examples(tmp_path_factory.mktemp("examples"))


@pytest.fixture(scope="module")
def spectral(workspace):
    spec = spec_for(workspace, "spectral", "models/spectral.py:SpectralNet", "models/spectral.py:example_inputs")
    return shared_pipeline().run(spec)


@pytest.fixture(scope="module")
def mlp(workspace):
    events = []
    spec = spec_for(workspace, "mlp", "models/mlp.py:MLP", "models/mlp.py:example_inputs")
    return shared_pipeline().run(spec, events.append), events


@pytest.fixture(scope="module")
def encoder(workspace):
    spec = spec_for(workspace, "encoder", "models/encoder.py:build_encoder", "models/encoder.py:example_inputs",
                    dynamic_shapes="models/encoder.py:dynamic_shapes", input_names=["tokens"],
                    output_names=["hidden"], opset=20)
    result = shared_pipeline().run(spec)
    # The module the pipeline imported: the public API must export the very same code.
    return result, sys.modules["models.encoder"]


def test_spectral_reports_both_unsupported_ops_each_on_its_own_line(spectral, workspace):
    spectral_py = workspace / "models" / "spectral.py"
    features_py = workspace / "models" / "features.py"
    assert spectral.status == "failed"
    assert spectral.onnx is None
    found = {(Path(f.location.file).name, f.location.line): f for f in spectral.findings}
    assert set(found) == {("spectral.py", line_of(spectral_py, "torch.linalg.eigvals(h)")),
                          ("features.py", line_of(features_py, "torch.special.zeta("))}
    for finding in spectral.findings:
        assert finding.code == "unsupported-op"
        assert finding.stage == "scan"
        assert finding.docs_url
    eig = found[("spectral.py", line_of(spectral_py, "torch.linalg.eigvals(h)"))]
    assert "linalg_eig" in eig.message
    # The column range covers the call, not the whole line.
    text = spectral_py.read_text().splitlines()[eig.location.line - 1]
    assert text[eig.location.column - 1:eig.location.end_column - 1] == "torch.linalg.eigvals(h)"
    assert eig.source_line == text


def test_unsupported_op_in_a_helper_lands_on_the_helpers_line_with_the_call_chain(spectral, workspace):
    features_py = workspace / "models" / "features.py"
    spectral_py = workspace / "models" / "spectral.py"
    zeta = next(f for f in spectral.findings if f.location.file.endswith("features.py"))
    assert "zeta" in zeta.message
    text = features_py.read_text().splitlines()[zeta.location.line - 1]
    assert text[zeta.location.column - 1:zeta.location.end_column - 1] == "torch.special.zeta(shifted, 2.0)"
    # forward's call of the helper is the next frame of the chain.
    assert [(Path(r.file).name, r.line) for r in zeta.related] == [
        ("spectral.py", line_of(spectral_py, "zeta_features(eig)"))]


def test_closure_lists_every_workspace_file_the_target_imported(spectral, workspace):
    models = workspace / "models"
    assert set(spectral.closure) == {str(models / "spectral.py"), str(models / "features.py"),
                                     str(models / "__init__.py")}


def test_mlp_exports_with_stage_events_in_order_and_line_info(mlp, workspace):
    result, events = mlp
    assert result.status == "ok", result.findings
    assert result.findings == []
    assert os.path.exists(result.onnx)
    stage_events = [(e.stage, e.state) for e in events if isinstance(e, StageEvent)]
    assert stage_events == [(stage, state) for stage in STAGES for state in ("begin", "end")]
    assert list(result.stages) == list(STAGES)
    assert result.node_count and result.node_count > 0
    mlp_py = workspace / "models" / "mlp.py"
    forward_line = line_of(mlp_py, "self.net(x).softmax")
    info = next(i for i in result.lines if i.line == forward_line)
    assert info.file == str(mlp_py)
    assert info.ops == {"Gemm": 3, "Relu": 2, "Softmax": 1}
    assert "float32[8, 10]" in info.outputs
    assert "net.0" in info.modules
    assert result.model_location.file == str(mlp_py)
    assert result.model_location.line == line_of(mlp_py, "class MLP")
    dump = Path(result.exported_program).read_text()
    assert "ExportedProgram" in dump and "aten.linear" in dump


@pytest.mark.every_torch
def test_output_is_byte_identical_to_the_public_api_with_dynamic_shapes_names_and_opset(encoder, tmp_path):
    result, module = encoder
    assert result.status == "ok", result.findings
    assert result.findings == []  # the batch stayed dynamic: no specialization warning
    public = tmp_path / "encoder.onnx"
    torch.onnx.export(module.build_encoder(), module.example_inputs(), str(public), dynamo=True,
                      dynamic_shapes=module.dynamic_shapes(), input_names=["tokens"],
                      output_names=["hidden"], opset_version=20, verbose=False)
    ours = Path(result.onnx)
    assert public_api_difference(ours, public) is None
    # And the options really took effect (identity alone would pass if both ignored them).
    import onnx

    model = onnx.load(str(ours), load_external_data=False)
    assert [i.name for i in model.graph.input] == ["tokens"]
    assert [o.name for o in model.graph.output] == ["hidden"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert {o.domain: o.version for o in model.opset_import}[""] == 20


def test_encoder_line_info_shows_symbolic_batch(encoder):
    result, module = encoder
    norm_line = line_of(Path(module.__file__), "h = self.norm1(x)")
    info = next(i for i in result.lines if i.line == norm_line)
    assert info.ops == {"LayerNormalization": 6}
    assert info.outputs == ["float32[batch, 16, 256]"]
    assert info.modules == [f"layers.{i}.norm1" for i in range(6)]
