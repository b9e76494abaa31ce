"""SINVAD's genetic algorithm (Kang et al., "Sampling Inputs Near the Decision boundary"),
vectorised over all seeds, with the reference code's step bug fixed.

Per seed: P individuals, initially seed + init_noise x N(0, I). Each generation keeps the
E lowest-fitness individuals (elites) and breeds P - E children from two distinct elites by
single-point crossover, adds step x N(0, I) to the genes that differ from the seed, then
resets each gene to the seed's with probability ``mask_p`` (a Bernoulli mask), which pulls
children back towards the seed. After each evaluation the step is multiplied by ``decay``
when the best fitness is unchanged and reset to ``step`` when it changed; a seed stops when
its step falls below ``min_step``. The reference code (coinse/SINVAD, gen_bound_imgs.py)
keeps one step across all images, never resetting it between them; here every seed has its
own step. Latents are not clamped, as in the reference.

Its default objective is the boundary fitness (engine/search/fitness.py): the closest latent to
the seed whose class changes.
"""

from __future__ import annotations

import torch
from pydantic import Field, model_validator

from engine.search.strategies.base import (
    MAX_STEP,
    STRATEGIES,
    ElitistBudget,
    PopulationStrategy,
    SearchState,
    StrategyParams,
    check_elites,
)
from engine.search.strategies.operators import breed, reset_mask, select_elite, take
from engine.search.termination import StepFloor, Termination


class SinvadParams(StrategyParams):
    """Defaults are the paper's (and its code's) values."""

    generations: int = Field(
        500, ge=1, le=1_000_000, title="Generations", description="generation budget"
    )
    population: int = Field(50, ge=3, le=10_000, description="individuals per seed")
    elites: int = Field(20, ge=2, description="best individuals kept each generation")
    init_noise: float = Field(
        0.7, gt=0, le=MAX_STEP, description="initial population: seed + this x N(0,1)"
    )
    step: float = Field(
        0.1, gt=0, le=MAX_STEP, description="mutation step, and the step after improvement"
    )
    decay: float = Field(0.7, gt=0, lt=1, description="step factor when the best is unchanged")
    min_step: float = Field(
        1e-3, gt=0, le=MAX_STEP, description="a seed stops when its step falls below"
    )
    mask_p: float = Field(
        0.5, ge=0, le=1, description="probability that a child's gene is reset to the seed's"
    )
    stop_at_failure: bool = Field(
        True, description="stop at the first failure (the boundary fitness always refines)"
    )

    @model_validator(mode="after")
    def _check(self) -> SinvadParams:
        check_elites(self.elites, self.population)
        if self.min_step >= self.step:
            raise ValueError(
                f"min_step={self.min_step} must be below step={self.step}, or every seed "
                "stops after its first generation"
            )
        return self


def decay_step(
    step: torch.Tensor, base: float, factor: float, best: torch.Tensor, prev_best: torch.Tensor
) -> torch.Tensor:
    """(S,): step x factor where the best fitness is unchanged, else back to base."""
    return torch.where(best == prev_best, step * factor, torch.full_like(step, base))


@STRATEGIES.register("sinvad")
class Sinvad(ElitistBudget, PopulationStrategy):
    name = "sinvad"
    Params = SinvadParams
    per_seed = ("seed", "pop", "scores", "logits", "step", "prev_best")
    default_fitness = "boundary"
    step_label = "mutation step"

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        p = self.params
        self.spread(seeds, p.population, p.init_noise, rng)  # unclamped, as the reference
        self.step = torch.full((len(self.seed),), p.step)
        # +inf: the first generation never counts as stagnation.
        self.prev_best = torch.full((len(self.seed),), float("inf"))

    def tell(self, slots: torch.Tensor, scores: torch.Tensor, logits: torch.Tensor) -> None:
        super().tell(slots, scores, logits)
        # The generation is complete: apply the step rule now, so the step floor (its
        # termination) sees this generation's step (the reference breaks right after).
        best = self.scores.min(dim=1).values
        self.step = decay_step(self.step, self.params.step, self.params.decay, best, self.prev_best)
        self.prev_best = best

    def termination(self, refines_failures: bool = False) -> Termination:
        return super().termination(refines_failures) | StepFloor(self.params.min_step)

    def state(self) -> SearchState:
        return SearchState(self.step)

    def advance(self, rng: torch.Generator) -> None:
        p = self.params
        s, e, c = self.pop.shape[0], p.elites, p.population - p.elites
        elite = select_elite(self.scores, e)
        e_scores, e_logits = take(self.scores, elite), take(self.logits, elite)
        e_pop, children = breed(self.pop, elite, c, self.seed, self.step, rng)
        children = reset_mask(children, self.seed, p.mask_p, rng)

        self.pop = torch.cat([e_pop, children], dim=1)
        self.scores = torch.cat([e_scores, torch.full((s, c), float("nan"))], dim=1)
        self.logits = torch.cat([e_logits, torch.full((s, c, e_logits.shape[-1]), float("nan"))], 1)
        # Elites keep their scores: decoding is deterministic, so only children are asked.
        self.slots = torch.arange(e, p.population)
