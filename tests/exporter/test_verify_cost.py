"""Verification kept from being the largest part of a save on big inputs:

* an unchanged verification is not run again (exporter/verify/reuse.py): a save that only adds
  a comment (every line moves) takes the kept summary; new weights, a wrong translation or
  `--no-cache` verify again; a kept verification not signed with the user's key (written by
  hand, by another user) is not taken, however right its digest;
* `verify-inputs = "small"` (exporter/verify/small_inputs.py): the example cut along its dynamic
  dimensions, on transformers' BERT; the cut sizes are the second shape too, so a size fixed in
  the graph is still a `baked-shape` warning, and a wrong translation still a `mismatch`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from onnxlens.exporter.types import TargetSpec, VerificationSummary
from onnxlens.exporter.verify import reuse
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (transformers' BERT) and verification timed

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "onnxlens.server.cli"]


def _encoder_workspace(root: Path) -> tuple[Path, TargetSpec]:
    shutil.copytree(REPO / "examples" / "models", root / "encoder_models")
    spec = spec_for(root, "encoder", "encoder_models/encoder.py:build_encoder", "encoder_models/encoder.py:example_inputs",
                    verify=True, dynamic_shapes="encoder_models/encoder.py:dynamic_shapes")
    return root / "encoder_models" / "encoder.py", spec


def _prepend(path: Path, text: str) -> None:
    path.write_text(text + path.read_text())


def test_a_save_that_leaves_the_graph_unchanged_reuses_the_verification(tmp_path):
    model_file, spec = _encoder_workspace(tmp_path)
    first = shared_pipeline().run(spec)
    assert first.verification.passed and first.verification.reused is None
    assert Path(spec.verification_record).is_file()

    _prepend(model_file, "# a comment: every line of the model moves\n")
    again = shared_pipeline().run(spec)
    assert again.status == "ok" and again.verification.reused is True
    assert (again.verification.max_abs_diff, again.verification.other_sizes) == (
        first.verification.max_abs_diff, first.verification.other_sizes)

    model_file.write_text(model_file.read_text().replace("torch.manual_seed(0)\n    return Encoder",
                                                         "torch.manual_seed(1)\n    return Encoder"))
    other_weights = shared_pipeline().run(spec)
    assert other_weights.verification.passed and other_weights.verification.reused is None


QUICK_GELU = '''
        import torch
        from onnxscript import opset18 as op
        from torch import nn


        def quick_gelu(x, approximate: str = "none"):
            return op.Mul(x, op.Sigmoid(op.Mul(x, op.Constant(value_float=1.702))))


        TABLE = {torch.ops.aten.gelu.default: quick_gelu}


        def build():
            torch.manual_seed(0)
            return nn.Sequential(nn.Linear(8, 16), nn.GELU()).eval()


        def inputs():
            torch.manual_seed(0)
            return (torch.randn(4, 8),)
    '''


def test_a_verification_with_a_finding_is_not_kept(tmp_path):
    write(tmp_path, "quick.py", QUICK_GELU)
    spec = spec_for(tmp_path, "quick", "quick.py:build", "quick.py:inputs", verify=True,
                    custom_translations="quick.py:TABLE")
    for _ in range(2):
        result = shared_pipeline().run(spec)
        assert [f.code for f in result.findings] == ["mismatch"] and result.verification.reused is None
    assert not Path(spec.verification_record).exists()


def test_a_forged_record_does_not_hide_a_mismatch(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))  # this user's key, made here
    write(tmp_path, "quick.py", QUICK_GELU)
    spec = spec_for(tmp_path, "quick", "quick.py:build", "quick.py:inputs", verify=True,
                    custom_translations="quick.py:TABLE")
    job = shared_pipeline().export(spec)
    shared_pipeline().finish(job)  # verification comes after the result
    assert [f.code for f in job.result.findings] == ["mismatch"]
    # Anyone can compute the digest: it is a hash of the model, the program and the inputs.
    key = reuse.digest(job.decomposed, job.onnx_program.model, job.target.args, job.target.kwargs, spec)
    passing = VerificationSummary(passed=True)
    payload = json.dumps({"digest": key, "summary": passing.to_dict()})
    record = Path(spec.verification_record)
    record.parent.mkdir(parents=True, exist_ok=True)
    forgeries = {
        "unsigned": {"digest": key, "summary": passing.to_dict()},
        "another key": {"payload": payload, "signature": hmac.new(b"k" * 32, payload.encode(), hashlib.sha256).hexdigest()},
    }
    for forged in forgeries.values():
        record.write_text(json.dumps(forged))
        result = shared_pipeline().run(spec)
        assert [f.code for f in result.findings] == ["mismatch"] and result.verification.reused is None

    reuse.keep(spec, key, passing)  # the same summary, signed with this user's key: taken
    assert shared_pipeline().run(spec).verification.reused is True


def test_a_program_with_a_custom_op_has_no_digest(tmp_path):
    @torch.library.custom_op("onnxlens_test::scaled", mutates_args=())
    def scaled(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @scaled.register_fake
    def _(x):
        return torch.empty_like(x)

    class Net(torch.nn.Module):
        def forward(self, x):
            return scaled(x) + 1

    args = (torch.randn(3),)
    program = torch.export.export(Net(), args)
    spec = spec_for(tmp_path, "net", "net.py:build", "net.py:inputs")
    # its Python kernel is code no digest covers: decided before the ONNX model is looked at
    assert reuse.digest(program, None, args, {}, spec) is None


def test_no_cache_verifies_again(tmp_path):
    model_file, _ = _encoder_workspace(tmp_path)
    write(tmp_path, "pyproject.toml", '''
        [tool.onnxlens]

        [[tool.onnxlens.target]]
        name = "encoder"
        model = "encoder_models/encoder.py:build_encoder"
        inputs = "encoder_models/encoder.py:example_inputs"
        second-shape = false
    ''')

    def check(*options: str) -> dict:
        process = subprocess.run([*CLI, "check", str(tmp_path), "--format", "json", *options],
                                 capture_output=True, text=True, timeout=600)
        assert process.returncode == 0, process.stderr[-3000:]
        (target,) = json.loads(process.stdout)["targets"]
        assert target["status"] == "ok" and not target["cached"]
        return target["verification"]

    assert "reused" not in check()
    _prepend(model_file, "# edited\n")  # the result cache misses; verification is unchanged
    assert check()["reused"] is True
    assert "reused" not in check("--no-cache")


BERT = '''
import torch
from torch.export import Dim
from transformers import BertConfig, BertModel


def build():
    torch.manual_seed(0)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    return BertModel(config).eval()


def inputs():
    return (torch.randint(0, 30522, (2, 64), generator=torch.Generator().manual_seed(0)),)


def shapes():
    return {"input_ids": {0: Dim.AUTO, 1: Dim.AUTO}}
'''


def test_small_inputs_cut_the_example_along_its_dynamic_dimensions(tmp_path):
    write(tmp_path, "bert_small.py", BERT)
    result = shared_pipeline().run(spec_for(tmp_path, "bert", "bert_small.py:build", "bert_small.py:inputs",
                                            verify=True, dynamic_shapes="bert_small.py:shapes", verify_inputs="small"))
    assert result.status == "ok" and result.findings == []
    summary = result.verification
    # batch 2 cannot be cut (Dim.AUTO starts at 2); the sequence is cut to a quarter
    assert summary.inputs == 'input_ids: [2, 16] instead of [2, 64] (verify-inputs = "small")'
    assert summary.passed and summary.outputs[0].shape == [2, 16, 64]
    assert summary.other_sizes is None  # the cut sizes were the other sizes


def test_small_inputs_still_find_a_wrong_translation_and_a_fixed_size(tmp_path):
    write(tmp_path, "bert_small.py", BERT)
    write(tmp_path, "gelu_table.py", '''
        import torch
        from onnxscript import opset18 as op


        def quick_gelu(x, approximate: str = "none"):
            return op.Mul(x, op.Sigmoid(op.Mul(x, op.Constant(value_float=1.702))))


        TABLE = {torch.ops.aten.gelu.default: quick_gelu}
    ''')
    wrong = shared_pipeline().run(spec_for(tmp_path, "bert", "bert_small.py:build", "bert_small.py:inputs",
                                           verify=True, dynamic_shapes="bert_small.py:shapes", verify_inputs="small",
                                           custom_translations="gelu_table.py:TABLE"))
    assert [f.code for f in wrong.findings] == ["mismatch"]  # wrong at the example's sizes too
    assert wrong.verification.first_mismatch.target == "aten.gelu.default"

    from tests.exporter.test_second_shape import POOLED

    write(tmp_path, "pooled.py", POOLED)
    pooled = shared_pipeline().run(spec_for(tmp_path, "summary", "pooled.py:Summary", "pooled.py:inputs", verify=True,
                                            dynamic_shapes="pooled.py:shapes", verify_inputs="small"))
    summary = pooled.verification
    assert summary.passed and summary.other_sizes == "x: [2, 4, 8] instead of [2, 16, 8]"
    assert summary.other_sizes_passed is False
    (finding,) = pooled.findings
    assert finding.code == "baked-shape" and "with the smaller inputs (x: [2, 4, 8] instead of [2, 16, 8])" in finding.message
    assert finding.location.line == line_of(tmp_path / "pooled.py", "F.adaptive_avg_pool1d(h, 4)")
