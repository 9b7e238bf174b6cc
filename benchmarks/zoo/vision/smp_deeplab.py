"""segmentation-models-pytorch's DeepLabV3+ with a ResNet-18 encoder (atrous spatial pyramid pooling,
separable convolutions), random init."""

import segmentation_models_pytorch as smp
import torch


def build_model():
    torch.manual_seed(0)
    return smp.DeepLabV3Plus(encoder_name="resnet18", encoder_weights=None, classes=3).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)
