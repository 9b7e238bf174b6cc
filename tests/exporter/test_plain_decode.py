"""The one decoder of plain data (exporter/wire/plain.py): a real export's result, every nested field
filled by a real pipeline run, comes back equal through msgpack; and its rules, on small classes."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgpack
import pytest

from onnxlens.exporter.wire.plain import Plain, decode
from onnxlens.exporter.types import ExportedGraph, ExportResult, TargetSpec

from tests.exporter.engine_support import shared_pipeline, spec_for
from tests.support.workspace import copy_examples


def through_the_pipe(data: dict) -> dict:
    return msgpack.unpackb(msgpack.packb(data, use_bin_type=True), raw=False, strict_map_key=False)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[ExportResult]:
    workspace = copy_examples(tmp_path_factory.mktemp("plain"))
    encoder = spec_for(workspace, "encoder", "models/encoder.py:build_encoder", "models/encoder.py:example_inputs",
                       dynamic_shapes="models/encoder.py:dynamic_shapes", input_names=["tokens"],
                       output_names=["hidden"], verify=True, profile=True)
    spectral = spec_for(workspace, "spectral", "models/spectral.py:SpectralNet", "models/spectral.py:example_inputs")
    return [shared_pipeline().run(encoder), shared_pipeline().run(spectral)]


def test_a_real_result_comes_back_equal_with_every_nested_field_typed(results):
    encoder, spectral = results
    # The fields the decoder must rebuild are there to rebuild (else the test proves nothing).
    assert encoder.verification is not None and encoder.verification.outputs
    assert encoder.graph is not None and encoder.graph.inputs and encoder.lines and encoder.written
    assert encoder.cost is not None and encoder.cost.lines
    assert spectral.findings and spectral.findings[0].location is not None and spectral.findings[0].translation_stubs
    for result in results:
        decoded = ExportResult.from_dict(through_the_pipe(result.to_dict()))
        assert decoded == result
        assert decoded.to_dict() == result.to_dict()
    graph = ExportedGraph.of(encoder)
    assert ExportedGraph.from_dict(through_the_pipe(graph.to_dict())) == graph


def test_a_spec_comes_back_equal(results, tmp_path):
    spec = spec_for(tmp_path, "t", "m.py:f", "m.py:g", input_names=["x"], memory_limit_mb=512)
    assert TargetSpec.from_dict(through_the_pipe(spec.to_dict())) == spec


@dataclass
class Inner(Plain):
    name: str
    size: int = 0


@dataclass(frozen=True)
class Outer(Plain):
    first: Inner
    maybe: Inner | None = None
    many: list[Inner] = field(default_factory=list)
    frozen: tuple[Inner, ...] = ()
    by_key: dict[str, Inner] = field(default_factory=dict)
    plain: dict[str, list[int]] = field(default_factory=dict)


def test_nested_dataclasses_are_rebuilt_from_their_hints():
    data = {"first": {"name": "a"}, "maybe": {"name": "b", "size": 2}, "many": [{"name": "c"}],
            "frozen": [{"name": "d"}], "by_key": {"k": {"name": "e"}}, "plain": {"p": [1, 2]}}
    assert decode(Outer, data) == Outer(Inner("a"), Inner("b", 2), [Inner("c")], (Inner("d"),),
                                        {"k": Inner("e")}, {"p": [1, 2]})


def test_unknown_keys_are_ignored_and_missing_ones_take_their_default():
    assert decode(Outer, {"first": {"name": "a", "from_a_newer_peer": 1}, "newer": True}) == Outer(Inner("a"))
    with pytest.raises(TypeError):
        decode(Outer, {"maybe": None})  # `first` is required


def test_values_are_kept_as_they_came_where_no_dataclass_is_expected():
    assert decode(Outer, {"first": "not a dict", "maybe": None}) == Outer("not a dict", None)  # type: ignore[arg-type]
