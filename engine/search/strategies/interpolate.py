"""Argus's interpolation: from each seed towards encoded images of every other class.

Per seed: k test images of every class other than the seed's are drawn (seeded, from the
campaign's generator) and encoded (posterior mean). Generation g decodes, for the g-th
lambda of the grid, ``z = (1 - lambda) z_seed + lambda z_other`` for all (K - 1) x k
others, so each lambda is one "generation" and the convergence chart, gallery and store
work unchanged (the generations table's ``step`` column holds the lambda, which the
strategy's ``step_label`` says). The whole grid
is evaluated (``stop_at_failure`` is off by default), so Argus's figures come per lambda
(store/interpolation.py: ER, SR, label diversity, MSE and SSIM to the original image and
to the decoded seed). It needs an encoder generator (a VAE).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from pydantic import Field, model_validator

from engine.core.errors import ConfigError
from engine.search.strategies.base import (
    STRATEGIES,
    PopulationStrategy,
    SearchSpace,
    SearchState,
    StrategyParams,
)


class InterpolateParams(StrategyParams):
    k: int = Field(5, ge=1, le=1000, description="images of every other class per seed")
    lambda_min: float = Field(0.05, gt=0, le=1, description="first lambda of the grid")
    lambda_max: float = Field(0.5, gt=0, le=1, description="last lambda of the grid")
    lambda_steps: int = Field(10, ge=1, le=1000, description="lambdas in the grid (generations)")
    stop_at_failure: bool = Field(False, description="stop a seed at its first failure")

    @model_validator(mode="after")
    def _check(self) -> InterpolateParams:
        if self.lambda_max < self.lambda_min:
            raise ValueError(
                f"lambda_max={self.lambda_max} is below lambda_min={self.lambda_min}; swap them"
            )
        return self

    @property
    def generations(self) -> int:
        return self.lambda_steps


def lambdas(p: InterpolateParams) -> torch.Tensor:
    """The lambda grid (G,), evenly spaced from lambda_min to lambda_max."""
    return torch.linspace(p.lambda_min, p.lambda_max, p.lambda_steps)


def interpolate(seed: torch.Tensor, others: torch.Tensor, lam: float) -> torch.Tensor:
    """(1 - lam) seed (S, D) + lam others (S, M, D) -> (S, M, D)."""
    return (1 - lam) * seed[:, None, :] + lam * others


def draw_others(
    labels: torch.Tensor,
    pool_labels: torch.Tensor,
    k: int,
    num_classes: int,
    rng: torch.Generator,
) -> torch.Tensor:
    """Dataset indices (S, (K - 1) x k): k images of every class but the seed's, classes
    in order, drawn without replacement within a class."""
    per_class = []
    for c in range(num_classes):  # a loop over classes, not individuals
        pool = torch.nonzero(pool_labels == c).flatten()
        if len(pool) < k:
            raise ConfigError(
                f"class {c} has {len(pool)} test images, k={k} asked; lower k (-p k=N) to "
                f"at most {len(pool)}"
            )
        order = torch.rand((len(labels), len(pool)), generator=rng).argsort(1)[:, :k]
        per_class.append(pool[order])  # (S, k)
    idx = torch.stack(per_class, 1)  # (S, K, k)
    keep = torch.arange(num_classes)[None, :] != labels[:, None]  # (S, K)
    return idx[keep].view(len(labels), (num_classes - 1) * k)


@STRATEGIES.register("interpolate")
class Interpolate(PopulationStrategy):
    name = "interpolate"
    Params = InterpolateParams
    per_seed = ("seed", "others", "pop", "scores", "labels", "logits")
    state_fields = ("g",)
    image_metrics = True
    step_label = "lambda"

    def __init__(self, params: InterpolateParams, space: SearchSpace) -> None:
        super().__init__(params, space)
        self.grid = lambdas(params)

    @classmethod
    def check_generator(cls, generator: Any) -> str | None:
        if generator.has_encoder and not generator.conditional:
            return None
        return (
            f"strategy 'interpolate' needs an encoder generator (a VAE) to encode images of "
            f"other classes; {generator.family!r} has none: use --generator vae"
        )

    @classmethod
    def budget(cls, params: StrategyParams, num_classes: int = 10) -> int:
        return (num_classes - 1) * params.k * params.lambda_steps

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        # The grid stays; more images per class reach the budget (10 classes assumed, as
        # every bundled dataset has), and the last lambda is cut short to it.
        p = cls.Params(**raw)
        k = max(1, math.ceil(evaluations / (9 * p.lambda_steps)))
        return {**raw, "k": k, "evaluations": evaluations}

    def evaluation_budget(self) -> int:
        return self.capped(self.budget(self.params, self.space.num_classes or 10))

    def held_per_seed(self, image_values: int) -> tuple[int, int]:
        # Every other class's k images, then their latents: (S, (K - 1) x k, ...).
        vectors = ((self.space.num_classes or 10) - 1) * self.params.k
        return vectors, max(image_values, math.prod(self.space.latent_shape))

    def attach(self, resolved: Any, labels: torch.Tensor) -> None:
        self.generator, self.dataset, self.labels = resolved.generator, resolved.dataset, labels

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        s = seeds.shape[0]
        self.seed = seeds.reshape(s, -1).float()
        test = self.dataset.load("test")
        k_cls = self.space.num_classes or int(test.labels.max()) + 1
        idx = draw_others(self.labels, test.labels, self.params.k, k_cls, rng)
        gen = self.generator
        z = gen.encode(test.images[idx.flatten()].to(gen.device)).float()
        self.others = z.reshape(s, idx.shape[1], -1).to(self.seed.device)
        self.g = 0
        self.slots = torch.arange(idx.shape[1])
        self._make()

    def _make(self) -> None:
        self.pop = interpolate(self.seed, self.others, float(self.grid[self.g]))
        self.scores = torch.full(self.pop.shape[:2], float("nan"))
        self.logits: torch.Tensor | None = None

    def state(self) -> SearchState:
        return SearchState(torch.full((self.seed.shape[0],), float(self.grid[self.g])))

    def advance(self, rng: torch.Generator) -> None:
        self.g += 1
        self._make()
