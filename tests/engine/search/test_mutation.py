"""DeepHunter-style mutation: transforms within their bounds, one affine transform per
image history, the coverage-free queue, the budget."""

from __future__ import annotations

import math

import pytest
import torch

from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.mutation import (
    AFFINE,
    NAMES,
    TRANSFORMS,
    UNCHANGED,
    bound,
    choose_transforms,
    transform,
)

SHAPE = (1, 12, 12)
D = math.prod(SHAPE)
SPACE = SearchSpace(SHAPE, 0.0, 1.0, 10)


def blob(n: int) -> torch.Tensor:
    """n images with a bright square off-centre, (n, 1, 12, 12)."""
    x = torch.zeros((n, *SHAPE))
    x[:, :, 3:7, 2:8] = torch.linspace(0.4, 1.0, n)[:, None, None, None]
    return x


def make(**raw):
    cls = STRATEGIES.get("mutation")
    return cls(cls.Params(**raw), SPACE)


def test_images_with_an_affine_transform_get_pixel_transforms_only():
    rng = torch.Generator().manual_seed(0)
    done = torch.rand((50, 40), generator=rng) < 0.5
    op = choose_transforms(done, rng)
    assert (op[done] >= AFFINE).all()
    assert set(op[~done].unique().tolist()) == set(range(len(NAMES)))  # all eight drawn


@pytest.mark.parametrize("k", range(len(NAMES)))
def test_each_transform_keeps_images_in_range_and_its_extremes_bounded(k: int):
    x = blob(4)
    op = torch.full((4,), k)
    u = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5], [0.0, 1.0]])
    y = transform(x, op, u, torch.Generator().manual_seed(0))
    assert y.shape == x.shape and y.min() >= 0 and y.max() <= 1
    name = NAMES[k]
    lo, hi = TRANSFORMS[name]
    if name == "brightness":
        assert ((y - x).abs() <= max(abs(lo), abs(hi)) + 1e-6).all()
    if name == "contrast":
        assert ((y - x).abs() <= (hi - 1) * x + 1e-6).all()
    if name == "scale":  # the middle of its range is 1: that image is unchanged
        assert 0.5 * (lo + hi) == pytest.approx(1.0)
        assert torch.allclose(y[2], x[2], atol=1e-5)
    if k < AFFINE:  # they move values by interpolation, never above the brightest
        assert y.amax((1, 2, 3)).le(x.amax((1, 2, 3)) + 1e-5).all()


def test_a_translation_moves_the_image_by_the_drawn_pixels():
    x = blob(1)
    # u = (1, 0.5): +0.1 of the side horizontally (1.2 pixels of 12), nothing vertically.
    y = transform(x, torch.tensor([NAMES.index("translation")]), torch.tensor([[1.0, 0.5]]), None)
    # grid_sample reads each output pixel 1.2 pixels to its right: the square moves left,
    # into columns 0 and 1, and its rows keep their mass.
    cols = y[0, 0].sum(0)
    assert cols[:2].sum() > 0 and torch.allclose(y[0, 0].sum(1), x[0, 0].sum(1), atol=1e-4)


def test_the_bound_projects_a_mutant_that_changes_too_much():
    ref = torch.full((2, 100), 0.5)
    few = ref.clone()
    few[0, :1] = 1.0  # 1 value of 100 changed: under alpha = 0.02, any amount is kept
    many = ref.clone()
    many[1] = 0.9  # every value moved by 0.4: clipped to beta = 0.2
    out = bound(torch.stack([few[0], many[1]]), ref, alpha=0.02, beta=0.2)
    assert torch.equal(out[0], few[0])
    assert torch.allclose(out[1], torch.full((100,), 0.7))


def test_every_mutant_stays_within_deephunters_bound_over_a_search():
    seeds = blob(3)
    m = make(population=16, queue=10, alpha=0.02, beta=0.1)
    rng = torch.Generator().manual_seed(3)
    m.start(seeds, rng)
    for g in range(12):
        x, ref = m.pop, m.m_ref
        assert x.min() >= 0 and x.max() <= 1
        diff = (x - ref).abs()
        few = (diff > UNCHANGED).sum(2) < 0.02 * D
        assert (few | (diff.amax(2) <= 0.1 + 1e-6)).all()
        # Scores falling with each generation keep a share of the mutants.
        scores = torch.rand(m.pop.shape[:2], generator=rng) - g
        m.tell(m.slots, scores, torch.zeros((*scores.shape, 10)))
        m.advance(rng)
        assert m.filled.any(1).all() and (m.filled.sum(1) <= 10).all()


def test_the_queue_keeps_mutants_that_beat_their_parent_and_drops_barren_parents():
    m = make(population=4, queue=5)
    m.start(blob(1), torch.Generator().manual_seed(0))
    # The seed's score is unknown (+inf): every first mutant joins.
    m.tell(m.slots, torch.tensor([[4.0, 3.0, 2.0, 1.0]]), torch.zeros((1, 4, 10)))
    m.requeue()
    assert m.filled.sum() == 5  # the seed and its four mutants
    assert m.q_score[0].tolist()[:4] == [1.0, 2.0, 3.0, 4.0]
    # Next: parents are queue slots 0 (score 1) and 1 (score 2); only slot 1's child beats it.
    m.parent = torch.tensor([[0, 0, 1, 1]])
    m.pop = torch.rand((1, 4, D))
    m.m_ref, m.m_affine = m.pop.clone(), torch.zeros((1, 4), dtype=torch.bool)
    m.tell(m.slots, torch.tensor([[1.5, 1.2, 1.9, 5.0]]), torch.zeros((1, 4, 10)))
    m.requeue()
    scores = m.q_score[0][m.filled[0]].tolist()
    # Slot 0 (score 1) had no better child and leaves; slot 1 (2) stays with its child
    # (1.9); the unpicked entries (3, 4, and the seed at +inf) stay.
    assert scores == pytest.approx([1.9, 2.0, 3.0, 4.0, float("inf")])


def test_the_budget_is_mutants_times_generations():
    cls = STRATEGIES.get("mutation")
    assert cls.budget(cls.Params(population=25, generations=150)) == 3750
    p = cls.Params(**cls.with_budget(3760, {}))
    # The fewest generations that reach the budget, the last cut short to it.
    assert p.evaluations == 3760 and p.generations == 151
    assert cls.budget(p) - p.population < 3760 <= cls.budget(p)


def test_a_checkpointed_search_goes_on_as_the_original():
    a = make(population=6, queue=4)
    rng = torch.Generator().manual_seed(2)
    a.start(blob(2), rng)
    a.tell(a.slots, torch.rand((2, 6), generator=rng), torch.zeros((2, 6, 10)))
    state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in a.state_dict().items()}
    b = make(population=6, queue=4)
    b.load_state_dict(state)
    ra, rb = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    a.advance(ra)
    b.advance(rb)
    assert torch.equal(a.ask()[1], b.ask()[1]) and torch.equal(a.q_score, b.q_score)
    a.keep(torch.tensor([False, True]))
    assert a.queue.shape[0] == a.pop.shape[0] == a.filled.shape[0] == 1
