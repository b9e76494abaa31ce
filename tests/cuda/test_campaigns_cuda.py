"""VAE, GAN and DM campaigns on the CUDA device: each finishes with its rows whole, on the
device it names, from the same seeds as on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc

pytestmark = pytest.mark.cuda


def config(generator: str, device: str) -> dict:
    return {
        "seeds": 3,
        "seed": 1,
        "generator": generator,
        "device": device,
        "strategy_params": {"generations": 3, "perturbation": "strong"},
    }


@pytest.mark.parametrize("generator", ["vae", "gan", "dm"])
def test_a_campaign_runs_whole_on_the_device(generator: str, device: str, tmp_path: Path):
    res = run_campaign(parse_config(config(generator, device)), tmp_path / "dev")
    store = Store(tmp_path / "dev" / "latentfuzz.duckdb")
    row = sc.campaign(store, res.campaign_id)
    assert row["status"] == "finished"
    assert str(row["environment"]["device"]).startswith(device.split(":")[0])
    seeds = sc.seeds(store, res.campaign_id)
    assert len(seeds) == 3 and not seeds["status"].isin(["searching"]).any()
    searched = seeds[seeds["viable"]]
    assert (searched["iterations"] >= 1).all() and (searched["evaluations"] > 0).all()
    # The seeds are drawn on the CPU from the campaign's seed: the same on every device.
    cpu = run_campaign(parse_config(config(generator, "cpu")), tmp_path / "cpu")
    on_cpu = sc.seeds(Store(tmp_path / "cpu" / "latentfuzz.duckdb"), cpu.campaign_id)
    assert seeds["seed_label"].tolist() == on_cpu["seed_label"].tolist()
    assert seeds["source_index"].tolist() == on_cpu["source_index"].tolist()
