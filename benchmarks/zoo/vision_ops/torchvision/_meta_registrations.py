"""Fake (meta) kernels for the stand-in's operators, as torchvision registers them in Python
(torchvision/_meta_registrations.py): shapes only, so that torch.export can trace through them."""

import torch

from torchvision._C import LIBRARY


@torch.library.register_fake("torchvision::nms", lib=LIBRARY)
def _nms(dets, scores, iou_threshold):
    torch._check(dets.dim() == 2, lambda: f"boxes should be a 2d tensor, got {dets.dim()}D")
    torch._check(dets.size(1) == 4, lambda: f"boxes should have 4 elements in dimension 1, got {dets.size(1)}")
    torch._check(scores.dim() == 1, lambda: f"scores should be a 1d tensor, got {scores.dim()}")
    torch._check(dets.size(0) == scores.size(0), lambda: "boxes and scores should have the same number of elements")
    kept = torch.library.get_ctx().new_dynamic_size()
    return dets.new_empty((kept,), dtype=torch.long)


@torch.library.register_fake("torchvision::roi_align", lib=LIBRARY)
def _roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    torch._check(rois.size(1) == 5, lambda: "rois must have shape as Tensor[K, 5]")
    torch._check(input.dtype == rois.dtype, lambda: "input and rois must have the same dtype")
    return input.new_empty((rois.size(0), input.size(1), pooled_height, pooled_width))


@torch.library.register_fake("torchvision::roi_pool", lib=LIBRARY)
def _roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    torch._check(rois.size(1) == 5, lambda: "rois must have shape as Tensor[K, 5]")
    shape = (rois.size(0), input.size(1), pooled_height, pooled_width)
    return input.new_empty(shape), input.new_empty(shape, dtype=torch.int32)


@torch.library.register_fake("torchvision::deform_conv2d", lib=LIBRARY)
def _deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                   groups, offset_groups, use_mask):
    out_h = (input.size(2) + 2 * pad_h - (dilation_h * (weight.size(2) - 1) + 1)) // stride_h + 1
    out_w = (input.size(3) + 2 * pad_w - (dilation_w * (weight.size(3) - 1) + 1)) // stride_w + 1
    return input.new_empty((input.size(0), weight.size(0), out_h, out_w))
