"""A detector's post-processing as a module: best class per box, score threshold, then
class-aware non-maximum suppression with torchvision.ops.batched_nms."""

import torch
import torchvision  # noqa: F401  (registers torchvision::*)
from torch import nn
from torchvision.ops import batched_nms


class BoxPostProcessor(nn.Module):
    def __init__(self, score_threshold=0.3, iou_threshold=0.5):
        super().__init__()
        self.score_threshold = score_threshold
        self.iou_threshold = iou_threshold

    def forward(self, boxes, logits):
        scores, labels = logits.softmax(-1)[:, 1:].max(-1)  # class 0 is the background
        keep = scores > self.score_threshold
        boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        kept = batched_nms(boxes, scores, labels, self.iou_threshold)
        return boxes[kept], scores[kept], labels[kept] + 1


def build_model():
    return BoxPostProcessor().eval()


def example_inputs():
    torch.manual_seed(0)
    corners = torch.rand(50, 2) * 100
    boxes = torch.cat([corners, corners + 10 + torch.rand(50, 2) * 30], 1)
    return (boxes, torch.randn(50, 4) * 2)
