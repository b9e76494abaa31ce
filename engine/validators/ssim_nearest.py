"""SSIM to the most similar real image as a validity filter (DiffGAN's second filter).

The references are the generator's training split (the images it learnt the domain
from); the score is the highest SSIM to any of them (engine/validators/nearest.py), and
the default threshold is DiffGAN's 0.4.
"""

from __future__ import annotations

import torch

from engine.validators.base import VALIDATORS, Validator
from engine.validators.nearest import NearestSSIM


@VALIDATORS.register("ssim-nearest")
class SSIMNearest(Validator):
    name = "ssim-nearest"
    default_threshold = 0.4
    describes = "SSIM to the most similar image of the training split"
    score_range = (-1.0, 1.0)

    def __init__(self, generator, dataset, threshold: float | None = None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        self.nearest = NearestSSIM(dataset.load("train").images)

    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.nearest.best(images.double() / 255.0)[0]
