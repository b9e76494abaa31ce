"""A conditional DCGAN whose depth follows the image size (engine/core/shapes.py).

The ``gan`` family is fixed at two upsamplings from 7x7 (MNIST). Here the generator starts
from a 4x4 to 7x7 grid and doubles it once per halving of the side (28: 2 layers, 32: 3,
64: 4), channels halving on the way up from up to 8 x width; the discriminator mirrors it.
As in ``gan``: the label enters the generator as a 50-d embedding beside the latent and
the discriminator as an extra image channel, the network ends in tanh and ``_decode``
maps [-1, 1] to [0, 1], and the discriminator stays in the weights file, so the
``discriminator`` validity filter works on this family too (it calls ``realness``).
"""

from __future__ import annotations

import torch
from torch import nn

from engine.core.shapes import check_shape, halvings
from engine.generators.base import GENERATORS
from engine.generators.convvae import widths
from engine.generators.gan import GAN, LabelChannelDiscriminator

EMBED = 50


class DeepGenerator(nn.Module):
    def __init__(self, latent: int, num_classes: int, c: int, side: int, width: int) -> None:
        super().__init__()
        depth = halvings(side)
        base = side >> depth
        ch = widths(width, depth)[::-1]  # top of the stack first
        self.embed = nn.Embedding(num_classes, EMBED)
        self.fc = nn.Linear(latent + EMBED, ch[0] * base**2)
        layers: list[nn.Module] = [
            nn.Unflatten(1, (ch[0], base, base)),
            nn.BatchNorm2d(ch[0]),
            nn.ReLU(),
        ]
        for cin, cout in zip(ch, ch[1:], strict=False):
            layers += [nn.ConvTranspose2d(cin, cout, 4, 2, 1), nn.BatchNorm2d(cout), nn.ReLU()]
        layers += [nn.ConvTranspose2d(ch[-1], c, 4, 2, 1), nn.Tanh()]
        self.up = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.up(self.fc(torch.cat([z, self.embed(y)], 1)))


class DeepDiscriminator(LabelChannelDiscriminator):
    """The discriminator mirroring DeepGenerator: one halving per layer."""

    def __init__(self, num_classes: int, c: int, side: int, width: int) -> None:
        super().__init__(num_classes, side)
        depth = halvings(side)
        ch = widths(width, depth)
        layers: list[nn.Module] = []
        for i, (cin, cout) in enumerate(zip([c + 1, *ch[:-1]], ch, strict=True)):
            layers.append(nn.Conv2d(cin, cout, 4, 2, 1))
            if i:  # DCGAN: no batch norm on the discriminator's input layer
                layers.append(nn.BatchNorm2d(cout))
            layers.append(nn.LeakyReLU(0.2))
        flat = ch[-1] * (side >> depth) ** 2
        self.net = nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.3), nn.Linear(flat, 1))


@GENERATORS.register("dcgan")
class DCGAN(GAN):
    family = "dcgan"

    def __init__(
        self,
        image_shape: tuple[int, int, int] = (3, 32, 32),
        num_classes: int = 10,
        latent: int = 100,
        width: int = 64,
    ) -> None:
        c, h, _ = check_shape(image_shape, "dcgan")
        # Built in this order (generator, then discriminator) for the seed's same weights.
        net = DeepGenerator(latent, num_classes, c, h, width)
        discriminator = DeepDiscriminator(num_classes, c, h, width)
        super().__init__((c, h, h), num_classes, latent, net, discriminator)
