"""The adapter of torch's internals: which one a torch version selects, that each adapter gives
the pipeline everything it asks for, and that this process runs the one made for its torch.

Run in each tested environment (torch 2.12, 2.13, 2.14, 2.15: README "Supported torch
versions"), the last test shows the adapter each release gets."""

from __future__ import annotations

import importlib

import pytest
import torch

from onnxlens.exporter.torch_internals import (ADAPTERS, PUBLIC, VERSION_VARIABLE, adapter_for, adapter_in, describe,
                                               seen_torch_version)
from onnxlens.exporter.torch_internals.active import FALLBACK_REASON, internals, missing_pieces

EXPECTED = {"2.12": "torch_2_12", "2.13": "torch_2_13", "2.14": "torch_2_13", "2.15": "torch_2_13"}


@pytest.mark.parametrize("version, adapter", [
    ("2.12.1", "torch_2_12"), ("2.12.0+cu130", "torch_2_12"),
    ("2.13.0+cpu", "torch_2_13"), ("2.13.2", "torch_2_13"),  # a patch release is admitted
    ("2.14.1", "torch_2_13"), ("2.15.0", "torch_2_13"),
    ("2.16.0", PUBLIC), ("2.16.0.dev20270101+cpu", PUBLIC), ("3.0.0", PUBLIC),  # newer: the public path
    ("2.11.0", PUBLIC), ("2.10.0", PUBLIC),  # older than the oldest adapter
    ("", PUBLIC), (None, PUBLIC), ("nightly", PUBLIC),
])
def test_a_torch_version_selects_its_adapter(version, adapter):
    assert adapter_for(version) == adapter


def test_the_version_variable_is_what_the_selection_sees():
    assert seen_torch_version("2.13.0", {VERSION_VARIABLE: "2.99.0"}) == "2.99.0"
    assert adapter_in("2.13.0", {VERSION_VARIABLE: "2.99.0"}) == PUBLIC
    assert adapter_in("2.13.0", {VERSION_VARIABLE: ""}) == "torch_2_13"  # empty: not set
    assert adapter_in("2.16.0", {}) == PUBLIC


def test_adapters_are_described_with_the_releases_they_serve():
    assert describe("torch_2_13") == "torch_2_13 (torch 2.13–2.15)"
    assert describe("torch_2_12") == "torch_2_12 (torch 2.12)"
    assert describe(PUBLIC).startswith("public")


@pytest.mark.parametrize("name", sorted(set(ADAPTERS.values())))
def test_every_full_adapter_gives_the_reference_interface(name):
    reference = importlib.import_module("onnxlens.exporter.torch_internals.torch_2_13")
    adapter = importlib.import_module(f"onnxlens.exporter.torch_internals.{name}")
    assert adapter.FULL is True and adapter.NAME == name
    missing = [attribute for attribute in reference.__all__ if not hasattr(adapter, attribute)]
    assert not missing


def test_the_public_adapter_gives_what_the_public_path_uses():
    public = importlib.import_module("onnxlens.exporter.torch_internals.public")
    assert public.FULL is False and public.DEFAULT_OPSET is None
    assert public.is_torch_op(torch.ops.aten.add) and public.is_torch_op(torch.ops.aten.add.Tensor)
    assert not public.is_torch_op(torch.add)
    assert public.overloads(torch.ops.aten.relu) == [getattr(torch.ops.aten.relu, name)
                                                     for name in torch.ops.aten.relu.overloads()]
    assert public.tree_map(lambda x: x * 2, ((1, [2]), {"a": 3})) == ((2, [4]), {"a": 6})
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake = torch.empty(2)
    assert public.is_fake(fake) and not public.is_fake(torch.empty(2))


def test_this_process_runs_the_adapter_made_for_its_torch():
    minor = ".".join(torch.__version__.split(".")[:2])
    assert internals.NAME == EXPECTED[minor], f"torch {torch.__version__}"
    assert FALLBACK_REASON is None


def test_pieces_torch_lacks_are_named():
    """What makes the process take the public path when a patch release moved a private piece."""
    assert missing_pieces(("torch.nn.Linear", "torch.onnx._internal.exporter._core._no_such_function",
                           "torch.fx.proxy.TracerBase.no_such_method", "no_such_package.thing")) == [
        "torch.onnx._internal.exporter._core._no_such_function", "torch.fx.proxy.TracerBase.no_such_method",
        "no_such_package.thing"]
    assert not missing_pieces(internals.PIECES)


def test_translating_every_node_reports_each_failure_and_leaves_the_stock_translation_as_it_was():
    """`translation_failures` (run only after `translate` failed) replaces `_core`'s node
    handlers while it runs: afterwards the stock translation raises exactly what it raised
    before, and a program that translates gives the same model."""
    if not internals.FULL:
        pytest.skip("the public path has no adapter")

    class Shifts(torch.nn.Module):
        def forward(self, x, s):
            n = int(s)
            return (x << n) + (x >> n)

    class Plain(torch.nn.Module):
        def forward(self, x):
            return x * 2

    registry = internals.build_registry(internals.DEFAULT_OPSET)
    tables = internals.decomposition_tables(registry)

    def decomposed(model, args):
        captured = internals.capture("strict", model, args, {}, None)
        assert captured.error is None, captured.error
        return internals.decompose(captured.program, *tables, None)

    failing = decomposed(Shifts(), (torch.arange(8), torch.tensor(2)))
    with pytest.raises(Exception) as before:
        internals.translate(failing, registry, internals.DEFAULT_OPSET)
    failures = internals.translation_failures(failing, registry)
    assert [failure.node.name for failure in failures] == ["lshift", "rshift"]
    assert all("Error when translating node %" in str(failure.error) for failure in failures)
    with pytest.raises(type(before.value)) as after:
        internals.translate(failing, registry, internals.DEFAULT_OPSET)
    assert str(after.value) == str(before.value)
    plain = decomposed(Plain(), (torch.randn(2, 3),))
    first = internals.translate(plain, registry, internals.DEFAULT_OPSET).model_proto.SerializeToString()
    internals.translation_failures(plain, registry)
    assert not internals.translation_failures(plain, registry)
    assert internals.translate(plain, registry, internals.DEFAULT_OPSET).model_proto.SerializeToString() == first


class _Threshold(torch.nn.Module):
    def forward(self, x):
        kept = x[x > 0]
        if kept.numel() > 4:  # the example (6 positive values) takes this branch
            return kept * 2
        if kept.max() > 1:  # the other branch asks for a value of its own
            return kept * 3
        return kept


def test_a_draft_run_takes_the_other_branch_and_leaves_torch_as_it_found_it():
    """`draft_export_failures` replaces methods of torch's shape environment, fake tensor mode and
    draft_export while it runs (torch_internals/draft_run.py): afterwards every one is torch's own
    again and torch.export fails exactly as before. With `other_side_of`, the condition on that
    line takes the branch the example does not, and the problem behind it is seen."""
    if not internals.FULL:
        pytest.skip("the public path has no adapter")
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.export import _draft_export
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    import inspect

    source = inspect.getsourcefile(_Threshold)
    lines, first = inspect.getsourcelines(_Threshold)
    condition, behind = (first + next(i for i, text in enumerate(lines) if needle in text)
                         for needle in ("if kept.numel() > 4:", "if kept.max() > 1:"))
    args = (torch.tensor([1.0, 2.0, -1.0, 3.0, 4.0, 5.0, 6.0]),)

    def stock_error() -> str:
        captured = internals.capture("non-strict", _Threshold(), args, {}, None)
        assert captured.program is None
        return f"{type(captured.error).__name__}: {captured.error}"

    def torch_pieces() -> list:
        return [ShapeEnv.__dict__["evaluate_expr"], ShapeEnv.__dict__["_log_real_tensor_propagation"],
                FakeTensorMode.__dict__["_maybe_infer_fake_kernel_from_pytree_out"],
                _draft_export.CaptureStructuredTrace, _draft_export._export]

    before, pieces = stock_error(), torch_pieces()

    def lines_of(run) -> list[int]:
        return [frames[-1].lineno for frames in ([s for s in failure.stack if s.filename == source]
                                                 for failure in run.failures) if frames]

    internal = lambda file: file != source  # noqa: E731 - the model is the only code that is not torch's here
    example_side = internals.draft_export_failures(_Threshold(), args, {}, None, internal=internal)
    assert lines_of(example_side) == [condition] and example_side.flips == []
    other_side = internals.draft_export_failures(_Threshold(), args, {}, None, internal=internal,
                                                 other_side_of=(source, condition))
    assert [flip.example for flip in other_side.flips] == [True] and other_side.flips[0].expr.endswith(" > 4")
    assert lines_of(other_side) == [behind]
    assert torch_pieces() == pieces
    assert stock_error() == before
