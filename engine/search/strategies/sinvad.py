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

The class-escape analysis (the reference's RQ4 notebook) adds one branch to the step rule:
x ``grow`` when the best changed but no individual reaches the target. Both scripts start
``prev_best`` at their "not reached" score (999), so a first generation that reaches
nothing is stagnation, and a search that never reaches its goal stops after 13
generations; with elites kept, the best never falls back to "not reached", so the growth
branch cannot fire in either (it is kept, as the reference has it).

Its default objective is the boundary fitness (engine/search/fitness.py): the closest latent to
the seed whose class changes.
"""

from __future__ import annotations

from typing import Any

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
    grow: float = Field(
        1.2,
        ge=1,
        le=10,
        description="step factor when the best changed but none reaches the goal (escape)",
    )
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
    step: torch.Tensor,
    base: float,
    factor: float,
    best: torch.Tensor,
    prev_best: torch.Tensor,
    grow: float = 1.0,
    unreached: float | None = None,
) -> torch.Tensor:
    """(S,): step x factor where the best fitness is unchanged; else step x grow where the
    best is still the fitness's `unreached` score (no individual reached the goal); else
    back to base. Stagnation is tested first, as in the reference."""
    new = torch.full_like(step, base)
    if unreached is not None:
        new = torch.where(best >= unreached, step * grow, new)
    return torch.where(best == prev_best, step * factor, new)


@STRATEGIES.register("sinvad")
class Sinvad(ElitistBudget, PopulationStrategy):
    name = "sinvad"
    Params = SinvadParams
    per_seed = ("seed", "pop", "scores", "logits", "step", "prev_best")
    default_fitness = "boundary"
    step_label = "mutation step"

    #: The fitness's "not reached" score (Fitness.unreached), set by attach.
    unreached: float | None = None

    def attach(self, resolved: Any, labels: torch.Tensor) -> None:
        self.unreached = resolved.fitness.unreached

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        p = self.params
        self.spread(seeds, p.population, p.init_noise, rng)  # unclamped, as the reference
        self.step = torch.full((len(self.seed),), p.step)
        # The reference starts prev_best at 999, its "not reached" score: a first
        # generation that reaches nothing decays the step. A fitness without such a score
        # (a margin) starts at +inf, so its first generation never counts as stagnation.
        first = float("inf") if self.unreached is None else self.unreached
        self.prev_best = torch.full((len(self.seed),), first)

    def tell(self, slots: torch.Tensor, scores: torch.Tensor, logits: torch.Tensor) -> None:
        super().tell(slots, scores, logits)
        # The generation is complete: apply the step rule now, so the step floor (its
        # termination) sees this generation's step (the reference breaks right after).
        best = self.scores.min(dim=1).values
        p = self.params
        self.step = decay_step(
            self.step, p.step, p.decay, best, self.prev_best, p.grow, self.unreached
        )
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
