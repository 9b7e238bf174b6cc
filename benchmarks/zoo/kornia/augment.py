"""A classifier with its kornia augmentation pipeline built in (flip + colour jitter before the
network), exported after model.eval(): kornia's augmentations still run in eval mode."""

import kornia.augmentation as K
import torch
from torch import nn


class AugmentedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.augment = K.AugmentationSequential(K.RandomHorizontalFlip(), K.ColorJitter(0.2, 0.2, 0.2, 0.05, p=0.5))
        self.normalize = K.Normalize(mean=torch.tensor([0.5, 0.5, 0.5]), std=torch.tensor([0.25, 0.25, 0.25]))
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(8, 10))

    def forward(self, image):
        return self.net(self.normalize(self.augment(image)))


def build_model():
    torch.manual_seed(0)
    return AugmentedClassifier().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(2, 3, 32, 32),)
