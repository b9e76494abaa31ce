"""A ResNet-style classifier for any square C x H x W: a 3x3 stem, then one basic residual
block per clean halving of the side (engine/core/shapes.py), the first at full resolution and
each next one striding by 2 with channels doubling (capped at 8 x width), then global
average pooling and a linear head. A different design from ``vgg`` (skip connections, no
max pooling), so that differential testing compares models that fail differently.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.classifiers.base import ARCHITECTURES
from engine.classifiers.vgg import conv_bn
from engine.core.shapes import check_shape, halvings


class BasicBlock(nn.Module):
    """conv-bn-relu, conv-bn, plus the input (a strided 1x1 conv-bn when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, cout, stride),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = (
            nn.Identity()
            if stride == 1 and cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


@ARCHITECTURES.register("resnet")
class ResNet(nn.Module):
    def __init__(
        self, in_channels: int = 3, num_classes: int = 10, side: int = 32, width: int = 32
    ) -> None:
        super().__init__()
        check_shape((in_channels, side, side), "resnet")
        blocks: list[nn.Module] = [conv_bn(in_channels, width)]
        cin = width
        for i in range(halvings(side)):
            cout = width * min(2**i, 8)
            blocks.append(BasicBlock(cin, cout, 1 if i == 0 else 2))
            cin = cout
        self.features = nn.Sequential(*blocks)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
