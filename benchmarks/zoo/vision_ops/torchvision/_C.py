"""The operators torchvision's compiled library defines at import, with CPU kernels in Python.

Schemas as in pytorch/vision torchvision/csrc/ops/{roi_align,nms,roi_pool,deform_conv2d}.cpp
(the stable-ABI `STABLE_TORCH_LIBRARY_FRAGMENT(torchvision, m)` definitions). The kernels follow
the semantics of torchvision's CPU kernels (bilinear sampling as in RoIAlign / deformable
convolution, greedy NMS in decreasing score order); they are written here, vectorised with torch.
"""

import math

import torch
from torch.nn import functional as F

LIBRARY = torch.library.Library("torchvision", "FRAGMENT")

LIBRARY.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
LIBRARY.define(
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor")
LIBRARY.define(
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)")
LIBRARY.define(
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor")


def _bilinear(feature, y, x):
    """feature [C, H, W] sampled at the rows y [Ny] x the columns x [Nx]: [C, Ny, Nx]; zero outside [-1, H] x [-1, W]."""
    height, width = feature.shape[-2:]
    inside = ((y >= -1) & (y <= height))[:, None] & ((x >= -1) & (x <= width))[None, :]
    y, x = y.clamp(min=0), x.clamp(min=0)
    y_low, x_low = y.floor().long(), x.floor().long()
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = y_low.clamp(max=height - 1), x_low.clamp(max=width - 1)
    y_high = torch.where(y_edge, y_low, y_low + 1)
    x_high = torch.where(x_edge, x_low, x_low + 1)
    y = torch.where(y_edge, y_low.to(y.dtype), y)
    x = torch.where(x_edge, x_low.to(x.dtype), x)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    value = (hy[:, None] * hx[None, :] * feature[:, y_low[:, None], x_low[None, :]]
             + hy[:, None] * lx[None, :] * feature[:, y_low[:, None], x_high[None, :]]
             + ly[:, None] * hx[None, :] * feature[:, y_high[:, None], x_low[None, :]]
             + ly[:, None] * lx[None, :] * feature[:, y_high[:, None], x_high[None, :]])
    return value * inside


def roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    channels = input.shape[1]
    output = input.new_zeros((rois.shape[0], channels, pooled_height, pooled_width))
    offset = 0.5 if aligned else 0.0
    for k, roi in enumerate(rois.tolist()):
        batch, x1, y1, x2, y2 = int(roi[0]), *(value * spatial_scale - offset for value in roi[1:])
        roi_width, roi_height = x2 - x1, y2 - y1
        if not aligned:
            roi_width, roi_height = max(roi_width, 1.0), max(roi_height, 1.0)
        bin_h, bin_w = roi_height / pooled_height, roi_width / pooled_width
        grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_height / pooled_height)
        grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_width / pooled_width)
        ys = (y1 + torch.arange(pooled_height, dtype=input.dtype)[:, None] * bin_h
              + (torch.arange(grid_h, dtype=input.dtype)[None, :] + 0.5) * bin_h / grid_h).reshape(-1)
        xs = (x1 + torch.arange(pooled_width, dtype=input.dtype)[:, None] * bin_w
              + (torch.arange(grid_w, dtype=input.dtype)[None, :] + 0.5) * bin_w / grid_w).reshape(-1)
        samples = _bilinear(input[batch], ys, xs).view(channels, pooled_height, grid_h, pooled_width, grid_w)
        output[k] = samples.sum((2, 4)) / max(grid_h * grid_w, 1)
    return output


def nms(dets, scores, iou_threshold):
    x1, y1, x2, y2 = dets.unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    suppressed = torch.zeros(dets.shape[0], dtype=torch.bool)
    keep = []
    for i in scores.argsort(descending=True).tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        width = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
        height = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
        intersection = width * height
        suppressed |= intersection / (areas[i] + areas - intersection) > iou_threshold
    return torch.tensor(keep, dtype=torch.long)


def roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    channels, height, width = input.shape[1:]
    output = input.new_zeros((rois.shape[0], channels, pooled_height, pooled_width))
    argmax = torch.full(output.shape, -1, dtype=torch.int32)
    for k, roi in enumerate(rois.tolist()):
        batch = int(roi[0])
        x1, y1, x2, y2 = (round(value * spatial_scale) for value in roi[1:])
        bin_h, bin_w = max(y2 - y1 + 1, 1) / pooled_height, max(x2 - x1 + 1, 1) / pooled_width
        for ph in range(pooled_height):
            for pw in range(pooled_width):
                h0 = min(max(math.floor(ph * bin_h) + y1, 0), height)
                h1 = min(max(math.ceil((ph + 1) * bin_h) + y1, 0), height)
                w0 = min(max(math.floor(pw * bin_w) + x1, 0), width)
                w1 = min(max(math.ceil((pw + 1) * bin_w) + x1, 0), width)
                if h1 <= h0 or w1 <= w0:
                    continue
                window = input[batch, :, h0:h1, w0:w1].reshape(channels, -1)
                value, index = window.max(1)
                output[k, :, ph, pw] = value
                argmax[k, :, ph, pw] = ((index // (w1 - w0) + h0) * width + index % (w1 - w0) + w0).int()
    return output, argmax


def deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                  groups, offset_groups, use_mask):
    batch, channels, height, width = input.shape
    out_channels, _, kernel_h, kernel_w = weight.shape
    taps = kernel_h * kernel_w
    out_h = (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) // stride_h + 1
    out_w = (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) // stride_w + 1
    tap_y = (torch.arange(kernel_h) * dilation_h).repeat_interleave(kernel_w).to(input.dtype)
    tap_x = (torch.arange(kernel_w) * dilation_w).repeat(kernel_h).to(input.dtype)
    base_y = tap_y[:, None, None] + (torch.arange(out_h) * stride_h - pad_h).to(input.dtype)[None, :, None]
    base_x = tap_x[:, None, None] + (torch.arange(out_w) * stride_w - pad_w).to(input.dtype)[None, None, :]
    offset = offset.view(batch, offset_groups, taps, 2, out_h, out_w)
    y = base_y + offset[:, :, :, 0]  # [batch, offset_groups, taps, out_h, out_w], in pixels
    x = base_x + offset[:, :, :, 1]
    # grid_sample with align_corners=True and zero padding is the deformable bilinear sampling:
    # zero outside (-1, size), out-of-range neighbours count as zero.
    grid = torch.stack([x / max(width - 1, 1) * 2 - 1, y / max(height - 1, 1) * 2 - 1], -1)
    grid = grid.reshape(batch * offset_groups, taps * out_h, out_w, 2)
    per_group = input.reshape(batch * offset_groups, channels // offset_groups, height, width)
    columns = F.grid_sample(per_group, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    columns = columns.view(batch, offset_groups, channels // offset_groups, taps, out_h, out_w)
    if use_mask:
        columns = columns * mask.view(batch, offset_groups, 1, taps, out_h, out_w)
    columns = columns.reshape(batch, groups, channels // groups, taps, out_h, out_w)
    kernel = weight.view(groups, out_channels // groups, channels // groups, taps)
    output = torch.einsum("ngctyx,goct->ngoyx", columns, kernel)
    return output.reshape(batch, out_channels, out_h, out_w) + bias.view(1, -1, 1, 1)


LIBRARY.impl("nms", nms, "CPU")
LIBRARY.impl("roi_align", roi_align, "CPU")
LIBRARY.impl("roi_pool", roi_pool, "CPU")
LIBRARY.impl("deform_conv2d", deform_conv2d, "CPU")
