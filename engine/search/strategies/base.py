"""Search strategy plug-in base class: ask/tell over tensors for all seeds at once.

A strategy owns a state of tensors with a leading seed dimension S. ``ask`` returns the
candidates to evaluate, (S, M, *latent_shape); ``tell`` takes their scores (S, M) and
prepares the next candidates; ``keep`` drops finished seeds. ``state`` reports what the
loop records per generation, and ``termination`` the stop rules the loop asks. No
per-individual Python loops.

The evaluation budget (``evaluations``, a setting of every strategy) is the strategy's to
keep, not the loop's, so that strategies that breed different numbers of candidates per
generation can be given exactly the same budget (``latentfuzz study --strategies``). A new
strategy gets it by:

- subclassing ``PopulationStrategy`` (its ``ask`` asks no more than ``remaining()``, its
  ``tell`` counts ``spent``), listing in ``per_individual`` every tensor with a population
  dimension (dim 1), and calling ``super().tell`` where it overrides ``tell``;
- having a ``generations`` setting (the generation budget) and stating ``budget(params)``,
  the evaluations one seed costs at that generation budget, never fewer for more
  generations (``EveryGenerationBudget`` and ``ElitistBudget`` state the usual two);
- building its stop rules on ``super().termination()`` where it adds its own.

``with_budget`` then sets the fewest generations that reach a budget, and the budget
itself: the generation that reaches it evaluates only as many candidates as it leaves
(BUDGET_RULE, recorded with the campaign).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from pydantic import Field

from engine.core.registry import Registry
from engine.core.settings import Settings
from engine.search.strategies.operators import draw
from engine.search.termination import AtFailure, Evaluations, Generations, Termination

#: Largest step, spread or noise scale a strategy takes, in latent units: latents span a
#: few units, and `--step 1e308` overflowed float32 into a traceback mid-campaign.
MAX_STEP = 1e6
#: How an evaluation budget is kept, as recorded with a campaign (its config's
#: ``budget_rule``): the generation that reaches the budget evaluates only the first
#: candidates it asks, as many as the budget leaves, so every seed that searches to the
#: end costs exactly the budget. Without an evaluation budget, whole generations
#: (NO_BUDGET_RULE): a seed costs at most ``budget(params)``.
BUDGET_RULE = "truncate last generation"
NO_BUDGET_RULE = "whole generations"
#: Largest evaluation budget per seed: the largest generation budget times the largest
#: population.
MAX_EVALUATIONS = 10**10


class StrategyParams(Settings):
    """Base of every strategy's parameter model: frozen, no unknown keys."""

    #: Old names of settings that are still accepted, each to its current name (stored
    #: configs and flags that predate a rename); the model writes the current name.
    renamed: ClassVar[dict[str, str]] = {}

    evaluations: int | None = Field(
        None,
        ge=1,
        le=MAX_EVALUATIONS,
        title="Evaluation budget",
        description="most evaluations per seed; the generation that reaches it evaluates "
        "only as many candidates as it leaves (default: the generation budget alone)",
    )


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
        #: Evaluations each active seed has cost so far: one number, as every active seed
        #: is asked the same slots in the same generations.
        self.spent = 0

    def remaining(self) -> int | None:
        """Evaluations per seed the evaluation budget still leaves; None: no such budget."""
        n = self.params.evaluations
        return None if n is None else n - self.spent

    def budget_rule(self) -> str:
        """How this campaign keeps its budget (BUDGET_RULE or NO_BUDGET_RULE), recorded."""
        return NO_BUDGET_RULE if self.params.evaluations is None else BUDGET_RULE

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
        """This search's stop rules, built when it starts: the generation budget, the
        evaluation budget where one is set, and the first failure where
        ``stop_at_failure`` is on, unless the fitness refines failures (SINVAD's boundary
        keeps a failed seed searching). Subclasses add their own to these."""
        rule: Termination = Generations(self.params.generations)
        if self.params.evaluations is not None:
            rule = rule | Evaluations(self.params.evaluations)
        if self.params.stop_at_failure and not refines_failures:
            return rule | AtFailure()
        return rule

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        """The most evaluations one seed can cost at the generation budget of these
        parameters (their evaluation budget aside); never fewer for more generations."""
        raise NotImplementedError(f"strategy {cls.name} does not state its budget")

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        """Raw parameters with which one seed that searches to the end costs exactly
        ``evaluations`` (the equal-budget comparisons of ``latentfuzz study --strategies``
        and ``diff-study``): that evaluation budget, and the fewest generations whose
        budget reaches it (the last one is cut short to it)."""
        params = cls.Params(**raw)

        def cost(g: int) -> int:
            return cls.budget(params.model_copy(update={"generations": g}))

        # Every generation evaluates something, so `evaluations` generations always reach it.
        lo, hi = 1, max(1, evaluations)
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if cost(mid) >= evaluations else (mid + 1, hi)
        return {**raw, "generations": lo, "evaluations": evaluations}

    def evaluation_budget(self) -> int:
        """The most evaluations one seed can cost in this campaign."""
        return self.capped(type(self).budget(self.params))

    def capped(self, evaluations: int) -> int:
        """`evaluations` (a generation budget's cost) within the evaluation budget."""
        n = self.params.evaluations
        return evaluations if n is None else min(evaluations, n)

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


def elitist_budget(population: int, elites: int, generations: int) -> int:
    """Evaluations per seed of an elitist GA: P + (P - E) x (G - 1)."""
    return population + (population - elites) * (generations - 1)


class PopulationStrategy(Strategy):
    """A strategy whose state is a population of latents with a leading seed dimension:
    ``pop`` (S, P, D), ``scores`` (S, P) NaN until evaluated, ``logits`` (S, P, K) or None
    before the first tell. Subclasses list every other per-seed tensor in ``per_seed`` so
    that ``keep`` drops finished seeds from all of them."""

    per_seed: ClassVar[tuple[str, ...]] = ("seed", "pop", "scores", "logits")
    #: The tensors of ``per_seed`` with a population dimension (dim 1, one entry per
    #: slot): the generation cut short by the evaluation budget drops the slots it does
    #: not ask from all of them.
    per_individual: ClassVar[tuple[str, ...]] = ("pop", "scores", "logits")
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
        self.fit_budget()
        cand = self.pop[:, self.slots]
        return self.slots, cand.reshape(*cand.shape[:2], *self.space.latent_shape)

    def fit_budget(self) -> None:
        """Where the evaluation budget leaves fewer evaluations than slots to ask, keep the
        first ones it leaves and drop the others from the population (BUDGET_RULE): they
        are never scored, and the budget's stop rule ends the search after this
        generation. Everything drawn for them was drawn as in a search without the
        budget, so the generations before are the same."""
        left = self.remaining()
        if left is None or left >= len(self.slots):
            return
        keep = torch.ones(self.pop.shape[1], dtype=torch.bool)
        keep[self.slots[max(0, left) :]] = False
        for name in self.per_individual:
            if (value := getattr(self, name, None)) is not None:
                setattr(self, name, value[:, keep])
        # The kept slots' positions in the shortened population.
        self.slots = (torch.cumsum(keep, 0) - 1)[self.slots[: max(0, left)]]

    def tell(self, slots: torch.Tensor, scores: torch.Tensor, logits: torch.Tensor) -> None:
        self.spent += len(slots)
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
        return (*self.per_seed, "slots", "spent", *self.state_fields)

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
