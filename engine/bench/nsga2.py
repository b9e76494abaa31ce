"""Benchmarks of differential testing: NSGA-II's own cost per generation, PCA against UMAP
for its diversity objective, and the SSIM-nearest filter's speed and recall.

- ``bench_nsga2``: one NSGA-II campaign per embedding on the same seeds (GAN, convnet vs
  LeNet-5, no validity filters). Reports time per generation, the strategy's share of it
  (sorting, crowding, diversity update and breeding: ``CampaignResult.strategy_seconds``
  over the wall time), the triggering inputs found and the geometric diversity reached.
- ``bench_ssim``: SSIM to the nearest of the generator's training images for N generated
  images, timed with the L2 pre-selection, and its recall: on a subset, how often the
  pre-selected best equals the brute-force best over every reference.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_in_series
from engine.core.images import to_uint8
from engine.validators.nearest import NearestSSIM
from store import Store
from store import metrics as sm


def bench_nsga2(
    embeddings: tuple[str, ...] = ("pca", "umap"),
    seeds: int = 4,
    generations: int = 20,
    population: int = 50,
    seed: int = 0,
) -> list[dict[str, Any]]:

    rows = []
    for emb in embeddings:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            cfg = parse_config(
                {
                    "generator": "gan",
                    "classifier": "convnet",
                    "classifier_b": "lenet5",
                    "strategy": "nsga2",
                    "seeds": seeds,
                    "seed": seed,
                    "validators": {},
                    "record_individuals": False,
                    "strategy_params": {
                        "generations": generations,
                        "population": population,
                        "embedding": emb,
                    },
                }
            )
            t0 = time.perf_counter()
            res = run_in_series(cfg, home)
            total = time.perf_counter() - t0
            figs = sm.metrics(Store(home / "latentfuzz.duckdb"), res.campaign_id)
            d = figs["differential"]
            rows.append(
                {
                    "embedding": emb,
                    "seeds": seeds,
                    "population": population,
                    "generations": generations,
                    "command_seconds": total,
                    "seconds_per_generation": res.wall_seconds / generations,
                    "nsga2_share": res.strategy_seconds / res.wall_seconds,
                    "model_share": res.model_seconds / res.wall_seconds,
                    "triggering": d["triggering"],
                    "geometric_diversity": d["geometric_diversity"],
                    "geometric_subset": d["geometric_subset"],
                    "label_entropy": d["label_entropy"],
                }
            )
    return rows


def bench_ssim(queries_n: int = 1000, recall_n: int = 50, seed: int = 0) -> dict[str, Any]:
    """Time SSIM-nearest on `queries_n` GAN samples against the training split."""

    r = resolve(parse_config({"generator": "gan"}))
    refs = r.dataset.load("train").images
    g = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        z = torch.randn((queries_n, *r.generator.latent_shape), generator=g)
        y = torch.randint(0, r.dataset.num_classes, (queries_n,), generator=g)
        x = to_uint8(r.generator.decode(z, y)).double() / 255.0
        t0 = time.perf_counter()
        nearest = NearestSSIM(refs)
        setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        fast, _ = nearest.best(x)
        seconds = time.perf_counter() - t0
        brute = NearestSSIM(refs, candidates=len(refs), chunk=4)
        t0 = time.perf_counter()
        exact, _ = brute.best(x[:recall_n])
        brute_seconds = time.perf_counter() - t0
    same = (fast[:recall_n] - exact).abs() < 1e-9
    return {
        "queries": queries_n,
        "references": len(refs),
        "candidates": nearest.candidates,
        "setup_seconds": setup,
        "seconds": seconds,
        "brute_force_seconds_per_query": brute_seconds / recall_n,
        "recall": float(same.float().mean()),
        "recall_queries": recall_n,
        "max_shortfall": float((exact - fast[:recall_n]).max()),
    }
