"""Pixel space as a generator: the latent is the image itself.

The papers' baselines (SINVAD's pixel-space GA, DeepHunter/DRfuzz-style input mutation,
FGSM and PGD) search images directly. Written as a generator, they run through the same
campaign runner as the latent methods and report the same figures: ``decode`` is the
identity clamped to [0, 1], ``encode`` of a real test image is that image, so a campaign's
seeds are the dataset's own test images (drawn by the same rule, hence the same images, as
an encoder generator's seeds at the same random seed). No model file: it is built from
the dataset's image shape alone, for the strategies that declare it
(``Strategy.generator_family``).
"""

from __future__ import annotations

import torch

from engine.generators.base import GENERATORS, Generator


@GENERATORS.register("pixel")
class Pixel(Generator):
    family = "pixel"

    def __init__(self, image_shape: tuple[int, int, int] = (1, 28, 28), num_classes: int = 10):
        super().__init__(image_shape, num_classes)
        # The pixel range is the latent range: step presets (a fraction of it) are pixel
        # values, and searches clamp to it.
        self.latent_bounds = (0.0, 1.0)
        # No weights, but `.to(device)` must still move the search's device: decode checks
        # its input against it.
        self.register_buffer("anchor", torch.zeros(()), persistent=False)

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return tuple(self.image_shape)

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return z.float().clamp(0.0, 1.0)

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        return x.float().clone()
