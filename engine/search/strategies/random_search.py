"""Random search: the equal-budget baseline that tells whether a search method beats chance.

Per seed and generation, P fresh candidates ``seed + step x N(0, I)``, clamped to the latent
bounds; nothing is selected or inherited, so every generation is independent of the last.
The population size, generation budget and step presets are the GA's
(``engine/search/strategies/presets.py``), so a campaign of each spends the same number of
evaluations per surviving seed when both use the same population and generations.
"""

from __future__ import annotations

import torch
from pydantic import Field, model_validator

from engine.search.strategies.base import (
    MAX_STEP,
    STRATEGIES,
    EveryGenerationBudget,
    PopulationStrategy,
    SearchSpace,
    SearchState,
    StrategyParams,
)
from engine.search.strategies.operators import clamp, draw
from engine.search.strategies.presets import (
    HasPresets,
    check_preset,
    perturbation_field,
    preset_step,
)


class RandomParams(StrategyParams):
    generations: int = Field(
        250, ge=1, le=1_000_000, title="Generations", description="generation budget"
    )
    population: int = Field(25, ge=1, le=10_000, description="candidates per seed and generation")
    perturbation: str = perturbation_field()
    step: float | None = Field(
        None, gt=0, le=MAX_STEP, description="noise scale when perturbation=custom"
    )
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")

    @model_validator(mode="after")
    def _check(self) -> RandomParams:
        check_preset(self.perturbation, self.step)
        return self


@STRATEGIES.register("random")
class RandomSearch(HasPresets, EveryGenerationBudget, PopulationStrategy):
    name = "random"
    Params = RandomParams
    step_label = "noise scale"

    def __init__(self, params: RandomParams, space: SearchSpace) -> None:
        super().__init__(params, space)
        self.base_step = preset_step(params.perturbation, params.step, space)

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        self.seed = seeds.reshape(seeds.shape[0], -1).float()
        self.slots = torch.arange(self.params.population)
        self._draw(rng)

    def _draw(self, rng: torch.Generator) -> None:
        s, p = self.seed.shape[0], self.params.population
        self.pop = clamp(draw(self.seed, p, self.base_step, rng), self.space.low, self.space.high)
        self.scores = torch.full((s, p), float("nan"))
        self.logits: torch.Tensor | None = None

    def state(self) -> SearchState:
        return SearchState(torch.full((self.seed.shape[0],), self.base_step))

    def advance(self, rng: torch.Generator) -> None:
        self._draw(rng)  # no selection: every generation starts afresh from the seed
