"""AppTest: the objective choice on New campaign and the class-escape panel on Campaign."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def escaped(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"escape_per_pair": 1, "target_class": 2, "seed": 1,
                        "strategy_params": {"generations": 20}})  # fmt: skip
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def app(escaped, monkeypatch):
    return page_opener(escaped[0], monkeypatch)


def _launched(at, monkeypatch) -> dict:
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error, at.error[0].value
    (args,) = launched
    return yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())


def test_escape_objective_launches_every_pair_without_a_seed_count(app, monkeypatch):
    at = app("new_campaign.py")
    objective = next(r for r in at.radio if r.label == "Objective")
    objective.set_value("class-escape matrix: targeted, every class pair").run()
    assert not any(n.label == "Seeds" for n in at.number_input)
    next(n for n in at.number_input if n.label == "Searches per class pair").set_value(2)
    cfg = _launched(at, monkeypatch)
    assert cfg["escape_per_pair"] == 2 and cfg["seeds"] == 2 * 10 * 9
    assert cfg["target"] is None


def test_targeted_objective_asks_for_the_class_to_reach(app, monkeypatch):
    at = app("new_campaign.py")
    next(r for r in at.radio if r.label == "Objective").set_value("targeted: reach one class").run()
    next(s for s in at.selectbox if s.label == "Class to reach").set_value("7")
    next(s for s in at.selectbox if s.label == "Seed class").set_value("1")
    cfg = _launched(at, monkeypatch)
    assert cfg["fitness"] == "targeted" and cfg["target"] == 7 and cfg["target_class"] == 1
    assert cfg["escape_per_pair"] is None


def test_campaign_page_shows_the_escape_matrix_beside_the_confusion(app, escaped):
    home, cid = escaped
    at = app("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert "Class escape" in [h.value for h in at.subheader]
    charts = at.get("vega_lite_chart")
    specs = [c.proto.spec for c in charts]
    assert any("escape success rate" in s for s in specs)
    assert any("test-set confusion rate" in s for s in specs)
    # Both heatmaps share one 0..1 colour scale.
    assert sum('"domain": [0, 1]' in s or '"domain":[0,1]' in s for s in specs) >= 2
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download escape matrix (CSV)" in labels


def test_an_ordinary_campaign_has_no_escape_panel(app, escaped):
    home, _ = escaped
    cid = run_campaign(parse_config({"seeds": 2, "strategy_params": {"generations": 2}}),
                       home).campaign_id  # fmt: skip
    at = app("campaign.py", id=cid)
    assert not at.exception
    assert "Class escape" not in [h.value for h in at.subheader]
