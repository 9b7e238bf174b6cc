"""torchvision's Faster R-CNN with its mobile backbone (MobileNetV3-Large FPN), random init, small
inputs: a two-stage detector exported in eval mode on a list of images."""

import torch
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_fpn


def build_model():
    torch.manual_seed(0)
    return fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None, num_classes=5, min_size=224,
                                             max_size=224).eval()


def example_inputs():
    torch.manual_seed(0)
    return ([torch.rand(3, 224, 224)],)
