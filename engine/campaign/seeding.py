"""A campaign's seeds and, for targeted campaigns, the class each seed must reach.

An ordinary campaign draws ``seeds`` starting points (of ``target_class`` if given). A
class-escape campaign (``escape_per_pair: N``, SINVAD's analysis) draws N starting points
of every source class and searches from each of them towards every other class, so the
K - 1 cells of one matrix row share their N source images and differ only in the target:
seeds are ordered by source, then target, then attempt.
"""

from __future__ import annotations

import torch

from engine.campaign.config import CampaignConfig
from engine.generators import Generator
from engine.generators.base import Seeds


def plan_seeds(
    cfg: CampaignConfig,
    generator: Generator,
    images: torch.Tensor,
    labels: torch.Tensor,
    num_classes: int,
    rng: torch.Generator,
) -> tuple[Seeds, torch.Tensor | None]:
    """(seeds, targets (S,) or None). images/labels: the dataset's test split."""
    if cfg.escape_per_pair is None:
        seeds = generator.draw_seeds(cfg.seeds, images, labels, rng, cfg.target_class)
        targets = None if cfg.target is None else torch.full_like(seeds.labels, cfg.target)
        return seeds, targets
    n = cfg.escape_per_pair
    sources = [cfg.target_class] if cfg.target_class is not None else range(num_classes)
    parts, targets = [], []
    for c in sources:
        drawn = generator.draw_seeds(n, images, labels, rng, c)
        others = torch.tensor([t for t in range(num_classes) if t != c])
        # (target, attempt) pairs of this source: every target takes the same n seeds.
        pick = torch.arange(n).repeat(len(others))
        parts.append(Seeds(drawn.latents[pick], drawn.labels[pick], drawn.source_index[pick]))
        targets.append(others.repeat_interleave(n))
    seeds = Seeds(
        torch.cat([p.latents for p in parts]),
        torch.cat([p.labels for p in parts]),
        torch.cat([p.source_index for p in parts]),
    )
    return seeds, torch.cat(targets)


def seed_originals(seeds: Seeds, test, images: torch.Tensor) -> torch.Tensor | None:
    """uint8 dataset images (S, C, H, W) the seeds were encoded from (Argus's realism is to
    the original); None where a seed was sampled rather than encoded, or the generator's
    images differ in shape from the dataset's."""
    idx = seeds.source_index
    if len(idx) == 0 or bool((idx < 0).any()):
        return None
    x = test.images[idx]
    if x.shape != images.shape:
        return None
    return (x * 255).round().to(torch.uint8)  # the dataset's own bytes, as seed images
