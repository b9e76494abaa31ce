"""Argus's realism per lambda is measured against the ORIGINAL test image a seed was
encoded from, not only against the decoded seed (engine/campaign/metrics.py), on a
constructed case; an interpolation campaign measures it against the dataset's own image."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from skimage.metrics import structural_similarity

from engine.campaign.config import parse_config
from engine.campaign.metrics import MetricsTracker
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store import metrics as sm


def ref_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """scikit-image's SSIM with the campaign's one definition, on uint8 (C, H, W)."""
    return structural_similarity(
        a.astype(np.float64) / 255,
        b.astype(np.float64) / 255,
        data_range=1.0,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        channel_axis=0,
    )


def test_a_generation_is_measured_against_each_seeds_original():
    g = torch.Generator().manual_seed(0)
    shape = (1, 16, 16)
    seeds = torch.full((2, *shape), 100, dtype=torch.uint8)  # decoded seeds
    originals = torch.randint(0, 256, (2, *shape), generator=g, dtype=torch.uint8)
    originals[0] = 50  # seed 0's original: flat
    # Two images per seed: seed 0's are flat at 60 and 80; seed 1's first is its own
    # original (SSIM 1, MSE 0), its second noise.
    images = torch.empty((2, 2, *shape), dtype=torch.uint8)
    images[0, 0], images[0, 1] = 60, 80
    images[1, 0] = originals[1]
    images[1, 1] = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    t = MetricsTracker(2, seeds, originals)
    logits = torch.zeros(2, 2, 3)
    t.evaluated(
        torch.tensor([0, 1]),
        logits,
        torch.tensor([0, 0]),
        torch.zeros(2, 2, dtype=torch.bool),
        generation=1,
        step=0.1,
        images=images,
    )
    row = t.row(torch.zeros(0))["per_generation"][0]

    def sq(a, b) -> float:
        return float(((a.double() - b.double()) / 255).pow(2).mean())

    mse_original = [
        ((60 - 50) / 255) ** 2,
        ((80 - 50) / 255) ** 2,
        0.0,
        sq(images[1, 1], originals[1]),
    ]
    assert row["mean_mse_original"] == pytest.approx(sum(mse_original) / 4)
    ssim_original = [
        ref_ssim(images[s, m].numpy(), originals[s].numpy()) for s in range(2) for m in range(2)
    ]
    assert ssim_original[2] == pytest.approx(1.0)
    assert row["mean_ssim_original"] == pytest.approx(sum(ssim_original) / 4, abs=1e-6)
    # The figures against the decoded seed stay, under their own names.
    mse_seed = [sq(images[s, m], seeds[s]) for s in range(2) for m in range(2)]
    assert row["mean_mse"] == pytest.approx(sum(mse_seed) / 4)
    assert row["mean_mse"] != pytest.approx(row["mean_mse_original"])


def test_without_originals_the_rows_are_as_before_and_old_checkpoints_resume():
    seeds = torch.zeros(1, 1, 16, 16, dtype=torch.uint8)
    t = MetricsTracker(1, seeds)
    images = torch.full((1, 2, 1, 16, 16), 10, dtype=torch.uint8)
    t.evaluated(
        torch.tensor([0]),
        torch.zeros(1, 2, 3),
        torch.tensor([0]),
        torch.zeros(1, 2, dtype=torch.bool),
        generation=1,
        step=0.1,
        images=images,
    )
    row = t.row(torch.zeros(0))["per_generation"][0]
    assert set(row) == {"generation", "step", "evaluations", "error_rate", "mean_mse", "mean_ssim"}
    state = t.state_dict()
    del state["originals"]  # a checkpoint written before originals were kept
    back = MetricsTracker.from_state(state)
    assert back.originals is None
    assert back.row(torch.zeros(0))["per_generation"] == [row]


def test_an_interpolation_campaign_measures_against_the_dataset_image(home: Path):
    # A lambda so small that every generated image is its decoded seed: the MSE to the
    # original is then the decoded seed's MSE to the test image it was encoded from.
    cfg = parse_config(
        {
            "strategy": "interpolate",
            "seeds": 3,
            "seed": 1,
            "strategy_params": {
                "k": 1,
                "lambda_steps": 1,
                "lambda_min": 1e-6,
                "lambda_max": 1e-6,
            },
        }
    )
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, res.campaign_id)
    seeds = seeds[seeds["viable"]]
    assert len(seeds) > 0
    test = resolve(cfg).dataset.load("test")
    expected = []
    for r in seeds.itertuples():
        decoded = np.asarray(Image.open(home / r.seed_image), dtype=np.float64) / 255
        original = test.images[r.source_index].numpy().astype(np.float64)
        assert r.source_index >= 0
        expected.append(((decoded.reshape(original.shape) - original) ** 2).mean())
    row = sm.metrics(store, res.campaign_id)["per_generation"][0]
    assert row["mean_mse_original"] == pytest.approx(np.mean(expected), rel=0.05, abs=1e-5)
    assert row["mean_mse_original"] > 10 * row["mean_mse"]  # not the decoded seed
