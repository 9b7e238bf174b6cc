"""torchvision's SSDlite (MobileNetV3-Large, 320x320), random init: the mobile single-shot detector,
exported in eval mode on a list of images."""

import torch
from torchvision.models.detection import ssdlite320_mobilenet_v3_large


def build_model():
    torch.manual_seed(0)
    return ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5).eval()


def example_inputs():
    torch.manual_seed(0)
    return ([torch.rand(3, 320, 320)],)
