"""A save whose weights are the committed pair's keeps that data file instead of writing it again
(pipeline/output/kept_weights.py), and the pair it commits is still byte for byte the public API's.

The model is transformers' BertModel from a small config, seeded in its factory (so two builds have
the same weights). A save is told to have kept the file by its inode: the test holds the committed
data file open across the next save, so a new file cannot get that inode number.
"""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np
import onnx_ir as ir
import pytest
import torch

from onnxlens.exporter.onnx_pair import data_file_name, named_data_file, public_api_difference
from onnxlens.exporter.pipeline.output.kept_weights import _holds, _Write
from tests.exporter.engine_support import shared_pipeline, spec_for, write

BERT = '''
import torch
from transformers import BertConfig, BertModel

SEED = 0
ACTIVATION = "gelu"


def build():
    torch.manual_seed(SEED)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=500, hidden_act=ACTIVATION)
    return BertModel(config).eval()


def inputs():
    return (torch.randint(0, 500, (2, 8)), torch.ones(2, 8, dtype=torch.long))
'''


def _export(tmp_path, source: str):
    write(tmp_path, "models/bert.py", source)
    pipeline = shared_pipeline()
    log: list[str] = []
    job = pipeline.export(spec_for(tmp_path, "bert", "models/bert.py:build", "models/bert.py:inputs"),
                          lambda event: log.append(getattr(event, "text", "")))
    pipeline.finish(job)
    assert job.result.status == "ok", job.result.findings
    return job.result, log


def _stock_difference(tmp_path, saved_onnx: str) -> str | None:
    module = sys.modules["models.bert"]
    stock = tmp_path / "stock" / "bert.onnx"
    stock.parent.mkdir(exist_ok=True)
    torch.onnx.export(module.build(), module.inputs(), str(stock), dynamo=True, verbose=False)
    return public_api_difference(saved_onnx, stock)


@pytest.fixture
def committed(tmp_path):
    """The first save's result, its data file held open (its inode number stays taken)."""
    result, _ = _export(tmp_path, BERT)
    fd = os.open(named_data_file(result.onnx), os.O_RDONLY)
    yield result, fd
    os.close(fd)


def test_a_new_graph_with_the_same_weights_keeps_the_committed_data_file(tmp_path, committed):
    first, held = committed
    first_graph = open(first.onnx, "rb").read()
    result, log = _export(tmp_path, BERT.replace('ACTIVATION = "gelu"', 'ACTIVATION = "relu"'))

    data = named_data_file(result.onnx)
    assert os.stat(data).st_ino == os.fstat(held).st_ino  # the same file: not written again
    assert open(result.onnx, "rb").read() != first_graph  # another graph (another activation)
    assert any("weights kept" in line for line in log), log
    # Named by their content after the result, as any save's (the same name as before).
    assert data.name == data_file_name("bert.onnx", hashlib.sha256(data.read_bytes()).hexdigest())
    assert data.name == os.path.basename(first.onnx_data)
    assert _stock_difference(tmp_path, result.onnx) is None


def test_other_weights_of_the_same_shapes_are_written(tmp_path, committed):
    _, held = committed
    result, log = _export(tmp_path, BERT.replace("SEED = 0", "SEED = 1"))

    assert os.stat(named_data_file(result.onnx)).st_ino != os.fstat(held).st_ino
    assert not any("weights kept" in line for line in log), log
    assert _stock_difference(tmp_path, result.onnx) is None


def test_a_committed_data_file_changed_in_its_last_byte_is_not_kept(tmp_path, committed):
    _, held = committed
    size = os.fstat(held).st_size
    last = os.pread(held, 1, size - 1)
    with open(f"/proc/self/fd/{held}", "r+b") as same_file:  # the same inode, one byte other
        same_file.seek(size - 1)
        same_file.write(bytes([last[0] ^ 1]))
    result, _ = _export(tmp_path, BERT.replace('ACTIVATION = "gelu"', 'ACTIVATION = "relu"'))

    assert os.stat(named_data_file(result.onnx)).st_ino != os.fstat(held).st_ino
    assert _stock_difference(tmp_path, result.onnx) is None


def test_a_file_holds_the_writes_with_zeros_between_them_and_nothing_after(tmp_path):
    writes = [_Write(0, ir.tensor(np.arange(1, 5, dtype=np.uint8))), _Write(8, ir.tensor(np.full(3, 7, np.uint8)))]
    cases = {
        "holes": (bytes([1, 2, 3, 4, 0, 0, 0, 0, 7, 7, 7]), True),
        "a byte in a hole": (bytes([1, 2, 3, 4, 0, 9, 0, 0, 7, 7, 7]), False),
        "a byte after": (bytes([1, 2, 3, 4, 0, 0, 0, 0, 7, 7, 7, 0]), False),
        "a tensor's byte": (bytes([1, 2, 3, 4, 0, 0, 0, 0, 7, 6, 7]), False),
    }
    for name, (content, held) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert _holds(str(path), writes) is held, name
