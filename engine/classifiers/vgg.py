"""A VGG-style classifier for any square C x H x W (GIFTbench's SVHN and CIFAR-10 nets are
VGG-style): stages of two 3x3 conv + batch norm + ReLU and a 2x2 max pool, channels
doubling per stage (capped at 8 x width), one stage per clean halving of the side
(engine/core/shapes.py: 28 -> 2 stages, 32 -> 3, 64 -> 4), then global average pooling and a
linear head. Conv -> batch norm pairs sit in ``nn.Sequential``s, so inference folds them.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.classifiers.base import ARCHITECTURES
from engine.core.shapes import check_shape, halvings


def conv_bn(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
    )


@ARCHITECTURES.register("vgg")
class VGG(nn.Module):
    def __init__(
        self, in_channels: int = 3, num_classes: int = 10, side: int = 32, width: int = 32
    ) -> None:
        super().__init__()
        check_shape((in_channels, side, side), "vgg")
        layers: list[nn.Module] = []
        cin = in_channels
        for i in range(halvings(side)):
            cout = width * min(2**i, 8)
            layers += [conv_bn(cin, cout), conv_bn(cout, cout), nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.3), nn.Linear(cin, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
