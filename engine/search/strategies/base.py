"""Search strategy plug-in base class: ask/tell over tensors for all seeds at once.

A strategy owns a state of tensors with a leading seed dimension S. ``ask`` returns the
candidates to evaluate, (S, M, *latent_shape); ``tell`` takes their scores (S, M) and
prepares the next candidates; ``keep`` drops finished seeds. ``state`` reports what the
loop records per generation, and ``termination`` the stop rules the loop asks. No
per-individual Python loops.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from engine.core.registry import Registry
from engine.core.settings import Settings
from engine.search.strategies.operators import draw
from engine.search.termination import AtFailure, Generations, Termination

#: Largest step, spread or noise scale a strategy takes, in latent units: latents span a
#: few units, and `--step 1e308` overflowed float32 into a traceback mid-campaign.
MAX_STEP = 1e6


class StrategyParams(Settings):
    """Base of every strategy's parameter model: frozen, no unknown keys."""

    #: Old names of settings that are still accepted, each to its current name (stored
    #: configs and flags that predate a rename); the model writes the current name.
    renamed: ClassVar[dict[str, str]] = {}


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


@dataclass(frozen=True)
class SearchState:
    """What the loop records of a strategy after each generation, per active seed."""

    #: (S,) the generations table's ``step`` column; the strategy's ``step_label`` names
    #: what it holds (interpolation's lambda, say).
    step: torch.Tensor
    #: (S, P) a multi-objective strategy's second objective of the population (the Pareto
    #: front on the Campaign page); None for single-objective ones.
    objective2: torch.Tensor | None = None


class Strategy(ABC):
    """A search strategy: ask/see/tell over tensors for all seeds at once, its recorded
    state (``state``) and its stop rules (``termination``, from Params' ``generations`` and
    ``stop_at_failure`` unless a subclass builds its own)."""

    name: ClassVar[str]
    Params: ClassVar[type[StrategyParams]]
    #: What the recorded step (SearchState.step) is, for labels; None: nothing (zeros).
    step_label: ClassVar[str | None] = "step"
    #: True: Params have step presets (``perturbation``, engine/search/strategies/presets.py).
    has_presets: ClassVar[bool] = False
    #: True: the strategy records a second objective (SearchState.objective2).
    multi_objective: ClassVar[bool] = False
    #: The objective (engine/search/fitness.py) used when the campaign config names none.
    default_fitness: ClassVar[str] = "margin"
    #: True: MSE and SSIM of every evaluated image to its seed image are measured per
    #: generation (engine/campaign/metrics.py); costly, so only where a generation is a setting
    #: worth comparing (Argus's lambda).
    image_metrics: ClassVar[bool] = False
    #: A generator family this strategy always searches, built from the dataset alone
    #: (the pixel-space baselines: "pixel"); None: the campaign's generator.
    generator_family: ClassVar[str | None] = None

    @classmethod
    def check_generator(cls, generator: Any) -> str | None:
        """Why this strategy cannot search ``generator`` (one line), or None."""
        return None

    @classmethod
    def check_parts(cls, resolved: Any) -> str | None:
        """Why this strategy cannot run with the campaign's resolved parts (its classifier,
        objective, config), one line, or None; asked before anything is written."""
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

    @property
    def preset(self) -> str | None:
        """The step preset in force, for the campaign row; None without presets."""
        return None

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
    def state(self) -> SearchState:
        """What the loop records after the generation just told (step, second objective)."""

    @abstractmethod
    def advance(self, rng: torch.Generator) -> None:
        """Breed the next population from the evaluated one."""

    def state_dict(self) -> dict[str, Any]:
        """The search state between two generations, for a checkpoint
        (engine/campaign/checkpoint.py): tensors, numbers, strings, None, and lists, tuples
        and dicts of them (what ``torch.load(weights_only=True)`` reads back), enough for
        ``load_state_dict`` on a fresh instance of the same params to go on exactly as
        this one would. The caller copies the tensors. A strategy that does not say
        raises NotImplementedError: its campaigns are checkpointed never, and resume by
        replaying the whole search."""
        raise NotImplementedError(f"strategy {self.name} has no state_dict")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take up a ``state_dict`` in place of ``start``, after ``attach``. Raise
        (ValueError) on a state that lacks something: the resume then replays instead."""
        raise NotImplementedError(f"strategy {self.name} has no load_state_dict")

    def see(self, slots: torch.Tensor, images: torch.Tensor, failing: torch.Tensor) -> None:
        """Called before ``tell`` with the uint8 images (S, M, C, H, W) of the slots just
        evaluated and whether each fails the criterion (S, M), for strategies whose
        objectives depend on the images (NSGA-II's diversity); most need neither."""
        return None

    def termination(self, refines_failures: bool = False) -> Termination:
        """This search's stop rules, built when it starts: the generation budget, and the
        first failure where ``stop_at_failure`` is on, unless the fitness refines failures
        (SINVAD's boundary keeps a failed seed searching). Subclasses add their own."""
        rule = Generations(self.params.generations)
        if self.params.stop_at_failure and not refines_failures:
            return rule | AtFailure()
        return rule

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

    def held_per_seed(self, image_values: int) -> tuple[int, int]:
        """(vectors, values in each) held at once for each seed, for images of
        `image_values` values: bounds the search's memory before it starts."""
        return int(getattr(self.params, "population", 1)), math.prod(self.space.latent_shape)


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


def check_elites(elites: int, population: int, name: str = "elites") -> None:
    """Raise ValueError (one line) unless an elitist GA breeds children: elites below
    population. `name`: the setting as the user wrote it."""
    if elites >= population:
        raise ValueError(
            f"{name}={elites} must be smaller than population={population}, or no children "
            f"are bred; lower {name}"
        )


class ElitistBudget:
    """The budget of an elitist GA (``elites`` survivors keep their scores): the whole
    first population, then only the children of each later generation."""

    Params: ClassVar[type[StrategyParams]]

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        return elitist_budget(params.population, params.elites, params.generations)

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        p = cls.Params(**raw)
        return {**raw, "generations": elitist_generations(evaluations, p.population, p.elites)}


def elitist_budget(population: int, elites: int, generations: int) -> int:
    """Evaluations per seed of an elitist GA: P + (P - E) x (G - 1)."""
    return population + (population - elites) * (generations - 1)


def elitist_generations(evaluations: int, population: int, elites: int) -> int:
    """The most generations whose elitist_budget fits in `evaluations` (at least 1)."""
    return 1 + max(0, evaluations - population) // (population - elites)


class PopulationStrategy(Strategy):
    """A strategy whose state is a population of latents with a leading seed dimension:
    ``pop`` (S, P, D), ``scores`` (S, P) NaN until evaluated, ``logits`` (S, P, K) or None
    before the first tell. Subclasses list every other per-seed tensor in ``per_seed`` so
    that ``keep`` drops finished seeds from all of them."""

    per_seed: ClassVar[tuple[str, ...]] = ("seed", "pop", "scores", "logits")
    #: Attributes beyond ``per_seed`` and ``slots`` that the state holds (counters).
    state_fields: ClassVar[tuple[str, ...]] = ()
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
        self.pop = draw(self.seed, population, scale, rng)
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

    def _fields(self) -> tuple[str, ...]:
        return (*self.per_seed, "slots", *self.state_fields)

    def state_dict(self) -> dict[str, Any]:
        # Everything a generation changes lives in these fields; what the params derive
        # (GA's reset step, the lambda grid) is made again by __init__.
        return {name: getattr(self, name) for name in self._fields()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        missing = [name for name in self._fields() if name not in state]
        if missing:
            raise ValueError(f"the {self.name} state lacks {', '.join(missing)}")
        s = len(state["pop"])
        for name in self._fields():
            value = state[name]
            if name in self.per_seed and value is not None and len(value) != s:
                raise ValueError(f"the {self.name} state's {name} has {len(value)} seeds, not {s}")
            setattr(self, name, value)
