"""Fixtures of the bundle tests: one finished campaign, and its honest bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io.bundle import export_bundle
from store import Store, annotations


def db(home: Path) -> Store:
    return Store(home / "latentfuzz.duckdb")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, str]:
    """A finished campaign (a few seeds and generations, archive on) with a tag."""
    home = tmp_path_factory.mktemp("src")
    sp = {"generations": 10, "perturbation": "strong"}
    cfg = parse_config({"seeds": 3, "seed": 2, "archive": True, "strategy_params": sp})
    cid = run_campaign(cfg, home).campaign_id
    annotations.annotate(db(home), "campaign", cid, tags=["shared"], notes="from a colleague")
    return home, cid


@pytest.fixture
def honest(source, tmp_path: Path) -> Path:
    """The campaign's bundle, as `export --bundle` writes it."""
    home, cid = source
    export_bundle(db(home), home, cid, tmp_path / "c.lfz")
    return tmp_path / "c.lfz"
