"""Stop rules as small composable objects, as pymoo's Termination.

A strategy builds its rule from its Params (``Strategy.termination``); the search loop
asks it after every generation which seeds stop, and resume asks whether a run can be
replayed. Rules combine with ``|``: a seed stops when any rule says so.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Status:
    """What a stop rule may read once a generation has been told, per active seed."""

    generation: int  # 1-based, the generation just evaluated
    failed: torch.Tensor  # (S,) bool: some individual of the population fails
    step: torch.Tensor  # (S,) the strategy's recorded step (SearchState.step)
    #: (S,) evaluations each seed has cost so far; None where the caller does not count
    #: them (a rule that needs them says so).
    evaluations: torch.Tensor | None = None


class Termination(ABC):
    """A stop rule: which seeds stop after the generation just told."""

    @abstractmethod
    def stops(self, status: Status) -> torch.Tensor:
        """(S,) bool: the seeds this rule stops now."""

    @property
    def max_generations(self) -> int | None:
        """The most generations this rule lets a search run; None: no such bound."""
        return None

    def unreplayable(self) -> str | None:
        """Why a run under this rule cannot be replayed to the same state (resume), as a
        phrase ('a wall-clock budget (seconds=60)'), or None when it can."""
        return None

    def state_dict(self) -> dict[str, object]:
        """What a checkpoint keeps of this rule: nothing for the rules here, which read
        only the Status; a rule that counts something between generations returns it."""
        return {}

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Take up a state_dict (after the rule was made as the search started)."""
        return None

    def __or__(self, other: Termination) -> Termination:
        return AnyOf(self, other)


class AnyOf(Termination):
    """Stops a seed when any of its rules does."""

    def __init__(self, *rules: Termination) -> None:
        flat: list[Termination] = []
        for r in rules:
            flat.extend(r.rules if isinstance(r, AnyOf) else [r])
        self.rules = tuple(flat)

    def stops(self, status: Status) -> torch.Tensor:
        out = self.rules[0].stops(status)
        for r in self.rules[1:]:
            out = out | r.stops(status)
        return out

    @property
    def max_generations(self) -> int | None:
        bounds = [g for r in self.rules if (g := r.max_generations) is not None]
        return min(bounds) if bounds else None

    def unreplayable(self) -> str | None:
        return next((why for r in self.rules if (why := r.unreplayable()) is not None), None)

    def state_dict(self) -> dict[str, object]:
        return {"rules": [r.state_dict() for r in self.rules]}

    def load_state_dict(self, state: dict[str, object]) -> None:
        rules = state["rules"]
        if len(rules) != len(self.rules):
            raise ValueError(f"the termination state has {len(rules)} rules, not {len(self.rules)}")
        for r, s in zip(self.rules, rules, strict=True):
            r.load_state_dict(s)


class Generations(Termination):
    """The generation budget: every seed stops after generation ``n``."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def stops(self, status: Status) -> torch.Tensor:
        return torch.full(status.failed.shape, status.generation >= self.n)

    @property
    def max_generations(self) -> int:
        return self.n


class Evaluations(Termination):
    """The evaluation budget: a seed stops once it has cost ``n`` evaluations. The strategy
    asks no more than the budget leaves (``Strategy.remaining``), so the generation that
    reaches it is cut short and every seed that searches to the end costs exactly ``n``."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def stops(self, status: Status) -> torch.Tensor:
        if status.evaluations is None:
            raise TypeError("the evaluation budget reads Status.evaluations; pass the counts")
        return status.evaluations >= self.n


class AtFailure(Termination):
    """A seed stops at its first failure."""

    def stops(self, status: Status) -> torch.Tensor:
        return status.failed


class StepFloor(Termination):
    """A seed stops when its step falls below ``min_step`` (SINVAD)."""

    def __init__(self, min_step: float) -> None:
        self.min_step = min_step

    def stops(self, status: Status) -> torch.Tensor:
        return status.step < self.min_step


class WallClock(Termination):
    """Every seed stops once ``seconds`` of wall-clock time have passed since the rule
    was made (the search's start). How far a run gets depends on the machine."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def stops(self, status: Status) -> torch.Tensor:
        over = time.monotonic() - self.started >= self.seconds
        return torch.full(status.failed.shape, over)

    def unreplayable(self) -> str:
        return f"a wall-clock budget (seconds={self.seconds})"
