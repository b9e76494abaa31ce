"""Random search: the equal-budget baseline that tells whether a search method beats chance.

Per seed and generation, P fresh candidates ``seed + step x N(0, I)``, clamped to the latent
bounds; nothing is selected or inherited, so every generation is independent of the last.
The population size, generation budget and step presets are the GA's (``engine/search/strategies/
ga.py``), so a campaign of each spends the same number of evaluations per surviving seed
when both use the same population and generations.
"""

from __future__ import annotations

import torch
from pydantic import Field, model_validator

from engine.search.strategies.base import (
    STRATEGIES,
    EveryGenerationBudget,
    PopulationStrategy,
    SearchSpace,
    StrategyParams,
)
from engine.search.strategies.ga import PRESETS


class RandomParams(StrategyParams):
    generations: int = Field(
        250, ge=1, le=1_000_000, title="Generations", description="generation budget"
    )
    population: int = Field(25, ge=1, le=10_000, description="candidates per seed and generation")
    perturbation: str = Field(
        "strong", title="Step preset",
        description=f"step preset ({', '.join(PRESETS)}) or 'custom' with step",
        json_schema_extra={"options": [*PRESETS, "custom"]},
    )  # fmt: skip
    step: float | None = Field(None, gt=0, description="noise scale when perturbation=custom")
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")

    @model_validator(mode="after")
    def _check(self) -> RandomParams:
        if self.perturbation not in (*PRESETS, "custom"):
            raise ValueError(
                f"perturbation={self.perturbation!r}; expected one of "
                f"{', '.join((*PRESETS, 'custom'))}"
            )
        if (self.perturbation == "custom") != (self.step is not None):
            raise ValueError(
                "step is given exactly when perturbation='custom' "
                f"(got perturbation={self.perturbation!r}, step={self.step})"
            )
        return self


def draw(seed: torch.Tensor, n: int, step: float, rng: torch.Generator) -> torch.Tensor:
    """n candidates per seed: seed (S, D) + step x N(0, I) -> (S, n, D)."""
    noise = torch.randn((seed.shape[0], n, seed.shape[1]), generator=rng).to(seed.device)
    return seed[:, None, :] + step * noise


@STRATEGIES.register("random")
class RandomSearch(EveryGenerationBudget, PopulationStrategy):
    name = "random"
    Params = RandomParams

    def __init__(self, params: RandomParams, space: SearchSpace) -> None:
        super().__init__(params, space)
        p = params
        self.base_step = p.step if p.step is not None else space.range * PRESETS[p.perturbation]

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        self.seed = seeds.reshape(seeds.shape[0], -1).float()
        self.slots = torch.arange(self.params.population)
        self._draw(rng)

    def _draw(self, rng: torch.Generator) -> None:
        s, p = self.seed.shape[0], self.params.population
        z = draw(self.seed, p, self.base_step, rng)
        self.pop = z.clamp(self.space.low, self.space.high)
        self.scores = torch.full((s, p), float("nan"))
        self.logits: torch.Tensor | None = None

    def step_size(self) -> torch.Tensor:
        return torch.full((self.seed.shape[0],), self.base_step)

    def advance(self, rng: torch.Generator) -> None:
        self._draw(rng)  # no selection: every generation starts afresh from the seed
