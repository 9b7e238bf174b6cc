"""segment-anything's ViT-B image encoder (`sam_model_registry["vit_b"]()`, no checkpoint: random
weights, seeded), the reference model for verification's cost: at 1024x1024 it runs the
model for tens of seconds on a CPU. `inputs`: one image, as SamPredictor feeds it; `inputs_pair`
with `batch_shapes`: two images and a dynamic batch, for `verify-inputs = "small"`."""

import importlib.util
import sys
import types

import torch

# segment_anything/__init__.py imports its automatic mask generator, which needs torchvision
# (whose PyPI build does not load beside the CPU torch); the model code does not.
if "segment_anything" not in sys.modules:
    _spec = importlib.util.find_spec("segment_anything")
    _package = types.ModuleType("segment_anything")
    _package.__path__ = list(_spec.submodule_search_locations)
    sys.modules["segment_anything"] = _package
from segment_anything.build_sam import sam_model_registry  # noqa: E402


def build():
    torch.manual_seed(0)
    return sam_model_registry["vit_b"]().image_encoder.eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 3, 1024, 1024),)


def inputs_pair():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 1024, 1024),)


def batch_shapes():
    return ({0: torch.export.Dim("batch", min=1, max=8)},)
