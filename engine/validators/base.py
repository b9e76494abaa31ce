"""Validity filter plug-in base class and registry.

A validity filter scores images a search produced (archived failing inputs and each
seed's result) for whether they still look like the domain: higher is more valid, and an
image is valid when its score reaches the filter's threshold. Filters run when a campaign
ends and on demand (`latentfuzz validate`); scores are stored per image (store/validity).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import torch

from engine.core.registry import Registry


class Validator(ABC):
    name: ClassVar[str]
    #: The threshold used when the campaign config gives none.
    default_threshold: ClassVar[float]
    #: One line on what the score is, for the CLI and the Campaign page.
    describes: ClassVar[str]
    #: The range a score (and so a meaningful threshold) lies in.
    score_range: ClassVar[tuple[float, float]]

    @classmethod
    def check(cls, generator: Any) -> str | None:
        """Why this filter cannot score a campaign of ``generator`` (one line), or None."""
        return None

    def __init__(self, generator: Any, dataset: Any, threshold: float | None = None) -> None:
        self.generator, self.dataset = generator, dataset
        self.threshold = self.default_threshold if threshold is None else float(threshold)

    @abstractmethod
    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Scores (N,) of uint8 images (N, C, H, W) meant to show classes labels (N,)."""


VALIDATORS: Registry[type[Validator]] = Registry("validity filter")
