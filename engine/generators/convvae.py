"""A convolutional VAE for any square C x H x W (engine/core/shapes.py says which sides).

The MLP VAE (``vae``, 784-1600-400) is GIFTbench's MNIST model; on 32x32x3 data an MLP of
that kind has 5 M weights in its first layer alone and blurs everything. This one halves
the side with stride-2 convolutions down to a 4x4 to 7x7 grid (channels doubling, capped
at 8 x width), maps it to a flat latent, and mirrors that with transposed convolutions.
The latent stays a flat vector, so every strategy's crossover and mutation apply as they
do to the MLP VAE's. No batch norm: seeds are encoded one batch at a time, and a model
whose output depends on its batch would give a seed different latents in different runs.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.core.shapes import check_shape, halvings
from engine.generators.base import GENERATORS, Generator


def widths(width: int, depth: int) -> list[int]:
    """Channels after each halving: width, 2 x width, ... capped at 8 x width."""
    return [width * min(2**i, 8) for i in range(depth)]


@GENERATORS.register("convvae")
class ConvVAE(Generator):
    family = "convvae"

    def __init__(
        self,
        image_shape: tuple[int, int, int] = (3, 32, 32),
        num_classes: int = 10,
        width: int = 32,
        latent: int = 128,
    ) -> None:
        c, h, _ = check_shape(image_shape, "convvae")
        super().__init__((c, h, h), num_classes)
        self.latent = latent
        depth = halvings(h)
        self.base = h >> depth
        ch = widths(width, depth)
        down: list[nn.Module] = []
        for cin, cout in zip([c, *ch[:-1]], ch, strict=True):
            down += [nn.Conv2d(cin, cout, 4, 2, 1), nn.LeakyReLU(0.2)]
        self.encoder = nn.Sequential(*down, nn.Flatten())
        flat = ch[-1] * self.base**2
        self.mu = nn.Linear(flat, latent)
        self.logvar = nn.Linear(flat, latent)
        self.project = nn.Linear(latent, flat)
        up: list[nn.Module] = [nn.Unflatten(1, (ch[-1], self.base, self.base))]
        for cin, cout in zip(ch[::-1], ch[::-1][1:] + [ch[0]], strict=True):
            up += [nn.ReLU(), nn.ConvTranspose2d(cin, cout, 4, 2, 1)]
        self.decoder = nn.Sequential(*up, nn.ReLU(), nn.Conv2d(ch[0], c, 3, padding=1))

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return (self.latent,)

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return self.mu(h), self.logvar(h)

    def decoder_logits(self, z: torch.Tensor) -> torch.Tensor:
        """Latents (B, latent) -> pixel logits (B, C, H, W)."""
        return self.decoder(self.project(z))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Training pass, as the MLP VAE's: reconstruction logits (B, C*H*W), mu, logvar."""
        mu, logvar = self.posterior(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decoder_logits(z).flatten(1), mu, logvar

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return torch.sigmoid(self.decoder_logits(z))

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.posterior(x)[0]  # the posterior mean, as the MLP VAE seeds
