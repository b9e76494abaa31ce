"""The data of a repair and its controls, all drawn from one seeded generator.

The test split is cut in two: a pool, from which the "Random" control takes real
held-out images (Argus' control: test images moved into training), and an evaluation
part, disjoint from every image any arm trains on, on which accuracy is measured. The
pool holds as many images as the repair adds failures, drawn from the test split by the
run's generator; the evaluation part is the rest.

Every arm trains on its added images plus the same replayed training images (``replay``
per added image, capped at the training split), so that the arms differ only in what is
added: the validated failures, as many pool images, or as many failures drawn from the
same source without the validity filter.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.core.errors import ConfigError


@dataclass(frozen=True)
class Plan:
    """Index draws of one run (all LongTensors, positions in their splits or sets)."""

    eval_idx: torch.Tensor  # test split: accuracy is measured here
    pool_idx: torch.Tensor  # test split: the Random control's added images
    replay_idx: torch.Tensor  # training split: replayed by every arm
    no_validity_idx: torch.Tensor  # the source's unfiltered failures: that control's


def draw(
    n_test: int,
    n_train: int,
    n_failures: int,
    n_unfiltered: int,
    replay: float,
    rng: torch.Generator,
) -> Plan:
    """The run's draws, in a fixed order from ``rng``: pool, replay, no-validity.

    n_failures validated failures are added; the pool and the no-validity draw hold as
    many. The pool must leave an evaluation part: a one-line error otherwise."""
    if n_failures >= n_test:
        raise ConfigError(
            f"{n_failures} failures need a pool of as many held-out test images, and the "
            f"test split has {n_test}, leaving none to measure accuracy on; repair from "
            "fewer failures"
        )
    order = torch.randperm(n_test, generator=rng)
    pool_idx, eval_idx = order[:n_failures], order[n_failures:].sort().values
    n_replay = min(n_train, round(replay * n_failures))
    replay_idx = torch.randperm(n_train, generator=rng)[:n_replay]
    # unfiltered holds the valid ones too: at least n_failures to draw from
    no_validity_idx = torch.randperm(n_unfiltered, generator=rng)[:n_failures]
    return Plan(eval_idx, pool_idx, replay_idx, no_validity_idx)


@dataclass(frozen=True)
class Mix:
    """One arm's training data: images (M, C, H, W) float32 in [0, 1], labels (M,), of
    which the first ``added`` are the arm's own (failures or pool images)."""

    images: torch.Tensor
    labels: torch.Tensor
    added: int

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def mix(
    added: torch.Tensor, added_labels: torch.Tensor, train: object, replay_idx: torch.Tensor
) -> Mix:
    """The added images (float, [0, 1]) followed by the replayed training images."""
    images = torch.cat([added.float(), train.images[replay_idx]])
    labels = torch.cat([added_labels.long(), train.labels[replay_idx]])
    if len(labels) < 2:
        raise ConfigError(
            f"the mix holds {len(labels)} image; fine-tuning needs at least 2 (batch norm): "
            "raise --replay"
        )
    return Mix(images, labels, len(added_labels))
