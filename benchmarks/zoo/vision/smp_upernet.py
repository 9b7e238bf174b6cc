"""segmentation-models-pytorch's UPerNet on a timm ConvNeXt-atto encoder (`tu-` encoders are timm
models behind smp's universal encoder), random init."""

import segmentation_models_pytorch as smp
import torch


def build_model():
    torch.manual_seed(0)
    return smp.UPerNet(encoder_name="tu-convnext_atto", encoder_weights=None, classes=3).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)
