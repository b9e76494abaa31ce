"""A conditional DCGAN: latent 100 plus a class label -> image in [0, 1].

The network ends in tanh, as DCGAN training expects; ``_decode`` maps its [-1, 1] output to
[0, 1] (GIFTbench fed [-1, 1] GAN images to classifiers trained on [0, 1]). The
discriminator is kept in the same weights file for later validity filtering.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from engine.generators.base import GENERATORS, Generator


class GeneratorNet(nn.Module):
    def __init__(self, latent: int, num_classes: int, channels: int, side: int, width: int) -> None:
        super().__init__()
        self.base = side // 4
        self.embed = nn.Embedding(num_classes, 50)
        self.fc = nn.Sequential(
            nn.Linear(latent + 50, 2 * width * self.base**2),
            nn.BatchNorm1d(2 * width * self.base**2),
            nn.ReLU(),
        )
        self.up = nn.Sequential(
            nn.ConvTranspose2d(2 * width, width, 4, 2, 1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.ConvTranspose2d(width, channels, 4, 2, 1),
            nn.Tanh(),
        )
        self.width = width

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.fc(torch.cat([z, self.embed(y)], 1))
        return self.up(h.view(-1, 2 * self.width, self.base, self.base))


class LabelChannelDiscriminator(nn.Module):
    """Image in [-1, 1] plus label -> realness logit (B,). The label enters as a channel:
    an embedding of side x side beside the image; subclasses build ``net`` on the
    (C + 1)-channel stack."""

    net: nn.Module

    def __init__(self, num_classes: int, side: int) -> None:
        super().__init__()
        self.side = side
        self.embed = nn.Embedding(num_classes, side * side)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        label_map = self.embed(y).view(-1, 1, self.side, self.side)
        return self.net(torch.cat([x, label_map], 1)).squeeze(1)


class Discriminator(LabelChannelDiscriminator):
    """The MNIST GAN's two-layer discriminator."""

    def __init__(self, num_classes: int, channels: int, side: int, width: int) -> None:
        super().__init__(num_classes, side)
        self.net = nn.Sequential(
            nn.Conv2d(channels + 1, width, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(width, 2 * width, 4, 2, 1),
            nn.BatchNorm2d(2 * width),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Dropout(0.3),
            nn.Linear(2 * width * (side // 4) ** 2, 1),
        )


class GAN(Generator):
    """A conditional GAN: ``net`` maps (latents (B, latent), labels (B,)) to images in
    [-1, 1], ``discriminator`` scores them; the families build both."""

    conditional = True

    def __init__(
        self,
        image_shape: tuple[int, int, int],
        num_classes: int,
        latent: int,
        net: nn.Module,
        discriminator: LabelChannelDiscriminator,
    ) -> None:
        super().__init__(tuple(image_shape), num_classes)
        self.latent = latent
        self.net = net
        self.discriminator = discriminator

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return (self.latent,)

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return self.net(z, labels).add(1.0).mul(0.5)

    def realness(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Discriminator score (B,) of images in [0, 1]: higher looks more real."""
        return self.discriminator(x * 2 - 1, labels)

    def parameters_of_generator(self) -> int:
        """Weights of the generator alone, without the discriminator (the card's count)."""
        return sum(math.prod(p.shape) for p in self.net.parameters())


@GENERATORS.register("gan")
class ConditionalGAN(GAN):
    family = "gan"

    def __init__(
        self,
        image_shape: tuple[int, int, int] = (1, 28, 28),
        num_classes: int = 10,
        latent: int = 100,
        width: int = 64,
    ) -> None:
        c, h, _ = image_shape
        # Built in this order (generator, then discriminator) for the seed's same weights.
        net = GeneratorNet(latent, num_classes, c, h, width)
        discriminator = Discriminator(num_classes, c, h, width)
        super().__init__(image_shape, num_classes, latent, net, discriminator)
