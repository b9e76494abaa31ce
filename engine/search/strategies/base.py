"""Search strategy plug-in base class: ask/tell over tensors for all seeds at once.

A strategy owns a state of tensors with a leading seed dimension S. ``ask`` returns the
candidates to evaluate, (S, M, *latent_shape); ``tell`` takes their scores (S, M) and
prepares the next candidates; ``keep`` drops finished seeds. ``best`` reports, per seed,
the best individual of the current population. No per-individual Python loops.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from engine.core.registry import Registry
from engine.core.settings import Settings


class StrategyParams(Settings):
    """Base of every strategy's parameter model: frozen, no unknown keys."""


@dataclass(frozen=True)
class SearchSpace:
    """What a strategy may know of the generator: latent shape, bounds and GIFTbench range."""

    latent_shape: tuple[int, ...]
    low: float
    high: float
    #: Classes of the dataset (0 where unknown, as in unit tests).
    num_classes: int = 0

    @property
    def range(self) -> float:
        return self.high - self.low


class Strategy(ABC):
    name: ClassVar[str]
    Params: ClassVar[type[StrategyParams]]
    #: The objective (engine/search/fitness.py) used when the campaign config names none.
    default_fitness: ClassVar[str] = "margin"
    #: True: MSE and SSIM of every evaluated image to its seed image are measured per
    #: generation (engine/campaign/metrics.py); costly, so only where a generation is a setting
    #: worth comparing (Argus's lambda).
    image_metrics: ClassVar[bool] = False

    @classmethod
    def check_generator(cls, generator: Any) -> str | None:
        """Why this strategy cannot search ``generator`` (one line), or None."""
        return None

    def attach(self, resolved: Any, labels: torch.Tensor) -> None:
        """Called once before ``start`` with the campaign's resolved parts and the searched
        seeds' labels (S,), for strategies that need more than the seed latents."""
        return None  # most strategies need nothing beyond the seed latents

    def __init__(self, params: StrategyParams, space: SearchSpace) -> None:
        self.params = params
        self.space = space

    @classmethod
    def parse_params(cls, raw: dict[str, Any]) -> StrategyParams:
        return cls.Params(**raw)

    @abstractmethod
    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        """Begin the search from seed latents (S, *latent_shape)."""

    @abstractmethod
    def ask(self) -> tuple[torch.Tensor, torch.Tensor]:
        """What to evaluate now: population slots (M,) and their latents (S, M, *latent_shape).

        Slots already evaluated (survivors whose score is known) are not asked again.
        """

    @abstractmethod
    def tell(self, slots: torch.Tensor, scores: torch.Tensor, logits: torch.Tensor) -> None:
        """Scores (S, M) (minimised) and logits (S, M, K) of the slots returned by ``ask``."""

    @abstractmethod
    def keep(self, mask: torch.Tensor) -> None:
        """Keep only seeds where mask (S,) is True."""

    @abstractmethod
    def population(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The evaluated population: latents (S, P, *L), scores (S, P), logits (S, P, K)."""

    @abstractmethod
    def step_size(self) -> torch.Tensor:
        """The current step size per seed (S,), for the record."""

    @abstractmethod
    def advance(self, rng: torch.Generator) -> None:
        """Breed the next population from the evaluated one."""

    def see(self, slots: torch.Tensor, images: torch.Tensor, failing: torch.Tensor) -> None:
        """Called before ``tell`` with the uint8 images (S, M, C, H, W) of the slots just
        evaluated and whether each fails the criterion (S, M), for strategies whose
        objectives depend on the images (NSGA-II's diversity); most need neither."""
        return None

    def objective2(self) -> torch.Tensor | None:
        """A multi-objective strategy's second objective of the population (S, P), for the
        record (the Pareto front on the Campaign page); None for single-objective ones."""
        return None

    def finished(self) -> torch.Tensor | None:
        """Seeds (S,) whose search this strategy's own stop rule ends after the generation
        just told, or None when it has no stop rule (the runner's rules still apply)."""
        return None

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        """The most evaluations one seed can cost with these parameters."""
        raise NotImplementedError(f"strategy {cls.name} does not state its budget")

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        """Raw parameters changed so that one seed costs at most ``evaluations`` (the
        equal-budget comparison of ``latentfuzz study --strategies``)."""
        return raw

    def evaluation_budget(self) -> int:
        """The most evaluations one seed can cost in this campaign."""
        return type(self).budget(self.params)

    def max_generations(self) -> int:
        return int(getattr(self.params, "generations", 0))


STRATEGIES: Registry[type[Strategy]] = Registry("search strategy")


class EveryGenerationBudget:
    """The budget of a strategy that evaluates `population` new candidates every
    generation (nothing carried over with its score): population x generations."""

    Params: ClassVar[type[StrategyParams]]

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        return params.population * params.generations

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        p = cls.Params(**raw)
        return {**raw, "generations": max(1, evaluations // p.population)}


class PopulationStrategy(Strategy):
    """A strategy whose state is a population of latents with a leading seed dimension:
    ``pop`` (S, P, D), ``scores`` (S, P) NaN until evaluated, ``logits`` (S, P, K) or None
    before the first tell. Subclasses list every other per-seed tensor in ``per_seed`` so
    that ``keep`` drops finished seeds from all of them."""

    per_seed: ClassVar[tuple[str, ...]] = ("seed", "pop", "scores", "logits")
    pop: torch.Tensor
    scores: torch.Tensor
    logits: torch.Tensor | None

    def spread(
        self, seeds: torch.Tensor, population: int, scale: float, rng: torch.Generator
    ) -> None:
        """Start from `population` latents per seed, seed + scale x N(0, I), none scored.
        Seeds (S, *L) are kept flat, (S, D); so is the population, (S, P, D)."""
        s = seeds.shape[0]
        self.seed = seeds.reshape(s, -1).float()
        noise = torch.randn((s, population, self.seed.shape[1]), generator=rng)
        self.pop = self.seed[:, None, :] + scale * noise.to(seeds.device)
        self.scores = torch.full((s, population), float("nan"))
        self.logits = None
        self.slots = torch.arange(population)

    def ask(self) -> tuple[torch.Tensor, torch.Tensor]:
        cand = self.pop[:, self.slots]
        return self.slots, cand.reshape(*cand.shape[:2], *self.space.latent_shape)

    def tell(self, slots: torch.Tensor, scores: torch.Tensor, logits: torch.Tensor) -> None:
        if self.logits is None:
            self.logits = torch.full((*self.scores.shape, logits.shape[-1]), float("nan"))
        self.scores[:, slots] = scores.float().cpu()
        self.logits[:, slots] = logits.float().cpu()

    def population(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        assert self.logits is not None, "population() before tell()"
        return self.pop, self.scores, self.logits

    def keep(self, mask: torch.Tensor) -> None:
        for name in self.per_seed:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[mask])
