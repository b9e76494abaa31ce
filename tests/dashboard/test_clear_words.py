"""AppTest, issue 11 "clear words": the top-2 chart names each line's class, and charts
that tell campaigns (or image groups) apart use the colour-blind-safe Okabe-Ito palette."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.palette import OKABE_ITO
from engine.config import parse_config
from engine.runner import run_campaign
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 3, "seed": 1, "strategy_params": {"generations": 20}}
    return home, [run_campaign(parse_config({**cfg, "name": n}), home).campaign_id
                  for n in ("a", "b")]  # fmt: skip


def specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("arrow_vega_lite_chart")] or [
        json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
    ]


def test_top2_chart_names_the_class_of_each_line(two, monkeypatch):
    home, (cid, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    top2 = [s for s in specs(at) if s.get("encoding", {}).get("color", {}).get("title") == "class"]
    assert len(top2) == 1
    assert top2[0]["encoding"]["color"]["scale"]["range"] == OKABE_ITO


def test_compare_colours_campaigns_with_the_okabe_ito_palette(two, monkeypatch):
    home, ids = two
    at = page_opener(home, monkeypatch)("compare.py")
    at.multiselect[0].set_value(ids).run()
    assert not at.exception, at.exception
    ranges = [
        layer.get("encoding", {}).get("color", {}).get("scale", {}).get("range")
        for s in specs(at) for layer in [s, *s.get("layer", [])]
    ]  # fmt: skip
    assert OKABE_ITO in ranges
