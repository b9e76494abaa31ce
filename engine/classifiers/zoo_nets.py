"""Classifier architectures trained by ``latentfuzz train classifier``.

Two deliberately different designs, so that later differential testing compares models
that fail differently: a modern small conv net and the classic LeNet-5.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.classifiers.base import ARCHITECTURES


@ARCHITECTURES.register("convnet")
class ConvNet(nn.Module):
    """Two conv blocks with batch norm and dropout, then a small MLP head."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, side: int = 28) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        flat = 64 * (side // 4) ** 2
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(0.3),
            nn.Linear(flat, 128),
            nn.ReLU(),
            nn.Dropout(0.3),
            nn.Linear(128, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


@ARCHITECTURES.register("lenet5")
class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998) with tanh and average pooling, padded to take 28x28."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, side: int = 28) -> None:
        super().__init__()
        pad = 2 if side == 28 else 0
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=pad),
            nn.Tanh(),
            nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.Tanh(),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120),
            nn.Tanh(),
            nn.Linear(120, 84),
            nn.Tanh(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
