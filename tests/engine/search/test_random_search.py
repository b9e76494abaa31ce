"""The random baseline: fresh draws around the seed every generation, no selection."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.operators import draw
from engine.search.strategies.random_search import RandomParams, RandomSearch

SPACE = SearchSpace((6,), -5.0, 5.0)  # range r = 10


def rng(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_registered():
    assert STRATEGIES.get("random") is RandomSearch


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"perturbation": "custom"}, "perturbation='custom' needs step"),
        ({"perturbation": "high", "step": 0.1}, "use perturbation='custom'"),
        ({"perturbation": "medium"}, "low"),
        ({"population": 0}, "greater than or equal to 1"),
    ],
)
def test_invalid_params_are_rejected(kw, match):
    with pytest.raises(ValidationError, match=match):
        RandomParams(**kw)


def test_presets_are_the_gas():
    for preset, frac in (("low", 1e-4), ("high", 1e-3), ("strong", 1e-2)):
        s = RandomSearch(RandomParams(perturbation=preset), SPACE)
        assert s.base_step == pytest.approx(10 * frac)


def test_draw_is_seed_plus_step_times_standard_normal():
    seed = torch.tensor([[1.0, 2.0, 3.0]])
    z = draw(seed, 20_000, 0.5, rng())
    assert z.shape == (1, 20_000, 3)
    noise = (z - seed[:, None]) / 0.5
    assert noise.mean().abs() < 0.02 and (noise.std() - 1).abs() < 0.02


def test_every_generation_is_fresh_whatever_the_scores():
    """No selection: the next population does not depend on the scores told."""

    def next_pop(scores: torch.Tensor) -> torch.Tensor:
        s = RandomSearch(RandomParams(population=4, perturbation="custom", step=0.1), SPACE)
        g = rng(3)
        s.start(torch.zeros(2, 6), g)
        first = s.pop.clone()
        s.tell(torch.arange(4), scores, torch.randn(2, 4, 10))
        s.advance(g)
        assert not torch.equal(s.pop, first)
        slots, cand = s.ask()
        assert slots.tolist() == [0, 1, 2, 3] and cand.shape == (2, 4, 6)
        return s.pop

    assert torch.equal(next_pop(torch.zeros(2, 4)), next_pop(torch.randn(2, 4)))


def test_candidates_are_clamped_and_keep_drops_seeds():
    s = RandomSearch(RandomParams(population=3, perturbation="custom", step=100.0), SPACE)
    s.start(torch.zeros(3, 6), rng())
    assert s.pop.min() >= -5 and s.pop.max() <= 5
    s.tell(torch.arange(3), torch.zeros(3, 3), torch.zeros(3, 3, 10))
    s.keep(torch.tensor([True, False, True]))
    pop, scores, logits = s.population()
    assert pop.shape[0] == scores.shape[0] == logits.shape[0] == s.state().step.shape[0] == 2
