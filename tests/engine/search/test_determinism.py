"""A determinism test for every registered strategy: the same config and seed give
identical stored results (timestamps and campaign ids aside)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.search.strategies import STRATEGIES
from store import Store
from store import campaigns as sc
from store import differential as sd

#: Small settings per strategy; a new strategy must add its own here.
SMALL = {
    "ga": {"generations": 12, "perturbation": "custom", "step": 0.05},
    "random": {"generations": 12, "perturbation": "custom", "step": 0.3},
    "sinvad": {"generations": 12, "population": 12, "elites": 4},
    "interpolate": {"k": 2, "lambda_steps": 4},
    "nsga2": {"generations": 8, "population": 12, "cluster_every": 2},
    "pixel-ga": {"generations": 6, "population": 8, "elites": 3},
    "mutation": {"generations": 6, "population": 8, "queue": 6},
    "fgsm": {"epsilons": 6},
    "pgd": {"steps": 4, "restarts": 3},
}
#: Campaign settings a strategy needs beyond its own (NSGA-II compares two classifiers).
EXTRA = {"nsga2": {"classifier_b": "lenet5", "validators": {}}}


def test_every_strategy_has_a_determinism_case():
    assert set(STRATEGIES.names()) <= set(SMALL), "add the new strategy to SMALL"


def outcome(home: Path, strategy: str, seed: int = 1) -> tuple[pd.DataFrame, ...]:
    cfg = parse_config(
        {
            "strategy": strategy,
            "seeds": 3,
            "seed": seed,
            "strategy_params": SMALL[strategy],
            **EXTRA.get(strategy, {}),
        }
    )
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    s = sc.seeds(store, cid).drop(columns=["elapsed_s"])
    g = sc.generations(store, cid).drop(columns=["elapsed_s"])
    for df, cols in ((s, ["seed_image", "result_image", "improvements_image"]), (g, ["image"])):
        for c in cols:
            df[c] = df[c].str.replace(cid, "ID")
    ind = pd.concat([sc.individuals(store, cid, i) for i in range(3)])
    arch = sd.archive(store, cid).drop(columns=["image"])
    ind = pd.concat([ind, arch])  # NSGA-II's archive of triggering inputs (empty elsewhere)
    images = tuple((home / p).read_bytes() for p in sc.seeds(store, cid)["result_image"].dropna())
    return s, g, ind.reset_index(drop=True), images


@pytest.mark.parametrize("strategy", sorted(SMALL))
def test_same_config_and_seed_same_stored_results(tmp_path: Path, strategy: str):
    a = outcome(tmp_path / "a", strategy)
    b = outcome(tmp_path / "b", strategy)
    for x, y in zip(a[:3], b[:3], strict=True):
        pd.testing.assert_frame_equal(x, y)
    assert a[3] == b[3] and len(a[3]) > 0
    # A different seed gives a different search (the test could fail).
    c = outcome(tmp_path / "c", strategy, seed=2)
    assert not a[1]["best_fitness"].equals(c[1]["best_fitness"])
