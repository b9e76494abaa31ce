"""The papers' baselines in a strategy study: each at the study's budget, in its own
(pixel) space, on the same test images as the latent strategies."""

from __future__ import annotations

from pathlib import Path

from engine.search.strategies import STRATEGIES
from engine.studies.strategy import evaluation_budget, run_strategy_study, strategy_configs
from store import Store
from store import campaigns as sc

BASELINES = ["pixel-ga", "mutation", "fgsm", "pgd"]


def test_the_baselines_configs_search_pixel_space_within_the_budget():
    configs = dict(strategy_configs(["ga", *BASELINES], 3, 1, 50, "mnist", "vae", "s"))
    assert configs["ga"]["generator"] == "vae"
    budget = evaluation_budget(50)
    for name in BASELINES:
        cls = STRATEGIES.get(name)
        assert configs[name]["generator"] == "pixel"
        params = cls.Params(**configs[name]["strategy_params"])
        # Exactly the GA's: the generation that reaches it is cut short to it.
        assert params.evaluations == budget
        assert cls.budget(params) >= budget, (name, cls.budget(params))


def test_a_study_runs_the_baselines_beside_the_latent_search(home: Path):
    study, table = run_strategy_study(home, ["ga", *BASELINES], seeds=2, generations=3)
    assert table["strategy"].tolist() == ["ga", *BASELINES]
    store = Store(home / "latentfuzz.duckdb")
    budget = evaluation_budget(3)
    assert (table["budget"] <= budget).all()
    generators = [sc.campaign(store, c)["generator"] for c in table["campaign"]]
    assert generators == ["mnist-vae", "pixel", "pixel", "pixel", "pixel"]
    # The same test images: the VAE's seeds encode them, the baselines search them.
    sources = [sc.seeds(store, c)["source_index"].tolist() for c in table["campaign"]]
    assert all(s == sources[0] for s in sources)
    per_seed = [sc.seeds(store, c)["evaluations"].max() for c in table["campaign"]]
    assert max(per_seed) <= budget
    assert table["error_rate"].notna().all()
