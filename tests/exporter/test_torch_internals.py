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
from onnxlens.exporter.torch_internals.active import FALLBACK_REASON, internals

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
