"""The SINVAD / GIFTbench MLP VAE: 784-1600-400 with a 400-dimensional latent."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from engine.generators.base import GENERATORS, Generator


@GENERATORS.register("vae")
class VAE(Generator):
    family = "vae"

    def __init__(
        self,
        image_shape: tuple[int, int, int] = (1, 28, 28),
        num_classes: int = 10,
        hidden: int = 1600,
        latent: int = 400,
    ) -> None:
        super().__init__(image_shape, num_classes)
        d = math.prod(image_shape)
        self.latent = latent
        self.enc = nn.Linear(d, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec1 = nn.Linear(latent, hidden)
        self.dec2 = nn.Linear(hidden, d)

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return (self.latent,)

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.relu(self.enc(x.flatten(1)))
        return self.mu(h), self.logvar(h)

    def decoder_logits(self, z: torch.Tensor) -> torch.Tensor:
        return self.dec2(F.relu(self.dec1(z)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Training pass: reconstruction logits (B, D), mu and logvar (B, latent)."""
        mu, logvar = self.posterior(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decoder_logits(z), mu, logvar

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return torch.sigmoid(self.decoder_logits(z)).view(-1, *self.image_shape)

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        # The posterior mean, as GIFTbench and SINVAD seed from.
        return self.posterior(x)[0]
