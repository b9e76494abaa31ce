"""The GIFTbench genetic algorithm, vectorised over all seeds, with its known defects fixed.

Per seed: a population of P latents around the seed; each generation keeps the ``elites``
lowest-fitness individuals (elitism) and breeds P - elites children from two distinct
elite parents by single-point crossover over the flattened latent, then Gaussian mutation
of the current step on genes that differ from the seed, clamped to the latent bounds.
The step doubles (up to max_step) while the best fitness stays the same and is reset when
it changes: to the *initial* step (2 x step) as in the study's code (``reset_to="initial"``,
the default of the low and high presets, so they reproduce GIFTbench), or to the step
itself (``reset_to="step"``, the default of strong and custom).

Fixed relative to GIFTbench: doubling is capped; elites >= population is rejected;
crossover cuts the flattened latent, so it also works for latents with a singleton
dimension. tests/engine/search/test_ga_fidelity.py holds one test per GIFTbench rule. GIFTbench
called the elites ``best_left``: that name is still accepted (old configs, stored
campaigns, ``--best-left``), and ``elites`` is what is written.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import Field, ModelWrapValidatorHandler, model_validator

from engine.search.strategies.base import (
    MAX_STEP,
    STRATEGIES,
    ElitistBudget,
    PopulationStrategy,
    SearchSpace,
    SearchState,
    StrategyParams,
    check_elites,
)
from engine.search.strategies.operators import breed, clamp, select_elite, take
from engine.search.strategies.presets import (
    HasPresets,
    check_preset,
    perturbation_field,
    preset_step,
)

#: Where the step returns when the best fitness changes, per preset. GIFTbench resets to
#: its initial step (2 x step), so its effective mutation step is twice the preset's.
RESET_DEFAULTS: dict[str, str] = {
    "low": "initial",
    "high": "initial",
    "strong": "step",
    "custom": "step",
}
#: GIFTbench's name for the elites, accepted in place of ``elites``.
OLD_ELITES = "best_left"


class GAParams(StrategyParams):
    renamed = {OLD_ELITES: "elites"}

    generations: int = Field(
        250, ge=1, le=1_000_000, title="Generations", description="generation budget"
    )
    population: int = Field(
        25, ge=2, le=10_000, title="Population", description="individuals per seed"
    )
    elites: int = Field(
        10,
        ge=2,
        title="Elites",
        description="best individuals kept each generation (GIFTbench's best_left); two "
        "distinct parents need >= 2",
    )
    perturbation: str = perturbation_field()
    step: float | None = Field(
        None,
        gt=0,
        le=MAX_STEP,
        title="Custom step",
        description="mutation step when perturbation=custom",
    )
    init_step: float | None = Field(
        None,
        gt=0,
        le=MAX_STEP,
        title="Initial step",
        description="initial spread; default 2 x step",
    )
    max_step: float | None = Field(
        None, gt=0, le=MAX_STEP, description="cap on doubling; default latent range"
    )
    reset_to: Literal["initial", "step"] | None = Field(
        None,
        title="Reset to",
        description="step after the best fitness changes: 'initial' (2 x step, GIFTbench) or "
        "'step'; default initial for low/high, step for strong/custom",
    )
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")

    @model_validator(mode="wrap")
    @classmethod
    def _check(cls, data: Any, handler: ModelWrapValidatorHandler[GAParams]) -> GAParams:
        # A check names the setting as it was written: best_left in an old config.
        name = "elites"
        if isinstance(data, dict) and OLD_ELITES in data:
            if "elites" in data:
                raise ValueError(
                    f"{OLD_ELITES}={data[OLD_ELITES]} and elites={data['elites']} name one "
                    f"setting; give elites only"
                )
            name = OLD_ELITES
            data = {("elites" if k == OLD_ELITES else k): v for k, v in data.items()}
        p = handler(data)
        check_preset(p.perturbation, p.step)
        check_elites(p.elites, p.population, name)
        return p


def reset_rule(p: GAParams) -> str:
    """The reset rule in force: the explicit one, else the preset's default."""
    return p.reset_to or RESET_DEFAULTS[p.perturbation]


def resolve_step(p: GAParams, space: SearchSpace) -> tuple[float, float, float]:
    """(reset step, init_step, max_step) in latent units: the step the search returns to
    whenever the best fitness changes, the initial population's spread, and the cap."""
    step = preset_step(p.perturbation, p.step, space)
    init = p.init_step if p.init_step is not None else 2.0 * step
    reset = init if reset_rule(p) == "initial" else step
    cap = p.max_step if p.max_step is not None else max(space.range, reset)
    return float(reset), float(init), float(cap)


def update_step(
    step: torch.Tensor, base: float, cap: float, best: torch.Tensor, prev_best: torch.Tensor
) -> torch.Tensor:
    """Double the step (capped) where the best fitness did not change, else reset to base."""
    same = best == prev_best
    return torch.where(same, (step * 2).clamp(max=cap), torch.full_like(step, base))


@STRATEGIES.register("ga")
class GeneticAlgorithm(HasPresets, ElitistBudget, PopulationStrategy):
    name = "ga"
    Params = GAParams
    per_seed = ("seed", "pop", "scores", "logits", "step", "prev_best")
    step_label = "mutation step"

    def __init__(self, params: GAParams, space: SearchSpace) -> None:
        super().__init__(params, space)
        self.base_step, self.init_step, self.cap = resolve_step(params, space)

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        self.spread(seeds, self.params.population, self.init_step, rng)
        self.pop = clamp(self.pop, self.space.low, self.space.high)
        self.step = torch.full((len(self.seed),), self.base_step)
        self.prev_best = torch.full((len(self.seed),), float("inf"))

    def state(self) -> SearchState:
        return SearchState(self.step)

    def advance(self, rng: torch.Generator) -> None:
        p = self.params
        e = p.elites
        best = self.scores.min(dim=1).values
        self.step = update_step(self.step, self.base_step, self.cap, best, self.prev_best)
        self.prev_best = best

        elite = select_elite(self.scores, e)
        e_pop, children = breed(self.pop, elite, p.population - e, self.seed, self.step, rng)
        self.pop = torch.cat([e_pop, children.clamp_(self.space.low, self.space.high)], dim=1)
        # Children's rows are NaN until told: filled whole, then the elites' written over.
        scores = torch.full_like(self.scores, float("nan"))
        scores[:, :e] = take(self.scores, elite)
        logits = torch.full_like(self.logits, float("nan"))
        logits[:, :e] = take(self.logits, elite)
        self.scores, self.logits = scores, logits
        # Survivors keep their scores: decoding is deterministic, so only children are asked.
        self.slots = torch.arange(e, p.population)
