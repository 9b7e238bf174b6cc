"""Tolerances that follow the value's magnitude and dtype (exporter/verify/tolerance.py), on
models nobody here wrote: a `mismatch` only beyond rounding noise, and a real difference still
one.

* openai-whisper's `Whisper` (whisper/model.py), the tiny sizes, random init: its decoder's
  logits (`x @ self.token_embedding.weight.T`, up to a few hundred) carry float32 rounding of
  that size into their near-zero elements; with rtol 1e-3 / atol 1e-5 elementwise that was a
  `mismatch` warning. A GELU translated as x*sigmoid(1.702x) (the "quick GELU" a
  user might register) is a real difference, found at the first GELU (by hand: AudioEncoder's
  `x = F.gelu(self.conv1(x))` in whisper/model.py, the encoder's stem) and put on the
  translation, the library line related.
* diffusers' AutoencoderKL decoder in float16 (as Stable Diffusion runs its VAE): float32's
  tolerances were below one float16 unit (the zoo's vae-decode-fp16 case reported a `mismatch`
  of one ulp); float16 gets its own, and a wrong SiLU translation is still a `mismatch`.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

from onnxlens.exporter.verify.compare import compare
from onnxlens.exporter.verify.tolerance import NOISE_ULPS_NARROW, NOISE_ULPS_WIDE, Tolerance
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (whisper, diffusers)

WHISPER = '''
import torch
from whisper.model import ModelDimensions, Whisper

# openai-whisper's "tiny" sizes (whisper/__init__.py's checkpoint dims), random weights.
TINY = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=384, n_audio_head=6, n_audio_layer=4,
                       n_vocab=51865, n_text_ctx=448, n_text_state=384, n_text_head=6, n_text_layer=4)


def build():
    torch.manual_seed(0)
    model = Whisper(TINY).eval()
    # TextDecoder makes its positional embedding with torch.empty (the checkpoint fills it):
    # without weights it holds whatever the memory held, and every build computes another model.
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.01)
    return model


def inputs():
    generator = torch.Generator().manual_seed(1)
    return (torch.randn(1, 80, 3000, generator=generator), torch.randint(0, 51865, (1, 8), generator=generator))
'''

QUICK_GELU = '''
import torch
from onnxscript import opset18 as op


def quick_gelu(x, approximate: str = "none"):
    return op.Mul(x, op.Sigmoid(op.Mul(x, op.Constant(value_float=1.702))))


TABLE = {torch.ops.aten.gelu.default: quick_gelu}
'''

VAE = '''
import torch
from diffusers import AutoencoderKL


def build():
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=[32, 64], latent_channels=4,
                        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2)
    return vae.decoder.half().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 4, 16, 16).half(),)
'''

WRONG_SILU = '''
import torch
from onnxscript import opset18 as op


def steep_silu(x):
    return op.Mul(x, op.Sigmoid(op.Mul(x, op.CastLike(op.Constant(value_float=1.702), x))))


TABLE = {torch.ops.aten.silu.default: steep_silu}
'''


def _largest(root: Path, module: str) -> float:
    """The largest |value| torch computes for the workspace module's model and inputs."""
    namespace = runpy.run_path(str(root / module))
    with torch.no_grad():
        return float(namespace["build"]()(*namespace["inputs"]()).abs().max())


def _export(root: Path, name: str, module: str, text: str, **options):
    write(root, f"{module}.py", text)
    return shared_pipeline().run(spec_for(root, name, f"{module}.py:build", f"{module}.py:inputs",
                                          verify=True, **options))


def test_whisper_logits_differ_by_rounding_only_and_pass(tmp_path):
    result = _export(tmp_path, "whisper", "speech", WHISPER)
    assert result.status == "ok", [f.message for f in result.findings]
    summary = result.verification
    assert summary.passed is True and summary.error is None, summary
    assert [f for f in result.findings if f.code in ("mismatch", "verification")] == []
    (logits,) = summary.outputs
    assert logits.shape == [1, 8, 51865] and logits.dtype == "float32"
    # The floor the logits were compared with is float32's noise at their largest magnitude.
    # (the eager model's largest logit: the exported program's differs by rounding)
    scale = _largest(tmp_path, "speech.py")
    assert logits.noise == pytest.approx(NOISE_ULPS_WIDE * torch.finfo(torch.float32).eps * scale, rel=1e-2)
    assert logits.max_abs_diff < logits.noise


def test_whisper_with_a_wrong_gelu_translation_is_still_a_mismatch_on_the_translation(tmp_path):
    write(tmp_path, "gelu_table.py", QUICK_GELU)
    result = _export(tmp_path, "whisper_quick", "speech_quick", WHISPER, custom_translations="gelu_table.py:TABLE")
    assert result.status == "ok"
    summary = result.verification
    assert summary.passed is False
    first = summary.first_mismatch
    assert (first.target, first.module) == ("aten.gelu.default", "encoder")
    (finding,) = [f for f in result.findings if f.code == "mismatch"]
    assert Path(finding.location.file).resolve() == (tmp_path / "gelu_table.py").resolve()
    import whisper.model

    library = Path(whisper.model.__file__).resolve()
    stem = line_of(library, "x = F.gelu(self.conv1(x))")
    assert (str(library), stem) in [(str(Path(r.file).resolve()), r.line) for r in finding.related]
    assert "your ONNX translation of aten.gelu.default (`quick_gelu`)" in finding.message
    assert "x the tolerance" in finding.message and "float32: rtol 0.001" in finding.message


def test_a_float16_vae_decoder_passes_with_float16_tolerances(tmp_path):
    result = _export(tmp_path, "vae", "vae16", VAE)
    assert result.status == "ok", [f.message for f in result.findings]
    summary = result.verification
    assert summary.passed is True and summary.error is None, summary
    (image,) = summary.outputs
    eps = torch.finfo(torch.float16).eps
    assert image.dtype == "float16" and image.rtol == 8 * eps
    largest = _largest(tmp_path, "vae16.py")
    assert image.atol >= eps and image.noise == pytest.approx(NOISE_ULPS_NARROW * eps * largest, rel=1e-2)


def test_a_float16_vae_decoder_with_a_wrong_silu_is_a_mismatch(tmp_path):
    write(tmp_path, "silu_table.py", WRONG_SILU)
    result = _export(tmp_path, "vae_steep", "vae16_steep", VAE, custom_translations="silu_table.py:TABLE")
    assert result.status == "ok"
    assert result.verification.passed is False
    assert result.verification.first_mismatch.target == "aten.silu.default"
    (finding,) = [f for f in result.findings if f.code == "mismatch"]
    assert "float16: rtol 0.00781" in finding.message


def test_noise_at_the_scale_of_the_largest_terms_passes_and_a_real_error_does_not():
    """The rule itself, on a real float32 computation against its float64 reference: logits as a
    matmul of unit-scale activations with large weights. Near-zero logits carry rounding of the
    size of the large ones."""
    generator = torch.Generator().manual_seed(0)
    activations = torch.randn(8, 384, generator=generator, dtype=torch.float64)
    weights = torch.randn(384, 4096, generator=generator, dtype=torch.float64) * 4
    exact = activations @ weights
    rounded = (activations.float() @ weights.float()).double()
    near_zero = exact.abs() < 1e-2
    assert near_zero.any()
    elementwise_only = (rounded - exact).abs() > 1e-5 + 1e-3 * exact.abs()
    assert (elementwise_only & near_zero).any()  # what rtol 1e-3 / atol 1e-5 alone called a mismatch
    passing = compare(exact.float(), rounded.float(), tolerance=Tolerance())
    assert passing.passed and passing.excess < 1
    wrong = rounded.clone()
    wrong[0, :16] += 0.5  # a real error, far below rtol * the largest logits
    failing = compare(exact.float(), wrong.float(), tolerance=Tolerance())
    assert not failing.passed and failing.excess > 1
    # Set tolerances replace the dtype's defaults; the noise floor stays.
    assert compare(exact.float(), wrong.float(), tolerance=Tolerance(atol=1.0)).passed


def test_integers_and_booleans_have_no_noise_floor():
    big = torch.tensor([1_000_000, 5], dtype=torch.int64)
    assert not compare(big, big + torch.tensor([0, 1]), tolerance=Tolerance()).passed
    assert compare(big, big, tolerance=Tolerance()).passed
    flags = torch.tensor([True, False])
    assert not compare(flags, ~flags, tolerance=Tolerance(rtol=1.0, atol=1.0)).passed
