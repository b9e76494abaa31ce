"""The evaluation budget, kept by the strategy: the generation that reaches it is cut
short, so a seed that searches to the end costs exactly the budget, whatever the
strategy breeds per generation; the generations before are drawn as without it, and a
state saved between two generations goes on to the same search."""

from __future__ import annotations

import pytest
import torch

from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.base import BUDGET_RULE, NO_BUDGET_RULE
from engine.search.termination import Evaluations, Status

SPACE = SearchSpace((4,), -3.0, 3.0, num_classes=3)
#: Small populations, so that a budget of a few generations cuts the last one short.
SMALL = {
    "ga": {"population": 6, "elites": 2},
    "sinvad": {"population": 7, "elites": 3},
    "random": {"population": 5},
}


def make(name: str, raw: dict):
    cls = STRATEGIES.get(name)
    return cls(cls.Params(**raw), SPACE)


def drive(strategy, seeds: int = 3, rng_seed: int = 0):
    """Run a search as the loop does, with a made-up objective (distance to a point), to
    its end. Returns (evaluations per seed of each generation, populations after each
    tell, generations run)."""
    rng = torch.Generator().manual_seed(rng_seed)
    strategy.start(torch.zeros(seeds, 4), rng)
    rule = strategy.termination()
    asked, pops, spent = [], [], torch.zeros(seeds, dtype=torch.long)
    g = 0
    while True:
        g += 1
        slots, cand = strategy.ask()
        scores = (cand.flatten(2) - 1.0).norm(dim=2)
        logits = torch.stack([-scores, scores, torch.zeros_like(scores)], dim=2)
        strategy.tell(slots, scores, logits)
        spent += len(slots)
        asked.append(len(slots))
        pop, sc, lg = strategy.population()
        assert not sc.isnan().any() and not lg.isnan().any(), "an unscored slot was kept"
        pops.append(pop.clone())
        step = strategy.state().step
        done = rule.stops(Status(g, torch.zeros(seeds, dtype=torch.bool), step, spent))
        if done.all() or g >= rule.max_generations:
            return asked, pops, g
        strategy.advance(rng)


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("budget", [4, 23, 40])
def test_a_seed_that_searches_to_the_end_costs_exactly_the_budget(name: str, budget: int):
    cls = STRATEGIES.get(name)
    raw = cls.with_budget(budget, {**SMALL[name], "stop_at_failure": False})
    s = make(name, raw)
    asked, _, _ = drive(s)
    assert sum(asked) == s.spent == budget == s.evaluation_budget()
    full = [len(s.slots)] if len(asked) == 1 else asked[1:-1]
    assert asked[-1] <= max(full), "only the last generation is cut short"
    assert s.budget_rule() == BUDGET_RULE


@pytest.mark.parametrize("name", sorted(SMALL))
def test_the_generations_before_the_cut_are_drawn_as_without_a_budget(name: str):
    cls = STRATEGIES.get(name)
    raw = cls.with_budget(21, {**SMALL[name], "stop_at_failure": False})
    asked, cut, g = drive(make(name, raw))
    free = {k: v for k, v in raw.items() if k != "evaluations"}
    assert make(name, free).budget_rule() == NO_BUDGET_RULE
    _, whole, _ = drive(make(name, free))
    assert len(whole) == g == raw["generations"]
    for a, b in zip(cut[:-1], whole[:-1], strict=True):
        assert torch.equal(a, b)
    # The last population is the whole one less the children it did not ask.
    n = whole[-1].shape[1] - (cut[-1].shape[1])
    assert n > 0 and torch.equal(cut[-1], whole[-1][:, : cut[-1].shape[1]])


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_saved_state_goes_on_to_the_same_cut_search(name: str):
    cls = STRATEGIES.get(name)
    raw = cls.with_budget(21, {**SMALL[name], "stop_at_failure": False})
    _, straight, _ = drive(make(name, raw), rng_seed=5)

    first = make(name, raw)
    rng = torch.Generator().manual_seed(5)
    first.start(torch.zeros(3, 4), rng)
    # Two generations, then saved between them as a checkpoint is.
    for _ in range(2):
        slots, cand = first.ask()
        scores = (cand.flatten(2) - 1.0).norm(dim=2)
        first.tell(slots, scores, torch.stack([-scores, scores, 0 * scores], 2))
        first.advance(rng)
    saved, rng_state = first.state_dict(), rng.get_state()
    again = make(name, raw)
    again.load_state_dict({k: v.clone() if torch.is_tensor(v) else v for k, v in saved.items()})
    assert again.spent == first.spent > 0

    def go_on(s):
        r = torch.Generator()
        r.set_state(rng_state)
        rule, pops, g, spent = s.termination(), [], 2, torch.full((3,), s.spent)
        while True:
            g += 1
            slots, cand = s.ask()
            scores = (cand.flatten(2) - 1.0).norm(dim=2)
            s.tell(slots, scores, torch.stack([-scores, scores, 0 * scores], 2))
            spent += len(slots)
            pops.append(s.population()[0].clone())
            done = rule.stops(Status(g, torch.zeros(3, dtype=torch.bool), s.state().step, spent))
            if done.all() or g >= rule.max_generations:
                return pops, s.spent
            s.advance(r)

    resumed, spent = go_on(again)
    assert spent == 21
    for a, b in zip(resumed, straight[2:], strict=True):
        assert torch.equal(a, b)


def test_a_state_saved_before_budgets_were_counted_is_replayed_not_guessed():
    s = make("ga", SMALL["ga"])
    s.start(torch.zeros(2, 4), torch.Generator().manual_seed(0))
    old = {k: v for k, v in s.state_dict().items() if k != "spent"}
    with pytest.raises(ValueError, match="lacks spent"):
        make("ga", SMALL["ga"]).load_state_dict(old)


def test_a_budget_below_the_first_population_cuts_the_first_generation():
    s = make("ga", {**SMALL["ga"], "evaluations": 4, "stop_at_failure": False})
    asked, pops, g = drive(s)
    assert asked == [4] and g == 1 and pops[0].shape[1] == 4


def test_nsga2_drops_the_unasked_slots_from_every_per_individual_tensor():
    cls = STRATEGIES.get("nsga2")
    s = cls(cls.Params(population=6, generations=3, evaluations=4), SPACE)
    s.start(torch.zeros(2, 4), torch.Generator().manual_seed(0))
    slots, cand = s.ask()
    assert slots.tolist() == [0, 1, 2, 3] and cand.shape[:2] == (2, 4)
    assert s.pop.shape[1] == s.scores.shape[1] == s.div.shape[1] == 4


def test_the_budget_rule_stops_seeds_at_their_count():
    rule = Evaluations(10)
    counts = torch.tensor([9, 10, 12])
    assert rule.stops(
        Status(1, torch.zeros(3, dtype=torch.bool), torch.ones(3), counts)
    ).tolist() == [
        False,
        True,
        True,
    ]
    with pytest.raises(TypeError, match="Status.evaluations"):
        rule.stops(Status(1, torch.zeros(3, dtype=torch.bool), torch.ones(3)))
    s = make("random", {"evaluations": 30})
    assert any(isinstance(r, Evaluations) for r in s.termination().rules)
    assert s.evaluation_budget() == 30 and make("random", {}).evaluation_budget() == 25 * 250
