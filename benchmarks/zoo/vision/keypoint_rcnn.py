"""torchvision's Keypoint R-CNN (ResNet-50 FPN), random init, small inputs: person boxes and
keypoints, exported in eval mode on a list of images."""

import torch
from torchvision.models.detection import keypointrcnn_resnet50_fpn


def build_model():
    torch.manual_seed(0)
    return keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=2, num_keypoints=5,
                                     min_size=224, max_size=224).eval()


def example_inputs():
    torch.manual_seed(0)
    return ([torch.rand(3, 224, 224)],)
