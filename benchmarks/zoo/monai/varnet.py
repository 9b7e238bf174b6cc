"""MONAI's end-to-end variational network for accelerated MRI reconstruction (coil sensitivity
estimation + two cascades of a complex-valued U-Net refinement), from multi-coil k-space and the
undersampling mask."""

import torch
from monai.apps.reconstruction.networks.nets.coil_sensitivity_model import CoilSensitivityModel
from monai.apps.reconstruction.networks.nets.complex_unet import ComplexUnet
from monai.apps.reconstruction.networks.nets.varnet import VariationalNetworkModel


def build_model():
    torch.manual_seed(0)
    sensitivity = CoilSensitivityModel(spatial_dims=2, features=(4, 4, 8, 16, 32, 4))
    refinement = ComplexUnet(spatial_dims=2, features=(4, 4, 8, 16, 32, 4))
    return VariationalNetworkModel(sensitivity, refinement, num_cascades=2).eval()


def example_inputs():
    torch.manual_seed(0)
    kspace = torch.randn(1, 4, 32, 32, 2)  # batch, coils, height, width, real/imaginary
    mask = torch.zeros(1, 1, 1, 32, 1, dtype=torch.bool)
    mask[..., ::2, :] = True  # every other phase-encoding line
    mask[..., 12:20, :] = True  # the fully sampled centre (autocalibration region)
    return (kspace, mask)
