"""FGSM and PGD in pixel space: the sign step against a hand computation, the epsilon
ball, the counting rule (one evaluation per iterate) and the budget."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from engine.classifiers import ModuleClassifier
from engine.search.fitness import Margin, Targeted
from engine.search.strategies import STRATEGIES, SearchSpace

SHAPE = (1, 2, 2)
SPACE = SearchSpace(SHAPE, 0.0, 1.0, 3)
#: A linear classifier over 4 pixels, 3 classes: logits = W x.
W = torch.tensor(
    [
        [1.0, -2.0, 0.5, 0.0],
        [-1.0, 1.0, 0.5, 3.0],
        [0.0, 0.0, -4.0, 1.0],
    ]
)


class Linear(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ W.T


def resolved(fitness=None, target: int | None = None) -> SimpleNamespace:
    clf = ModuleClassifier(Linear(), SHAPE, 3, name="linear")
    return SimpleNamespace(
        classifier=clf,
        classifier_b=None,
        fitness=fitness or Margin(),
        config=SimpleNamespace(batch_size=None, target=target, escape_per_pair=None),
    )


def run_generation(strategy) -> None:
    """What the loop does with one generation: evaluate what is asked, tell the scores."""
    slots, cand = strategy.ask()
    s, m = cand.shape[:2]
    logits = Linear()(cand.reshape(s * m, *SHAPE)).view(s, m, -1)
    scores = Margin()(
        logits.flatten(0, 1), SimpleNamespace(expected=strategy.labels.repeat_interleave(m))
    ).view(s, m)
    strategy.tell(slots, scores, logits)


def make(name: str, **raw):
    cls = STRATEGIES.get(name)
    return cls(cls.Params(**raw), SPACE)


def test_fgsm_takes_the_sign_step_of_the_margin_by_hand():
    seed = torch.tensor([[0.5, 0.5, 0.5, 0.5], [0.95, 0.95, 0.5, 0.5]])
    labels = torch.tensor([0, 1])
    fgsm = make("fgsm", epsilon=0.1)
    fgsm.attach(resolved(), labels)
    fgsm.start(seed.view(2, *SHAPE), torch.Generator().manual_seed(0))
    _, cand = fgsm.ask()
    assert torch.equal(cand.reshape(2, 1, 4), seed[:, None])  # the seed first
    run_generation(fgsm)
    # The loop runs strategies in inference mode: the gradient must work there too.
    with torch.inference_mode():
        fgsm.advance(torch.Generator().manual_seed(0))
    # Seed 0, class 0: logits W x = [-0.25, 1.75, -1.5]; the runner-up is class 1, so the
    # margin's gradient is W[0] - W[1] = [2, -3, 0, -3], its sign [1, -1, 0, -1], and the
    # step that lowers the margin is x - 0.1 x sign.
    expect0 = torch.tensor([0.4, 0.6, 0.5, 0.6])
    # Seed 1, class 1: logits [-0.7, 1.75, -1.5]; the runner-up is class 0, gradient
    # W[1] - W[0] = [-2, 3, 0, 3], sign [-1, 1, 0, 1]; pixel 0 steps to 1.05, clamped to 1.
    expect1 = torch.tensor([1.0, 0.85, 0.5, 0.4])
    _, cand = fgsm.ask()
    assert torch.allclose(cand.reshape(2, 4), torch.stack([expect0, expect1]))


def test_fgsm_with_several_epsilons_walks_the_same_sign_direction():
    seed = torch.full((1, 4), 0.5)
    fgsm = make("fgsm", epsilon=0.2, epsilons=4)
    fgsm.attach(resolved(), torch.tensor([0]))
    fgsm.start(seed.view(1, *SHAPE), torch.Generator())
    run_generation(fgsm)
    fgsm.advance(torch.Generator())
    _, cand = fgsm.ask()
    sign = torch.tensor([1.0, -1.0, 0.0, -1.0])
    k = torch.tensor([0.05, 0.1, 0.15, 0.2])[:, None]
    assert torch.allclose(cand.reshape(4, 4), 0.5 - k * sign)


def test_a_targeted_objective_steps_towards_the_target():
    seed = torch.full((1, 4), 0.5)
    fgsm = make("fgsm", epsilon=0.1)
    fgsm.attach(resolved(Targeted(), target=2), torch.tensor([0]))
    fgsm.start(seed.view(1, *SHAPE), torch.Generator())
    run_generation(fgsm)
    fgsm.advance(torch.Generator())
    _, cand = fgsm.ask()
    # Targeted fitness: max over others of logit - logit[2]; the best other is class 1,
    # gradient W[1] - W[2] = [-1, 1, 4.5, 2], sign [-1, 1, 1, 1].
    assert torch.allclose(cand.reshape(4), torch.tensor([0.6, 0.4, 0.4, 0.4]))


def test_pgd_stays_in_the_epsilon_ball_and_in_range():
    torch.manual_seed(0)
    seed = torch.rand(3, 4)
    pgd = make("pgd", epsilon=0.05, steps=6, restarts=4)
    pgd.attach(resolved(), torch.tensor([0, 1, 2]))
    rng = torch.Generator().manual_seed(1)
    pgd.start(seed.view(3, *SHAPE), rng)
    for _ in range(pgd.params.steps):
        run_generation(pgd)
        pgd.advance(rng)
        _, cand = pgd.ask()
        x = cand.reshape(3, 4, 4)
        assert ((x - seed[:, None]).abs() <= 0.05 + 1e-6).all()
        assert x.min() >= 0 and x.max() <= 1


def test_pgd_without_random_start_is_iterated_fgsm():
    seed = torch.full((1, 4), 0.5)
    pgd = make("pgd", epsilon=0.1, steps=1, step_size=0.1, random_start=False)
    pgd.attach(resolved(), torch.tensor([0]))
    pgd.start(seed.view(1, *SHAPE), torch.Generator())
    run_generation(pgd)
    pgd.advance(torch.Generator())
    assert torch.allclose(pgd.ask()[1].reshape(4), torch.tensor([0.4, 0.6, 0.5, 0.6]))


def test_pgd_refuses_restarts_that_would_repeat_one_run():
    with pytest.raises(ValueError, match="restarts=3 without random_start"):
        STRATEGIES.get("pgd").Params(restarts=3, random_start=False)


@pytest.mark.parametrize(
    "name, raw, budget",
    [
        ("fgsm", {}, 2),
        ("fgsm", {"epsilons": 9}, 10),
        ("pgd", {"steps": 40}, 41),
        ("pgd", {"steps": 9, "restarts": 3}, 30),
    ],
)
def test_the_budget_counts_one_evaluation_per_iterate(name: str, raw: dict, budget: int):
    cls = STRATEGIES.get(name)
    assert cls.budget(cls.Params(**raw)) == budget


@pytest.mark.parametrize("name", ["fgsm", "pgd"])
def test_with_budget_sets_exactly_the_budget(name: str):
    """The fewest images (FGSM) or restarts (PGD) that reach the budget, and the budget
    itself, which cuts the last generation short (BUDGET_RULE)."""
    cls = STRATEGIES.get(name)
    for evaluations in (41, 55, 3760):
        p = cls.Params(**cls.with_budget(evaluations, {}))
        assert p.evaluations == evaluations
        assert 0 <= cls.budget(p) - evaluations < (p.generations if name == "pgd" else 1)


def test_a_checkpointed_pgd_goes_on_as_the_original():
    seed = torch.rand(2, 4, generator=torch.Generator().manual_seed(0))
    a = make("pgd", epsilon=0.1, steps=4, restarts=3)
    a.attach(resolved(target=None), torch.tensor([0, 1]))
    a.start(seed.view(2, *SHAPE), torch.Generator().manual_seed(1))
    run_generation(a)
    b = make("pgd", epsilon=0.1, steps=4, restarts=3)
    b.attach(resolved(target=None), torch.tensor([1, 1]))  # the state's labels win
    b.load_state_dict({k: v for k, v in a.state_dict().items()})
    a.advance(torch.Generator())
    b.advance(torch.Generator())
    assert torch.equal(a.ask()[1], b.ask()[1])
    a.keep(torch.tensor([True, False]))
    assert a.pop.shape[0] == a.labels.shape[0] == 1
