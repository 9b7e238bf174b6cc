"""torchvision's Mask R-CNN (ResNet-50 FPN), random init, small inputs: an instance-segmentation
model exported as its users export it, in eval mode on a list of images."""

import torch
from torchvision.models.detection import maskrcnn_resnet50_fpn


def build_model():
    torch.manual_seed(0)
    return maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=5, min_size=224,
                                 max_size=224).eval()


def example_inputs():
    torch.manual_seed(0)
    return ([torch.rand(3, 224, 224)],)
