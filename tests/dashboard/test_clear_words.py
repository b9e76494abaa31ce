"""AppTest, issue 11 "clear words": the top-2 chart names each line's class, and charts
that tell campaigns (or image groups) apart use the colour-blind-safe Okabe-Ito palette."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.palette import OKABE_ITO
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
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
    at = page_opener(home, monkeypatch)("campaign.py", id=cid, tab="Seed detail")
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


def test_models_page_is_readable_with_samples_and_uploads(tmp_path, monkeypatch):
    """Formatted cards (no raw JSON, no None cells), sample images per generator, and the
    classifiers uploaded into the home listed."""
    home = tmp_path / "home"
    (home / "uploads").mkdir(parents=True)
    (home / "uploads" / "0123456789abcdef-mine.pt").write_bytes(b"x" * 10)
    at = page_opener(home, monkeypatch)("models.py")
    assert not at.exception, at.exception
    assert not at.get("image")  # samples on request: no model loaded for the page itself
    for t in at.toggle:
        t.set_value(True)
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert not table.isna().any().any()
    assert "None" not in table.astype(str).to_numpy()
    assert not at.get("code")  # no JSON dumps
    assert not [c.value for c in at.caption if c.value.startswith("No samples")]
    assert len(at.get("image")) >= 3  # one set of samples per generator
    assert at.dataframe[1].value["file"].tolist() == ["mine.pt"]
    assert any("trained with" in m.value for m in at.markdown)


def test_one_canonical_model_name_in_the_settings_that_differ(tmp_path):
    """A campaign asked for 'vae' and one for 'mnist-vae' use the same model: Compare's
    settings that differ must not list the generator (or the default classifier)."""
    from dashboard.compare import config_diff
    from store import Store

    home = tmp_path / "home"
    cfg = {"seeds": 1, "seed": 1, "strategy_params": {"generations": 2}}
    a = run_campaign(parse_config({**cfg, "generator": "vae"}), home).campaign_id
    b = run_campaign(parse_config({**cfg, "generator": "mnist-vae",
                                   "classifier": "mnist-convnet"}), home).campaign_id  # fmt: skip
    diff = config_diff(Store(home / "latentfuzz.duckdb"), [a, b])
    assert "generator" not in diff.index and "classifier" not in diff.index
