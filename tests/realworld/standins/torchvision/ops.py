"""Stand-in for torchvision.ops: the public wrapper turns a list of boxes into rois, as
torchvision.ops.roi_align does, and calls the registered op."""

import torch


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    rois = boxes
    if not isinstance(rois, torch.Tensor):  # one (L, 4) tensor per image -> (K, 5) with the image index
        rois = torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1) for i, b in enumerate(boxes)], dim=0)
    return torch.ops.torchvision.roi_align(input, rois, spatial_scale, output_size[0], output_size[1],
                                           sampling_ratio, aligned)
