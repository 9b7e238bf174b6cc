"""Random fills kept from a target's previous export are replayed only when they compute the same
(pipeline/target/kept_fills.py): the model built on the next save, its saved weights and the random
numbers the factories draw after it are those of a build without them, byte for byte.

The model is transformers' BertModel from a small config (its init: nn.Linear's kaiming_uniform_,
then transformers' normal_ over every weight), seeded in the factory; the inputs factory draws
from the same generator after it. The kept fills live in a real memory file, as the zygote holds
them; the pipeline runs in-process (a worker child gets the same descriptor).
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import time

import pytest
import torch

from onnxlens.exporter.onnx_pair import public_api_difference
from onnxlens.exporter.pipeline.target.kept_fills import KeptFills
from tests.exporter.engine_support import shared_pipeline, spec_for, write

BERT = '''
import torch
from transformers import BertConfig, BertModel

SEED = 0


def build():
    torch.manual_seed(SEED)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=500)
    return BertModel(config).eval()


def inputs():
    # Drawn after the model's init, from the same generator: its state after the init shows here.
    return (torch.randint(0, 500, (2, 8)), torch.ones(2, 8, dtype=torch.long))
'''


def _stock(module_name: str, path):
    """The public API's export of the same model, built without any kept fills."""
    module = sys.modules[module_name]
    model, args = module.build(), module.inputs()
    torch.onnx.export(model, args, str(path), dynamo=True, verbose=False)
    return args


def _replays(log: list[str]) -> str:
    return next((line for line in log if "random fills" in line), "")


@pytest.fixture
def kept():
    fd = os.memfd_create("onnxlens-fills-test", os.MFD_CLOEXEC)
    yield fd
    os.close(fd)


def test_a_second_build_replays_the_fills_and_exports_the_same_bytes(tmp_path, kept):
    write(tmp_path, "models/bert.py", BERT)
    spec = spec_for(tmp_path, "bert", "models/bert.py:build", "models/bert.py:inputs")
    pipeline = shared_pipeline()
    logs = []
    for _ in range(2):
        log = []
        job = pipeline.export(spec, lambda event, log=log: log.append(getattr(event, "text", "")), kept_fills_fd=kept)
        pipeline.finish(job)
        assert job.result.status == "ok", job.result.findings
        logs.append(_replays(log))
        inputs = job.target.args

    assert " 0 replayed" in logs[0] and " computed" in logs[0]
    computed = int(logs[0].split("), ")[1].split()[0]) if "), " in logs[0] else None
    assert computed and computed > 10  # one fill per weight at least: these were recorded
    assert f"{computed} replayed" in logs[1] and logs[1].endswith(" 0 computed")
    # The model's weights and the generator after it are a fresh build's: the saved pair is the
    # public API's, and the inputs drawn after the init are the same numbers.
    (tmp_path / "stock").mkdir()
    stock_inputs = _stock("models.bert", tmp_path / "stock" / "bert.onnx")
    assert public_api_difference(job.result.onnx, tmp_path / "stock" / "bert.onnx") is None
    assert all(torch.equal(a, b) for a, b in zip(inputs, stock_inputs))


def test_another_seed_computes_its_fills_again(tmp_path, kept):
    write(tmp_path, "models/bert.py", BERT)
    spec = spec_for(tmp_path, "bert", "models/bert.py:build", "models/bert.py:inputs")
    pipeline = shared_pipeline()
    pipeline.export(spec, kept_fills_fd=kept)
    write(tmp_path, "models/bert.py", BERT.replace("SEED = 0", "SEED = 1"))
    log = []
    job = pipeline.export(spec, lambda event: log.append(getattr(event, "text", "")), kept_fills_fd=kept)

    assert job.result.status == "ok", job.result.findings
    assert " 0 replayed" in _replays(log)  # the generator's state differs: every key is new
    (tmp_path / "stock").mkdir()
    _stock("models.bert", tmp_path / "stock" / "bert.onnx")
    assert public_api_difference(job.result.onnx, tmp_path / "stock" / "bert.onnx") is None


def test_kept_fills_in_use_by_another_job_are_not_used(kept):
    holder = os.fork()
    if holder == 0:  # another process of the target holds them (POSIX locks are per process)
        KeptFills.open(kept)
        time.sleep(60)
        os._exit(0)
    try:
        deadline = time.monotonic() + 60
        while _lockable(kept):  # wait on the lock's state
            assert time.monotonic() < deadline, "the other process never took the lock"
            time.sleep(0.01)
        second = KeptFills.open(kept)
        weights = torch.empty(16)
        second.fill(torch.ops.aten.normal_.default, (weights,), {}, lambda: weights.normal_())
        assert (second.usable, second.hits, second.misses) == (False, 0, 0)
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)


def _lockable(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    fcntl.lockf(fd, fcntl.LOCK_UN)
    return True


def test_an_unreadable_index_keeps_nothing(kept):
    os.pwrite(kept, b"onnxlens-fills-1" + (10**6).to_bytes(8, "little") + (50).to_bytes(8, "little"), 0)
    os.pwrite(kept, b"\xc1" * 50, 10**6)  # not msgpack
    fills = KeptFills.open(kept)
    weights = torch.empty(8)
    torch.manual_seed(0)
    fills.fill(torch.ops.aten.normal_.default, (weights,), {}, lambda: weights.normal_())
    torch.manual_seed(0)
    assert (fills.hits, fills.misses) == (0, 1) and torch.equal(weights, torch.empty(8).normal_())
    fills.close()
