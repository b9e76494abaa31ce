"""The tiny random Stable Diffusion pipeline (tests/engine/generators/test_sd_pipeline.py)
searched on the CUDA device through `latentfuzz run --device`."""

from __future__ import annotations

import json

import pytest

from store import Store
from store import campaigns as sc
from tests.engine.generators.test_sd_pipeline import campaign_config, cli, world  # noqa: F401

pytestmark = pytest.mark.cuda


def test_the_tiny_pipeline_runs_a_campaign_on_the_device(world: dict, device: str):  # noqa: F811
    cfg = world["root"] / "cuda-campaign.yaml"
    cfg.write_text(json.dumps({**campaign_config(world), "device": device}))  # JSON is YAML
    out = cli(["run", "--config", str(cfg), "--quiet"], world["home"])
    assert out.exit_code == 0, out.output
    store = Store(world["home"] / "latentfuzz.duckdb")
    cid = sc.list_campaigns(store)["id"].iloc[0]
    row = sc.campaign(store, cid)
    assert row["status"] == "finished"
    assert str(row["environment"]["device"]).startswith(device.split(":")[0])
    seeds = sc.seeds(store, cid)
    assert len(seeds) == 4 and seeds["viable"].any()
