"""The new filters end to end on a tiny bundled-model campaign: `latentfuzz validate
--validator NAME` scores its result images and prints realism, a campaign whose config
names a filter scores it at its close, and a threshold outside a filter's range is
refused in one line before anything is written."""

from __future__ import annotations

import os
import subprocess

import pytest
from typer.testing import CliRunner

from engine.campaign import realism
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app
from engine.validators import references
from store import Store
from store import differential as sd
from store import metrics as sm
from tests.helpers import CLI

NEW = ("vae-reconstruction", "feature-density", "classifier-confidence")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """A 3-seed VAE campaign whose close scores classifier-confidence (its config names it)."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        # Calibrated and compared on a few hundred test images: the suite's budget.
        mp.setattr(realism, "REFERENCE_IMAGES", 200)
        mp.setattr(references, "REFERENCE_IMAGES", 300)
        return home, run(home)


def run(home):
    cfg = parse_config(
        {
            "seeds": 3,
            "seed": 4,
            "strategy_params": {"generations": 2},
            "validators": {"classifier-confidence": None},
        }
    )
    return run_campaign(cfg, home).campaign_id


def test_a_campaign_naming_a_new_filter_scores_it_at_close(campaign):
    home, cid = campaign
    v = sd.validity(Store(home / "latentfuzz.duckdb"), cid)
    assert set(v["validator"]) == {"classifier-confidence"}
    assert len(v) == 3 and v["score"].between(0, 1).all()
    assert sm.metrics(Store(home / "latentfuzz.duckdb"), cid)["realism"]["images"] == 3


@pytest.mark.parametrize("name", NEW)
def test_validate_scores_a_campaign_with_each_new_filter(campaign, name, small_fit):
    home, cid = campaign
    out = CliRunner().invoke(app, ["validate", cid, "--validator", name, "--home", str(home)])
    assert out.exit_code == 0, out.output
    assert f"result images, {name}: " in out.output and " of 3 valid (threshold " in out.output
    assert "FID (classifier features, not Inception)" in out.output
    v = sd.validity(Store(home / "latentfuzz.duckdb"), cid)
    mine = v[v["validator"] == name]
    assert len(mine) == 3 and mine["threshold"].notna().all()
    assert (mine["valid"] == (mine["score"] >= mine["threshold"])).all()


def test_a_threshold_outside_the_range_is_refused_before_anything_is_written(campaign):
    home, cid = campaign
    store = Store(home / "latentfuzz.duckdb")
    before = sd.validity(store, cid)
    out = subprocess.run(
        [*CLI, "validate", cid, "--validator", "vae-reconstruction=0.5"],
        env={**os.environ, "LATENTFUZZ_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().startswith("error: validity filter 'vae-reconstruction': ")
    assert "threshold 0.5 is outside its scores' range [-1, 0]" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert sd.validity(store, cid).equals(before)
