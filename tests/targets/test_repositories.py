"""What `onnxlens init` adds on real repositories' code, installed as packages (the `repos`
extra: openai-whisper, segment-anything, vit-pytorch) and copied into a temporary workspace; read
with ast, nothing imported. What must be found and what must not was read off the packages'
sources by hand:

* whisper/model.py: `Whisper(dims: ModelDimensions)` is the model; `LayerNorm(nn.LayerNorm)`,
  `Linear(nn.Linear)`, `Conv1d(nn.Conv1d)` subclass torch's layers; MultiHeadAttention,
  ResidualAttentionBlock, AudioEncoder and TextDecoder are built in other classes' `__init__`.
  ModelDimensions is a dataclass of ten ints without defaults, and no file of the package gives
  them (load_model reads them from a checkpoint): the factory asks for them.
* segment_anything/modeling: ImageEncoderViT (all defaults, img_size=1024, in_chans=3),
  PromptEncoder, MaskDecoder, TwoWayTransformer and Sam are built by build_sam.py's
  `_build_sam` (a function, not an `__init__`); SamOnnxModel (utils/onnx.py) wraps Sam. Block,
  Attention, PatchEmbed, MLPBlock, LayerNorm2d, MLP, TwoWayAttentionBlock and
  PositionEmbeddingRandom are parts. `_build_sam` builds the prompt encoder and the mask decoder
  from local literals (`prompt_embed_dim = 256`, `image_size = 1024`, `vit_patch_size = 16`), and
  the image encoder from its arguments (not literals); Sam's parameters are annotated with the
  three classes.
* vit_pytorch: every file defines its own FeedForward/Attention/Transformer parts and its model;
  vit.py's ViT takes keyword-only sizes no file gives; vit_nd.py's `__main__` builds a ViTND and
  calls it on `torch.randn(2, 3, 8, 16, 32, 64)`; simple_vit.py's SimpleViT is not the
  SimpleViT of simple_vit_orthog_residual_update.py (which its `__main__` builds).

The workspace for segment-anything and vit-pytorch is the package directory itself, as a user
opens it: their top-level `__init__` imports torchvision (the predictor, DINO), which does not
load beside the CPU build of torch the tests run with; their model modules import torch only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnxlens.server.fixits.edits import apply_insertions
from onnxlens.server.fixits.candidates import find_candidates
from onnxlens.server.fixits.new_targets import plan_targets
from onnxlens.server.fixits.workspace_scan import workspace_choices
from tests.support.repositories import package_copy

WHISPER_DIMENSIONS = ("n_mels", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_vocab",
                      "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")


def initialized(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """`onnxlens init`'s edits applied: (class or factory name -> `file:callable` of its model,
    file relative to the root -> its text afterwards)."""
    choices = workspace_choices(root).choices
    fix = plan_targets(root, choices)
    texts = {}
    for file in dict.fromkeys(i.file for i in fix.insertions):
        path = Path(file)
        original = path.read_text() if path.exists() else ""
        texts[path.relative_to(root.resolve()).as_posix()] = apply_insertions(
            original, [i for i in fix.insertions if i.file == file])
    models = {}
    for target in fix.targets:
        models.setdefault(target.candidate.name, []).append(target.model)
    return models, texts


def function(text: str, name: str) -> str:
    """The source of the top-level function `name` in a file's text."""
    match = re.search(rf"^def {re.escape(name)}\(\):\n(?:(?:    .*)?\n)+", text, re.MULTILINE)
    assert match, f"no def {name}()"
    return match.group(0)


def test_whisper_the_model_not_its_layers_and_what_to_give(tmp_path):
    root = tmp_path / "repo"
    package_copy("whisper", root / "whisper")
    source = (root / "whisper" / "model.py").read_text()
    seen = {c.name for c in find_candidates(source)}
    parts = {"MultiHeadAttention", "ResidualAttentionBlock", "AudioEncoder", "TextDecoder"}
    layers = {"LayerNorm", "Linear", "Conv1d"}
    assert parts | layers | {"Whisper"} <= seen  # candidates all; the selection leaves them out

    models, texts = initialized(root)
    assert set(models) == {"Whisper"}
    [reference] = models["Whisper"]
    assert reference == "whisper/model.py:build_whisper"
    model = texts["whisper/model.py"]
    builder = function(model, "build_whisper")
    call = "return Whisper(dims=ModelDimensions(" + ", ".join(f"{n}=..." for n in WHISPER_DIMENSIONS) + "))"
    assert call in builder
    [raise_line] = [line for line in builder.splitlines() if "raise NotImplementedError" in line]
    for name in WHISPER_DIMENSIONS:
        assert f"ModelDimensions.{name} (int)" in raise_line
    inputs = function(model, "example_inputs_whisper")
    assert "tokens = torch.randint(0, " in inputs  # ids, not floats
    compile(model, "model.py", "exec")


@pytest.fixture(scope="module")
def segment_anything(tmp_path_factory):
    root = package_copy("segment_anything", tmp_path_factory.mktemp("sam") / "segment_anything")
    return root, *initialized(root)


def test_segment_anything_models_and_not_their_blocks(segment_anything):
    root, models, _ = segment_anything
    assert set(models) == {"ImageEncoderViT", "PromptEncoder", "MaskDecoder", "TwoWayTransformer", "Sam",
                           "SamOnnxModel"}
    assert models["ImageEncoderViT"] == ["modeling/image_encoder.py:ImageEncoderViT"]  # built without arguments
    every = {c.name for f in (root / "modeling").glob("*.py") for c in find_candidates(f.read_text())}
    assert {"Block", "Attention", "PatchEmbed", "MLPBlock", "LayerNorm2d", "MLP", "TwoWayAttentionBlock",
            "PositionEmbeddingRandom"} <= every - set(models)


def test_segment_anything_image_size_and_the_recipe_of_build_sam(segment_anything):
    _, _, texts = segment_anything
    inputs = function(texts["modeling/image_encoder.py"], "example_inputs_imageencodervit")
    assert "x = torch.randn(1, 3, 1024, 1024)" in inputs  # img_size=1024, in_chans=3 (batch 1: a large image)
    builder = function(texts["modeling/prompt_encoder.py"], "build_promptencoder")
    assert "build_sam.py:" in builder.splitlines()[1]  # the docstring says where the recipe is from
    for line in ("prompt_embed_dim = 256", "image_size = 1024", "vit_patch_size = 16",
                 "image_embedding_size = image_size // vit_patch_size",
                 "return PromptEncoder(embed_dim=prompt_embed_dim, image_embedding_size=(image_embedding_size, "
                 "image_embedding_size), input_image_size=(image_size, image_size), mask_in_chans=16).eval()"):
        assert f"    {line}" in builder.splitlines()
    assert "NotImplementedError" not in builder
    decoder = function(texts["modeling/mask_decoder.py"], "build_maskdecoder")
    assert "    from modeling import TwoWayTransformer\n" in decoder  # build_sam.py's `from .modeling import`
    assert "transformer=TwoWayTransformer(depth=2, embedding_dim=prompt_embed_dim, mlp_dim=2048, num_heads=8)" in decoder
    inputs = function(texts["modeling/prompt_encoder.py"], "example_inputs_promptencoder")
    assert "points = None" in inputs  # Optional[Tuple[...]]: None is a value forward takes

    # Sam(image_encoder: ImageEncoderViT, prompt_encoder: PromptEncoder, mask_decoder: MaskDecoder):
    # each part built as build_sam.py builds it (ImageEncoderViT from its defaults), their
    # statements joined; nothing left to ask.
    sam = function(texts["modeling/sam.py"], "build_sam")
    assert "NotImplementedError" not in sam
    assert "    return Sam(image_encoder=ImageEncoderViT(), prompt_encoder=PromptEncoder(embed_dim=prompt_embed_dim, " in sam
    assert "mask_decoder=MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(" in sam
    assert sam.count("    prompt_embed_dim = 256\n") == 1
    onnx_model = function(texts["utils/onnx.py"], "build_samonnxmodel")  # SamOnnxModel(model: Sam, return_single_mask: bool)
    [raise_line] = [line for line in onnx_model.splitlines() if "raise NotImplementedError" in line]
    assert "return_single_mask (bool)" in raise_line


def test_vit_pytorch_each_files_own_model_and_its_main_block(tmp_path):
    root = package_copy("vit_pytorch", tmp_path / "vit_pytorch")
    models, texts = initialized(root)
    assert "FeedForward" not in models and "Attention" not in models and "Transformer" not in models
    assert any(m.startswith("vit.py:") for m in models["ViT"])  # not a part of the files that import it
    vit = texts["vit.py"]
    [builder] = [function(vit, n) for n in re.findall(r"^def (build_vit[\w]*)\(", vit, re.MULTILINE)]
    for name in ("image_size", "patch_size", "num_classes", "dim", "depth", "heads", "mlp_dim"):
        assert f"{name}=..." in builder and name in builder.splitlines()[3]  # on the raise line

    nd = texts["vit_nd.py"]
    [builder_name] = re.findall(r"^def (build_vitnd\w*)\(", nd, re.MULTILINE)
    builder = function(nd, builder_name)
    assert "built as vit_nd.py:211 builds it" in builder and "NotImplementedError" not in builder
    assert "input_shape=(8, 16, 32, 64)" in builder
    inputs = function(nd, builder_name.replace("build_", "example_inputs_"))
    assert "occupancy_time = torch.randn(2, 3, 8, 16, 32, 64)" in inputs and "vit_nd.py:231 calls it" in inputs

    simple = texts["simple_vit.py"]
    [builder_name] = re.findall(r"^def (build_simplevit\w*)\(", simple, re.MULTILINE)
    assert "orthog" not in function(simple, builder_name)  # another file's SimpleViT is not this one
