"""segmentation-models-pytorch's U-Net with a ResNet-18 encoder, random init, exported with dynamic
batch, height and width (what a segmentation model is deployed with)."""

import segmentation_models_pytorch as smp
import torch
from torch.export import Dim


def build_model():
    torch.manual_seed(0)
    return smp.Unet(encoder_name="resnet18", encoder_weights=None, classes=3).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)


def dynamic_shapes():
    return ({0: Dim("batch", max=16), 2: Dim("height", max=1024), 3: Dim("width", max=1024)},)
