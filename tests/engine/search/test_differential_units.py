"""Issue 14's building blocks, each alone: divergence, disagree, SBX, polynomial mutation,
archive deduplication, geometric diversity, diversity, SSIM to the nearest reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from skimage.metrics import structural_similarity

from engine.campaign.triggering import label_entropy, split
from engine.search.archive import Archive
from engine.search.diversity import (
    DiversityArchive,
    image_features,
    log_det_gram,
    representatives,
)
from engine.search.fitness import Context, Disagree, Divergence, divergence
from engine.search.strategies.nsga2 import rank_and_crowding
from engine.search.strategies.operators import polynomial_mutation, sbx
from engine.validators.nearest import NearestSSIM


def test_divergence_is_diffgans_distance_plus_one_when_labels_differ():
    a = torch.tensor([[5.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 3.0]])
    b = torch.tensor([[5.0, 0.0, 0.0], [0.0, 0.0, 2.0], [1.0, 1.2, 3.0]])
    pa, pb = torch.softmax(a, 1).numpy(), torch.softmax(b, 1).numpy()
    expected = np.linalg.norm(pa - pb, axis=1) + np.array([0.0, 1.0, 0.0])
    assert divergence(a, b).numpy() == pytest.approx(expected, abs=1e-6)
    ctx = Context(expected=torch.zeros(3, dtype=torch.long), logits_b=b)
    assert Divergence()(a, ctx).numpy() == pytest.approx(-expected, abs=1e-6)  # minimised
    assert Disagree()(a, ctx).tolist() == [False, True, False]
    # One-hot opposites: the largest divergence, sqrt(2) + 1.
    big = divergence(torch.tensor([[50.0, 0.0]]), torch.tensor([[0.0, 50.0]]))
    assert float(big) == pytest.approx(math.sqrt(2) + 1, abs=1e-6)


def test_objectives_that_compare_two_classifiers_say_so_without_a_second():
    with pytest.raises(ValueError, match="context.logits_b"):
        Divergence()(torch.zeros(2, 3), Context(expected=torch.zeros(2, dtype=torch.long)))


def _parents(n: int = 20000, d: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand((n, d), generator=g) * 2 - 1, torch.rand((n, d), generator=g) * 2 - 1, g


def test_sbx_keeps_bounds_and_the_parents_mean_and_spreads_by_eta():
    p1, p2, g = _parents()
    c1, c2 = sbx(p1, p2, -1.0, 1.0, 15.0, 1.0, g)
    assert c1.min() >= -1 and c1.max() <= 1 and c2.min() >= -1 and c2.max() <= 1
    # Bounded SBX is symmetric about the parents' midpoint except where it clamps.
    mid_err = ((c1 + c2) - (p1 + p2)).abs()
    assert float(mid_err.median()) < 1e-6
    changed = (c1 != p1).float().mean()
    assert 0.4 < float(changed) < 0.6  # each gene crosses with probability 0.5
    # A larger distribution index keeps children nearer their parents.
    spread = {}
    for eta in (2.0, 30.0):
        a, _ = sbx(p1, p2, -1.0, 1.0, eta, 1.0, torch.Generator().manual_seed(1))
        moved = a != p1
        near = torch.minimum((a - p1).abs(), (a - p2).abs())[moved]
        spread[eta] = float(near.mean())
    assert spread[30.0] < spread[2.0] / 2
    # Probability 0: children are the parents.
    c1, c2 = sbx(p1, p2, -1.0, 1.0, 15.0, 0.0, g)
    assert torch.equal(c1, p1) and torch.equal(c2, p2)


def test_polynomial_mutation_keeps_bounds_and_mutates_the_stated_share():
    g = torch.Generator().manual_seed(0)
    x = torch.rand((5000, 10), generator=g) * 8 - 4
    y = polynomial_mutation(x, -4.0, 4.0, 20.0, 0.1, g)
    assert y.min() >= -4 and y.max() <= 4
    share = float((y != x).float().mean())
    assert share == pytest.approx(0.1, abs=0.01)
    mid = torch.zeros(20000, 1)
    step = polynomial_mutation(mid, -4.0, 4.0, 20.0, 1.0, g) - mid
    assert abs(float(step.mean())) < 0.01  # unbiased at the centre of the range
    assert 0 < float(step.abs().mean()) < 0.5  # small moves at eta 20 (range 8)
    assert torch.equal(polynomial_mutation(x, -4.0, 4.0, 20.0, 0.0, g), x)
    edge = torch.full((1000, 1), 4.0)  # at the upper bound, moves only go down
    assert polynomial_mutation(edge, -4.0, 4.0, 20.0, 1.0, g).max() <= 4.0


def test_rank_and_crowding_come_from_pymoo_and_rank_fronts():
    f = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0], [2.0, 2.0]])
    rank, crowd = rank_and_crowding(f)
    assert rank.tolist() == [0, 0, 0, 1, 2]
    assert np.isinf(crowd[0]) and np.isinf(crowd[1]) and np.isfinite(crowd[2])


class _Writer:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def append(self, table: str, **cols) -> None:
        self.rows.append({"table": table, **cols})


class _Sink:
    def __init__(self) -> None:
        self.saved: list[str] = []

    def save(self, paths, images) -> None:
        self.saved += paths


def test_archive_keeps_each_distinct_failing_image_once_across_searches():
    w, s = _Writer(), _Sink()
    arch = Archive("cid", w, s)
    img = torch.zeros(4, 1, 2, 2, dtype=torch.uint8)
    img[1] += 1
    img[2] += 1  # the same image as slot 1
    img[3] += 2
    logits = torch.eye(3)[[0, 1, 1, 2]]
    fail = torch.tensor([False, True, True, True])
    seed_idx = torch.tensor([0, 0, 1, 1])
    n = arch.add(
        1, seed_idx, torch.zeros(4, dtype=torch.long), img, logits, logits, torch.zeros(4), fail
    )
    assert n == 2 and arch.count == 2 and arch.offered == 3
    assert len(s.saved) == 2 and s.saved[0].endswith("archive/000000.png")
    # The next generation finds one of them again and one new image: only the new is kept.
    img2 = torch.stack([img[3], img[3] + 5])
    n = arch.add(
        2,
        torch.tensor([1, 1]),
        torch.zeros(2, dtype=torch.long),
        img2,
        logits[:2],
        None,
        torch.zeros(2),
        torch.tensor([True, True]),
    )
    assert n == 1 and arch.count == 3
    assert w.rows[-1]["entry"].tolist() == [2] and w.rows[-1]["pred_b"] is None


def test_log_det_gram_rewards_spread_features():
    eye = torch.eye(5)
    assert log_det_gram(eye) == pytest.approx(0.0, abs=1e-9)  # orthogonal: det 1
    near = eye + 0.9  # all close to one direction
    assert log_det_gram(near) < log_det_gram(eye + 0.1) < 0
    dup = torch.cat([eye[:2], eye[:1]])
    assert log_det_gram(dup) < -20 or log_det_gram(dup) == float("-inf")
    assert log_det_gram(torch.zeros(0, 5)) is None


def test_label_entropy_and_split():
    a, b = np.array([1, 1, 2, 3]), np.array([2, 2, 1, 4])
    assert label_entropy(a, b) == pytest.approx(1.5)  # pairs (1,2) x2, (2,1), (3,4)
    assert label_entropy(a[:0], b[:0]) is None
    label = np.array([1, 2, 2, 0])
    assert split(label, a, b) == {"only_a_right": 2, "only_b_right": 1, "both_wrong": 1}


def test_diversity_is_cosine_distance_to_the_searchs_own_representatives():
    arch = DiversityArchive(2, "pca", 0)
    f = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=1)
    assert torch.equal(arch.diversity(f[None].expand(2, 2, 2)), torch.ones(2, 2))  # none yet
    arch.add(f[:1], torch.tensor([0]))
    arch.add(f[:1], torch.tensor([0]))  # a repeat is not added
    assert len(arch) == 1
    arch.recluster()
    d = arch.diversity(f[None].expand(2, 2, 2))
    assert d[0].tolist() == pytest.approx([0.0, 1.0])  # search 0: distance to [1, 0]
    assert d[1].tolist() == [1.0, 1.0]  # search 1 has found nothing
    arch.keep(torch.tensor([False, True]))
    assert len(arch) == 0 and arch.searches == 1


def test_representatives_cluster_many_finds_and_keep_outliers():
    g = np.random.default_rng(0)
    blobs = np.concatenate([g.normal(c, 0.05, (30, 6)) for c in (0.0, 3.0)])
    far = np.full((1, 6), 40.0)
    reps = representatives(np.concatenate([blobs, far]), "pca", 0)
    assert 60 in reps  # the isolated find represents itself
    assert 2 <= len(reps) <= 10  # the two blobs collapse to few representatives
    assert image_features(torch.ones(2, 1, 2, 2, dtype=torch.uint8)).norm(
        dim=-1
    ).tolist() == pytest.approx([1.0, 1.0])


def _images(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.avg_pool2d(torch.rand((n, 1, 28, 28), generator=g), 3, 1, 1)


def test_nearest_ssim_matches_scikit_image_and_brute_force():
    refs = _images(40, 0)
    queries = (refs[:6] + 0.2 * _images(6, 1) - 0.1).clamp(0, 1)
    nearest = NearestSSIM(refs, candidates=40)
    brute = np.array(
        [
            [
                structural_similarity(
                    q[0].numpy().astype(np.float64),
                    r[0].numpy().astype(np.float64),
                    data_range=1.0,
                    gaussian_weights=True,
                    sigma=1.5,
                    use_sample_covariance=False,
                )
                for r in refs
            ]
            for q in queries
        ]
    )
    score, where = nearest.best(queries)
    assert score.numpy() == pytest.approx(brute.max(1), abs=1e-6)
    assert where.tolist() == brute.argmax(1).tolist() == list(range(6))
    # With a pre-selection of 5 by L2 the answer is the same here (the query is a noisy
    # copy of its reference), at an eighth of the pairs.
    few, _ = NearestSSIM(refs, candidates=5).best(queries)
    assert few.numpy() == pytest.approx(brute.max(1), abs=1e-6)
    assert NearestSSIM(refs).best(refs[:3])[0].tolist() == pytest.approx([1.0] * 3)


@pytest.mark.parametrize("shape", [(60, 30), (20, 50)])
def test_pca_embedding_is_the_projection_on_the_two_principal_axes(shape):
    from engine.search.diversity import embed

    x = np.random.default_rng(1).random(shape)
    xc = x - x.mean(0)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    ref = xc @ vt[:2].T
    got = embed(x, "pca", 0)
    # Same axes up to order and sign (clustering sees the same picture).
    assert np.allclose(np.sort(np.abs(got), 1), np.sort(np.abs(ref), 1), atol=1e-8)
    assert np.array_equal(got, embed(x, "pca", 0))  # deterministic
