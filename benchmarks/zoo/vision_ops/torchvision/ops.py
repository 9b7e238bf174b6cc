"""The part of torchvision.ops the zoo's models use: thin Python wrappers over the operators, with
torchvision's signatures (torchvision.ops.roi_align, nms, batched_nms, deform_conv2d)."""

import torch


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """boxes: Tensor[K, 5] (batch index, x1, y1, x2, y2) or a list of Tensor[L, 4], one per image."""
    if isinstance(boxes, (list, tuple)):
        boxes = torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], 1) for i, b in enumerate(boxes)])
    pooled_height, pooled_width = _pair(output_size)
    return torch.ops.torchvision.roi_align(input, boxes, spatial_scale, pooled_height, pooled_width,
                                           sampling_ratio, aligned)


def nms(boxes, scores, iou_threshold):
    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS per category (idxs): boxes of different categories are moved apart so they never overlap."""
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), mask=None):
    stride_h, stride_w = _pair(stride)
    pad_h, pad_w = _pair(padding)
    dilation_h, dilation_w = _pair(dilation)
    kernel_h, kernel_w = weight.shape[-2:]
    use_mask = mask is not None
    if mask is None:
        mask = torch.zeros((input.shape[0], 1), device=input.device, dtype=input.dtype)
    if bias is None:
        bias = torch.zeros(weight.shape[0], device=input.device, dtype=input.dtype)
    offset_groups = offset.shape[1] // (2 * kernel_h * kernel_w)
    groups = input.shape[1] // weight.shape[1]
    return torch.ops.torchvision.deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                                               dilation_h, dilation_w, groups, offset_groups, use_mask)
