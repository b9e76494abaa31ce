"""Reconstruction by the dataset's VAE as a validity filter (a cheap out-of-distribution
score).

An image the VAE has learnt to draw comes back close to itself through its encoder (the
posterior mean) and decoder; noise, blanks and other domains come back as the nearest
digit, far from what went in. The score is minus the mean squared error per pixel (pixels
in [0, 1]) between the image and its reconstruction, so higher is more valid and scores lie
in [-1, 0].

The VAE is the zoo's VAE of the dataset (the bundled mnist-vae for MNIST), whichever
generator made the images, so that every generator's images are scored by one model. The
default threshold is measured on real images: the score that 95% of the real test split
(up to 2,000 evenly spaced images) reaches. On MNIST's 1,000 test images that is -0.024
(median -0.011, as the card's reconstruction MSE of 0.012 says).

A blank image is reconstructed exactly (score about -0.0001), so this filter passes
blanks: the known failure of reconstruction and likelihood scores. feature-density
ranks blanks below digits (docs/guides/validators.md).
"""

from __future__ import annotations

import torch

from engine.core.errors import ConfigError
from engine.validators import references as ref
from engine.validators.base import VALIDATORS, Validator


def _missing(dataset: str) -> str:
    return (
        f"validity filter 'vae-reconstruction' needs a VAE of dataset {dataset!r} and the "
        f"zoo has none; train one with `latentfuzz train vae --dataset {dataset}`, or "
        "pick another filter"
    )


@VALIDATORS.register("vae-reconstruction")
class VAEReconstruction(Validator):
    name = "vae-reconstruction"
    default_threshold = float("nan")  # measured on the real test split unless given
    describes = "minus the mean squared error of the dataset VAE's reconstruction"
    score_range = (-1.0, 0.0)
    by_default = False

    @classmethod
    def check(cls, generator, dataset=None) -> str | None:
        if dataset is not None and ref.vae_name(dataset.name) is None:
            return _missing(dataset.name)
        return None

    def __init__(self, generator, dataset, threshold: float | None = None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        why = self.check(generator, dataset)
        if why is not None:
            raise ConfigError(why)
        self.vae_name = ref.vae_name(dataset.name)
        self.vae = ref.generator(self.vae_name, ref.device_of(generator))
        if threshold is None:
            images, labels = ref.spaced(dataset.load("test"))
            self.threshold = ref.kept_quantile(self.score(images, labels))

    @torch.no_grad()
    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        out = []
        for i in range(0, len(images), ref.BATCH):
            x = ref.unit(images[i : i + ref.BATCH]).to(self.vae.device)
            back = self.vae.decode(self.vae.encode(x))
            out.append(-((back - x) ** 2).flatten(1).mean(1).cpu().double())
        return torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)
