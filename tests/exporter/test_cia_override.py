"""The CompositeImplicitAutograd override entered from its recording (cia_override.py) is torch's.

Real torch throughout: torch's own `_override_composite_implicit_decomp` is entered beside the
recording and the states they leave the ops in are compared; the export through a zygote-style
Pipeline (tables recorded by warm_up) stays byte-identical to the public API's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch._subclasses import fake_impls
from torch.export import exported_program

from onnxlens.exporter.onnx_pair import public_api_difference
from onnxlens.exporter.pipeline import Pipeline
from onnxlens.exporter.torch_internals.cia_override import RecordedOverride, recorded_override
from onnxlens.exporter.pipeline.tables import DEFAULT_OPSET
from tests.exporter.engine_support import spec_for

# exports compared with the public API's, tables recorded as the zygote records them: on every torch of CI's matrix
pytestmark = [pytest.mark.slow, pytest.mark.every_torch]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    pipeline = Pipeline()
    pipeline.warm_up()  # as the zygote: refresh() records the override for the default tables
    return pipeline


@pytest.fixture
def tables(pipeline):
    return pipeline.tables.decompositions(pipeline.tables.registry(DEFAULT_OPSET))


def _state(ops) -> dict:
    """Per op: each dispatch key's kernel (by what it is, not which object) and whether a
    FakeTensor rule is registered."""
    def kernel(fn):
        inner = getattr(fn, "func", fn)  # functools.partial: what it wraps
        return getattr(inner, "__qualname__", repr(inner))
    return {op: ({key: kernel(fn) for key, fn in op.py_kernels.items()}, op in fake_impls.op_implementations_dict)
            for op in ops}


def test_entering_the_recording_leaves_the_ops_as_torchs_own_override_does(tables):
    recorded = tables.recorded_override
    assert recorded is not None and recorded.matches(tables.cia_to_decomp)
    ops = list(tables.cia_to_decomp)
    assert len(ops) > 100  # the table is the real one: hundreds of CIA ops
    before = _state(ops)
    with exported_program._override_composite_implicit_decomp(tables.cia_to_decomp):
        torchs = _state(ops)
    after_torchs = _state(ops)
    with recorded.entered():
        ours = _state(ops)
    after_ours = _state(ops)
    assert torchs != before  # the override does change the ops (else this test shows nothing)
    assert ours == torchs
    assert after_ours == after_torchs == before


def test_a_kernel_registered_since_the_recording_makes_decomposition_use_torchs_own(tables):
    recorded = tables.recorded_override
    op = next(iter(tables.cia_to_decomp))
    key = torch._C.DispatchKey.AutogradNestedTensor  # not among the keys either override touches
    assert key not in op.py_kernels
    op.py_impl(key)(lambda *args, **kwargs: NotImplemented)
    try:
        assert not recorded.matches(tables.cia_to_decomp)
        entries = recorded.entries
        with recorded_override(recorded):
            with exported_program._override_composite_implicit_decomp(tables.cia_to_decomp):
                assert op.py_kernels[key] is not None  # torch's own kept the new kernel
        assert recorded.entries == entries
    finally:
        del op.py_kernels[key]
        op._dispatch_cache.clear()
    assert recorded.matches(tables.cia_to_decomp)


def test_export_from_the_recording_is_byte_identical_to_the_public_api(pipeline, tmp_path):
    spec = spec_for(EXAMPLES, "encoder", "models/encoder.py:build_encoder", "models/encoder.py:example_inputs",
                    dynamic_shapes="models/encoder.py:dynamic_shapes")
    spec = spec.__class__(**{**spec.__dict__, "output": str(tmp_path / "ours" / "encoder.onnx"),
                             "report": str(tmp_path / "ours" / "encoder.md")})
    recorded = pipeline.tables.decompositions(pipeline.tables.registry(DEFAULT_OPSET)).recorded_override
    entries = recorded.entries
    result = pipeline.run(spec)
    assert result.status == "ok", result.findings
    assert recorded.entries == entries + 1  # the decomposition entered the recording

    module = sys.modules["models.encoder"]  # the job's: the .onnx names the model's classes by module
    public = tmp_path / "public" / "encoder.onnx"  # the same name: the .onnx names its data file
    public.parent.mkdir()
    torch.onnx.export(module.build_encoder(), module.example_inputs(), str(public), dynamo=True,
                      dynamic_shapes=module.dynamic_shapes(), verbose=False)
    assert public_api_difference(result.onnx, public) is None
