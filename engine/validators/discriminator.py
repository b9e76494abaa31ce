"""The GAN's own discriminator as a validity filter (DiffGAN's first filter).

The score is the discriminator's probability that the image is real, given the label the
generator was asked for. A GAN trained to equilibrium scores its own samples near 0.5, so
the default threshold is not 0.5: it is the score that 95% of the training split's real
images reach (``calibrate``), measured once per generator and stated in the results.
"""

from __future__ import annotations

import torch

from engine.validators.base import VALIDATORS, Validator

#: Share of real training images the default threshold lets through.
REAL_KEPT = 0.95


@VALIDATORS.register("discriminator")
class DiscriminatorFilter(Validator):
    name = "discriminator"
    default_threshold = float("nan")  # calibrated on real images unless given
    describes = "the GAN discriminator's probability that the image is real"
    score_range = (0.0, 1.0)

    @classmethod
    def check(cls, generator, dataset=None) -> str | None:
        if not hasattr(generator, "realness"):
            return (
                f"validity filter 'discriminator' needs a GAN with its discriminator; "
                f"generator {getattr(generator, 'family', '?')} has none"
            )
        return None

    def __init__(self, generator, dataset, threshold: float | None = None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        if threshold is None:
            self.threshold = self.calibrate()

    @torch.no_grad()
    def probability(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        gen = self.generator
        out = []
        for i in range(0, len(x), 512):
            xb = x[i : i + 512].to(gen.device)
            out.append(torch.sigmoid(gen.realness(xb, labels[i : i + 512].to(gen.device))).cpu())
        return torch.cat(out) if out else torch.zeros(0)

    def calibrate(self) -> float:
        """The score REAL_KEPT of the training split's real images reach."""
        real = self.dataset.load("train")
        p = self.probability(real.images, real.labels)
        return float(torch.quantile(p.double(), 1 - REAL_KEPT))

    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.probability(images.float() / 255.0, labels).double()
