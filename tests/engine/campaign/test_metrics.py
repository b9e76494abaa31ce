"""Per-campaign metrics: SSIM against scikit-image with matching settings, MSE, the top-2
gap, the tracker's counting, and the row a finished campaign stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from skimage.metrics import structural_similarity

from engine.campaign.config import parse_config
from engine.campaign.metrics import MetricsTracker, top2_gap
from engine.campaign.runner import run_campaign
from engine.core.similarity import mse, ssim
from store import Store
from store import campaigns as sc
from store import metrics as sm


def images(n: int, c: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.rand((n, c, 28, 28), generator=g)
    # Smooth structure plus noise, so SSIM is neither ~0 nor ~1.
    return torch.nn.functional.avg_pool2d(base, 3, 1, 1).clamp(0, 1)


@pytest.mark.parametrize("channels", [1, 3])
def test_ssim_matches_scikit_image_with_gaussian_sigma_1_5_and_data_range_1(channels: int):
    a = images(4, channels, 0)
    b = (a + 0.15 * images(4, channels, 1) - 0.07).clamp(0, 1)
    ours = ssim(a, b)
    ref = [
        structural_similarity(
            x.numpy().astype(np.float64),
            y.numpy().astype(np.float64),
            data_range=1.0,
            gaussian_weights=True,
            sigma=1.5,
            use_sample_covariance=False,
            channel_axis=0,
        )
        for x, y in zip(a, b, strict=True)
    ]
    assert ours.tolist() == pytest.approx(ref, abs=1e-6)
    assert min(ref) > 0.2 and max(ref) < 0.99  # a case where a wrong window would show
    assert ssim(a, a).tolist() == pytest.approx([1.0] * 4)


def test_mse_and_top2_gap():
    a, b = torch.zeros(2, 1, 4, 4), torch.full((2, 1, 4, 4), 0.5)
    b[1] = 0.0
    assert mse(a, b).tolist() == [0.25, 0.0]
    gap = top2_gap(torch.tensor([[0.0, 0.0, -50.0], [10.0, 0.0, 0.0]]))
    assert gap[0].item() == pytest.approx(0.0, abs=1e-6) and gap[1].item() > 0.99


def test_tracker_counts_evaluations_failures_and_wrong_labels():
    seed_images = torch.zeros(3, 1, 28, 28, dtype=torch.uint8)
    t = MetricsTracker(3, seed_images)
    # Seeds 0 and 2 are active (expected labels 1 and 2); 2 candidates each, K = 4.
    logits = torch.full((2, 2, 4), -9.0)
    logits[0, 0, 1] = logits[0, 1, 3] = 1.0  # seed 0: own label, then wrong label 3
    logits[1, 0, 0] = logits[1, 1, 3] = 1.0  # seed 2: wrong labels 0 and 3
    failing = logits.argmax(2) != torch.tensor([1, 2])[:, None]
    t.evaluated(torch.tensor([0, 2]), logits, torch.tensor([1, 2]), failing)
    result = torch.full((2, 1, 28, 28), 255, dtype=torch.uint8)
    t.finished(torch.tensor([0, 2]), torch.tensor([True, False]), logits[:, 0], result)
    row = t.row(torch.tensor([0.9, 1.0, 0.95]))
    assert row["evaluations"] == 4 and row["failing_evaluations"] == 3
    assert row["error_rate"] == 0.75
    assert row["success_rate"] == 0.5  # 1 of 2 viable seeds
    assert row["label_diversity"] == 1.5  # {3} and {0, 3}
    assert row["failures_per_1k"] == 250.0
    assert row["mean_mse"] == 1.0 and row["mean_ssim"] == pytest.approx(0.0, abs=1e-3)
    assert row["test_gap_median"] == pytest.approx(0.95)
    assert len(row["result_gaps"]) == 2


def test_a_finished_campaign_stores_its_metrics(home: Path):
    cfg = parse_config(
        {
            "seeds": 4,
            "seed": 1,
            "strategy_params": {"generations": 30, "perturbation": "custom", "step": 0.05},
        }
    )
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    m = sm.metrics(store, res.campaign_id)
    s = res.summary
    assert m is not None and s["viable"] > 0
    assert m["success_rate"] == pytest.approx(s["misclassified"] / s["viable"])
    assert m["failures_per_1k"] == pytest.approx(1000 * s["misclassified"] / m["evaluations"])
    # Search evaluations: every generation's candidates, not the seed images.
    seeds = sc.seeds(store, res.campaign_id)
    assert m["evaluations"] == seeds["evaluations"].sum()
    assert 0 < m["failing_evaluations"] <= m["evaluations"]
    assert 0 < m["mean_ssim"] <= 1 and 0 <= m["mean_mse"] < 1
    assert len(m["result_gaps"]) == s["viable"] and len(m["test_gaps"]) == 1000
    # The default classifier is confident on test digits (SINVAD: 0.99).
    assert m["test_gap_median"] > 0.9
    table = sm.metrics_table(store, [res.campaign_id, "nope"])
    assert table["campaign_id"].tolist() == [res.campaign_id]
