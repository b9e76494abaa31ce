"""The GA's own behaviour: validation, survivors, the defects of GIFTbench it fixes, and
determinism. GIFTbench's rules themselves are tested one by one in test_fidelity.py."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.ga import GAParams, GeneticAlgorithm, update_step
from engine.search.strategies.operators import select_elite

SPACE = SearchSpace((6,), -5.0, 5.0)  # range r = 10


def ga(**kw) -> GeneticAlgorithm:
    return GeneticAlgorithm(GAParams(**kw), SPACE)


def rng(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_registered():
    assert STRATEGIES.get("ga") is GeneticAlgorithm


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"population": 10, "best_left": 10}, "best_left=10 must be smaller than population=10"),
        ({"population": 10, "best_left": 12}, "must be smaller"),
        ({"best_left": 1}, "greater than or equal to 2"),
        ({"perturbation": "custom"}, "needs step"),
        ({"perturbation": "high", "step": 0.1}, "use perturbation='custom'"),
        ({"perturbation": "medium"}, "low"),
        ({"generations": 0}, "greater than or equal to 1"),
    ],
)
def test_invalid_params_are_rejected(kw, match):
    with pytest.raises(ValidationError, match=match):
        GAParams(**kw)


def test_elitism_keeps_the_best_left_lowest_with_their_scores():
    scores = torch.tensor([[3.0, -1.0, 2.0, 0.5, 9.0]])
    assert select_elite(scores, 3).tolist() == [[1, 3, 2]]

    s = ga(population=5, best_left=2, perturbation="custom", step=0.01)
    s.start(torch.zeros(1, 6), rng())
    before = s.pop.clone()
    s.tell(torch.arange(5), scores, torch.randn(1, 5, 10))
    s.advance(rng())
    assert torch.equal(s.pop[0, 0], before[0, 1]) and torch.equal(s.pop[0, 1], before[0, 3])
    assert s.scores[0, :2].tolist() == [-1.0, 0.5]
    assert torch.isnan(s.scores[0, 2:]).all()
    # Survivors are not evaluated again: only the children are asked.
    assert s.ask()[0].tolist() == [2, 3, 4]


def test_crossover_works_for_latents_with_a_singleton_dimension():
    # GIFTbench cut a GAN latent of shape (1, 100) along its size-1 axis: a no-op.
    space = SearchSpace((1, 100), -3.0, 3.0)
    s = GeneticAlgorithm(
        GAParams(population=4, best_left=2, perturbation="custom", step=1e-9, init_step=1.0), space
    )
    s.start(torch.zeros(1, 1, 100), rng())
    parents = s.pop.clone()
    s.tell(torch.arange(4), torch.tensor([[0.0, 1.0, 2.0, 3.0]]), torch.zeros(1, 4, 10))
    s.advance(rng(5))
    child = s.pop[0, 2]
    from_p0 = torch.isclose(child, parents[0, 0], atol=1e-6)
    from_p1 = torch.isclose(child, parents[0, 1], atol=1e-6)
    assert from_p0.any() and from_p1.any()  # genes from both parents
    assert s.ask()[1].shape == (1, 2, 1, 100)  # candidates keep the latent shape


def test_step_doubles_on_stagnation_resets_on_change_and_is_capped():
    step = torch.tensor([0.1, 0.1, 0.4])
    best = torch.tensor([1.0, 0.5, 2.0])
    prev = torch.tensor([1.0, 0.7, 2.0])
    out = update_step(step, base=0.1, cap=0.5, best=best, prev_best=prev)
    assert out.tolist() == pytest.approx([0.2, 0.1, 0.5])


def test_custom_step_is_used_from_the_first_generation():
    # GIFTbench overwrote the chosen step before first use; a custom step resets to itself
    # (reset_to="step"), so the first children are mutated with exactly that step.
    s = ga(population=4, best_left=2, perturbation="custom", step=0.25)
    s.start(torch.zeros(2, 6), rng())
    s.tell(torch.arange(4), torch.rand(2, 4), torch.zeros(2, 4, 10))
    s.advance(rng())
    assert s.state().step.tolist() == [0.25, 0.25]


def test_stagnation_over_generations_doubles_until_the_cap():
    s = ga(population=4, best_left=2, perturbation="custom", step=1.0, max_step=3.0)
    s.start(torch.zeros(1, 6), rng())
    s.tell(torch.arange(4), torch.tensor([[0.0, 1.0, 2.0, 3.0]]), torch.zeros(1, 4, 10))
    steps = []
    for _ in range(4):
        s.advance(rng())
        steps.append(s.state().step.item())
        slots, _ = s.ask()
        s.tell(slots, torch.full((1, len(slots)), 5.0), torch.zeros(1, len(slots), 10))
    assert steps == [1.0, 2.0, 3.0, 3.0]  # best stays 0.0: doubling, capped at max_step


def test_keep_drops_finished_seeds_from_every_tensor():
    s = ga(population=4, best_left=2)
    s.start(torch.zeros(3, 6), rng())
    s.tell(torch.arange(4), torch.rand(3, 4), torch.zeros(3, 4, 10))
    s.keep(torch.tensor([True, False, True]))
    s.advance(rng())
    assert s.pop.shape == (2, 4, 6) and s.ask()[1].shape == (2, 2, 6)


def test_same_seed_same_search():
    def trace(seed: int) -> torch.Tensor:
        s = ga(population=8, best_left=3)
        g = rng(seed)
        s.start(torch.zeros(2, 6), g)
        for _ in range(5):
            slots, cand = s.ask()
            s.tell(slots, cand.sum(-1), torch.zeros(2, len(slots), 10))
            s.advance(g)
        return s.pop

    assert torch.equal(trace(3), trace(3))
    assert not torch.equal(trace(3), trace(4))
