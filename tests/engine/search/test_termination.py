"""Stop rules as objects, and the rules each strategy builds from its Params."""

from __future__ import annotations

import pytest
import torch

from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.termination import (
    AnyOf,
    AtFailure,
    Generations,
    Status,
    StepFloor,
    WallClock,
)

SPACE = SearchSpace((6,), -5.0, 5.0)


def status(generation: int = 1, failed=(False, True), step=(0.5, 1e-4)) -> Status:
    return Status(generation, torch.tensor(failed), torch.tensor(step))


def test_each_rule_stops_the_seeds_it_names():
    assert Generations(3).stops(status(2)).tolist() == [False, False]
    assert Generations(3).stops(status(3)).tolist() == [True, True]
    assert AtFailure().stops(status()).tolist() == [False, True]
    assert StepFloor(1e-3).stops(status()).tolist() == [False, True]
    assert WallClock(3600).stops(status()).tolist() == [False, False]
    assert WallClock(1e-9).stops(status()).tolist() == [True, True]


def test_rules_compose_with_or_and_keep_the_tightest_generation_bound():
    rule = Generations(10) | AtFailure() | StepFloor(1e-5) | Generations(4)
    assert isinstance(rule, AnyOf) and len(rule.rules) == 4  # flat, not nested
    assert rule.max_generations == 4
    assert rule.stops(status(1, failed=(False, False), step=(1.0, 1e-6))).tolist() == [False, True]
    assert AnyOf(AtFailure()).max_generations is None


def test_only_a_wall_clock_budget_makes_a_run_unreplayable():
    assert (Generations(5) | AtFailure()).unreplayable() is None
    why = (Generations(5) | WallClock(60.0)).unreplayable()
    assert why == "a wall-clock budget (seconds=60.0)"


def make(name: str, **raw):
    cls = STRATEGIES.get(name)
    return cls(cls.Params(**raw), SPACE)


def test_the_generation_budget_and_stop_at_failure_come_from_params():
    ga = make("ga", generations=7)
    assert ga.termination().max_generations == 7
    assert ga.termination().stops(status(1)).tolist() == [False, True]
    # A fitness that refines failures keeps a failed seed searching.
    assert ga.termination(refines_failures=True).stops(status(1)).tolist() == [False, False]
    off = make("ga", generations=7, stop_at_failure=False)
    assert off.termination().stops(status(1)).tolist() == [False, False]
    assert make("interpolate", lambda_steps=6).termination().max_generations == 6


def test_sinvad_adds_its_step_floor_and_nsga2_its_wall_clock():
    sinvad = make("sinvad", min_step=1e-3)
    calm = status(1, failed=(False, False))
    assert sinvad.termination(refines_failures=True).stops(calm).tolist() == [False, True]
    assert make("nsga2").termination().unreplayable() is None
    timed = make("nsga2", seconds=30)
    assert timed.termination().unreplayable() == "a wall-clock budget (seconds=30.0)"
    assert timed.termination().max_generations == 30  # generations still bound it


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_every_strategy_bounds_its_generations(name: str):
    cls = STRATEGIES.get(name)
    assert cls(cls.Params(), SPACE).termination().max_generations >= 1
