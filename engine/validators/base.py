"""Validity filter plug-in base class and registry.

A validity filter scores images a search produced (archived failing inputs and each
seed's result) for whether they still look like the domain: higher is more valid, and an
image is valid when its score reaches the filter's threshold. Filters run when a campaign
ends and on demand (`latentfuzz validate`); scores are stored per image (store/validity).

Some filters can also score label preservation (``preserves``): whether the image still
shows the class it was meant to. The calibration against people's verdicts
(engine/labelling/) reads both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
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
    #: Run when a campaign names no filters (engine/validators `default_validators`). The
    #: filters added with the calibration (issue 37) are opt-in: a differential campaign's
    #: "valid" means "passes every filter run", and adding filters would change it.
    by_default: ClassVar[bool] = True

    @classmethod
    def check(cls, generator: Any, dataset: Any = None) -> str | None:
        """Why this filter cannot score a campaign of ``generator`` on ``dataset`` (one
        line), or None. ``dataset`` None: only what the generator decides is checked."""
        return None

    def __init__(
        self,
        generator: Any,
        dataset: Any,
        threshold: float | None = None,
        *,
        classifier: str | None = None,
        cache: Path | None = None,
    ) -> None:
        """classifier: the zoo name of the campaign's classifier under test (a filter that
        needs a classifier independent of it picks another); cache: a folder where a
        filter may keep what it fitted (the home's cache)."""
        self.generator, self.dataset = generator, dataset
        self.classifier_under_test, self.cache = classifier, cache
        self.threshold = self.default_threshold if threshold is None else float(threshold)

    @abstractmethod
    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Scores (N,) of uint8 images (N, C, H, W) meant to show classes labels (N,)."""

    def preserves(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor | None:
        """Label-preservation scores (N,) in [0, 1] of uint8 images (N, C, H, W) meant to
        show classes labels (N,), higher = more likely still that class; None where this
        filter cannot judge it (the default)."""
        return None


VALIDATORS: Registry[type[Validator]] = Registry("validity filter")
