"""The repair's data: seeded draws, equal counts for the controls, and no evaluation
image of the test split in any arm's training data (checked by image content)."""

from __future__ import annotations

import pytest
import torch

from engine.core.errors import ConfigError
from engine.datasets import get_dataset
from engine.repair.failures import image_hash
from engine.repair.mix import draw, mix

N_FAILURES, N_UNFILTERED = 40, 70


@pytest.fixture(scope="module")
def splits():
    ds = get_dataset("mnist")
    return ds.load("train"), ds.load("test")


def failures(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Generated-looking images (N, 1, 28, 28) uint8 and their expected classes."""
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (N_UNFILTERED, 1, 28, 28), generator=g, dtype=torch.uint8)
    return images, torch.randint(0, 10, (N_UNFILTERED,), generator=g)


def arms(train, test, seed: int, replay: float = 3.0):
    """The three arms' mixes and the evaluation images, as engine/repair/run.py builds them
    (the first N_FAILURES unfiltered failures stand for the validated ones)."""
    images, labels = failures(0)
    rng = torch.Generator().manual_seed(seed)
    plan = draw(len(test), len(train), N_FAILURES, N_UNFILTERED, replay, rng)
    out = {
        "repair": mix(images[:N_FAILURES] / 255.0, labels[:N_FAILURES], train, plan.replay_idx),
        "random": mix(
            test.images[plan.pool_idx], test.labels[plan.pool_idx], train, plan.replay_idx
        ),
        "no-validity": mix(
            images[plan.no_validity_idx] / 255.0,
            labels[plan.no_validity_idx],
            train,
            plan.replay_idx,
        ),
    }
    return out, plan


def hashes(images: torch.Tensor) -> set[str]:
    return {image_hash((x * 255).round().to(torch.uint8)) for x in images}


def test_same_seed_same_mix_other_seed_another(splits) -> None:
    train, test = splits
    a, plan_a = arms(train, test, seed=3)
    b, plan_b = arms(train, test, seed=3)
    c, plan_c = arms(train, test, seed=4)
    for arm in a:
        assert torch.equal(a[arm].images, b[arm].images)
        assert torch.equal(a[arm].labels, b[arm].labels)
        assert not torch.equal(a[arm].images, c[arm].images)
    assert torch.equal(plan_a.eval_idx, plan_b.eval_idx)
    assert not torch.equal(plan_a.eval_idx, plan_c.eval_idx)


def test_no_evaluation_image_in_any_arms_training(splits) -> None:
    train, test = splits
    data, plan = arms(train, test, seed=5)
    evaluation = hashes(test.images[plan.eval_idx])
    assert len(evaluation) == len(plan.eval_idx) == len(test) - N_FAILURES
    for arm, m in data.items():
        assert not evaluation & hashes(m.images), arm
    # The Random control does train on test images, from the pool only.
    assert hashes(test.images[plan.pool_idx]) <= hashes(data["random"].images)
    assert not set(plan.pool_idx.tolist()) & set(plan.eval_idx.tolist())


def test_controls_add_as_many_images_and_replay_the_same(splits) -> None:
    train, test = splits
    data, plan = arms(train, test, seed=6, replay=2.5)
    assert {m.added for m in data.values()} == {N_FAILURES}
    assert {len(m) for m in data.values()} == {N_FAILURES + 100}
    replayed = [m.images[m.added :] for m in data.values()]
    assert all(torch.equal(replayed[0], r) for r in replayed[1:])
    assert len(set(plan.no_validity_idx.tolist())) == N_FAILURES


def test_replay_is_capped_at_the_training_split(splits) -> None:
    train, test = splits
    plan = draw(len(test), len(train), 500, 600, 100.0, torch.Generator().manual_seed(0))
    assert len(plan.replay_idx) == len(train)
    assert len(set(plan.replay_idx.tolist())) == len(train)


def test_a_pool_that_leaves_no_evaluation_part_is_refused(splits) -> None:
    train, test = splits
    with pytest.raises(ConfigError, match=r"test split has 1000") as e:
        draw(len(test), len(train), 1000, 1200, 1.0, torch.Generator())
    assert "\n" not in str(e.value)
