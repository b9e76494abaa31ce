"""Compare opens with the newest grid's cells, blocked by its axes, and pivots them."""

from __future__ import annotations

from pathlib import Path

from engine.studies.grid import run_grid
from engine.studies.spec import parse_grid
from tests.helpers import page_opener

GRID = {
    "name": "g2x2",
    "base": {"seeds": 2, "strategy_params": {"generations": 3}},
    "axes": {"seed": [1, 2], "strategy_params.perturbation": ["low", "strong"]},
}


def test_compare_opens_with_the_grid_blocked_by_its_axes(home: Path, monkeypatch):
    run = run_grid(parse_grid(GRID), home, workers=0)  # in this process: quick
    ids = run.campaign_ids()
    assert len(ids) == 4
    at = page_opener(home, monkeypatch)("compare.py")
    assert not at.exception, at.exception
    group = next(s for s in at.selectbox if s.label == "Group (study or grid)")
    assert group.value == "g2x2"
    assert sorted(at.multiselect[0].value) == sorted(ids)
    along = next(s for s in at.selectbox if s.label == "Compare along (grid axis)")
    assert along.value == "seed" and list(along.options) == list(GRID["axes"])
    table = at.markdown[0].value
    # Compared along the seed, blocked by the perturbation: one block per preset.
    axis = r"strategy\_params\.perturbation"  # markdown-escaped
    assert f"**Block: {axis} = low**" in table and f"**Block: {axis} = strong**" in table
    assert "| campaign | seed | % viable seeds" in table
    pivot = at.dataframe[0].value
    assert list(pivot.columns) == ["1", "2"] and list(pivot.index) == ["low", "strong"]
    along.set_value("strategy_params.perturbation").run()
    assert not at.exception, at.exception
    table = at.markdown[0].value
    assert "**Block: seed = 1**" in table and "**Block: seed = 2**" in table
    assert list(at.dataframe[0].value.columns) == ["low", "strong"]
    # A cell left out of the selection is a dash in the pivot (it showed "None").
    at.multiselect[0].set_value(ids[:3]).run()
    assert not at.exception, at.exception
    assert "–" in at.dataframe[0].value.to_numpy() and None not in at.dataframe[0].value.to_numpy()


def test_settings_that_differ_name_a_renamed_campaign_by_its_name_now(home: Path):
    from dashboard.compare import config_diff
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store, admin

    ids = [run_campaign(parse_config({"seeds": 1, "seed": s, "name": f"was {s}",
                                      "strategy_params": {"generations": 2}}), home).campaign_id
           for s in (1, 2)]  # fmt: skip
    store = Store(home / "latentfuzz.duckdb")
    admin.rename_campaign(store, ids[0], "is now")
    diff = config_diff(store, ids)
    assert diff.loc["name"].tolist() == ["is now", "was 2"]
    unnamed = [run_campaign(parse_config({"seeds": 1, "seed": s, "strategy_params": {
        "generations": 2}}), home).campaign_id for s in (1, 2)]  # fmt: skip
    assert "name" not in config_diff(store, unnamed).index  # not a row of the ids again


def test_compare_opens_on_the_newest_group_that_has_two_campaigns(home: Path, monkeypatch):
    """A newest grid of one cell opened the page on "Choose at least two campaigns"."""
    run_grid(parse_grid(GRID), home, workers=0)
    one = {"name": "g1", "base": GRID["base"], "axes": {"seed": [7]}}
    run_grid(parse_grid(one), home, workers=0)
    at = page_opener(home, monkeypatch)("compare.py")
    assert not at.exception, at.exception
    group = next(s for s in at.selectbox if s.label == "Group (study or grid)")
    assert group.value == "g2x2" and "g1" in group.options
    assert not any("Choose at least two" in i.value for i in at.info)


def test_a_campaign_deleted_while_compared_is_said_to_have_left(home: Path, monkeypatch):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store, admin

    ids = [run_campaign(parse_config({"seeds": 1, "seed": s, "strategy_params": {
        "generations": 2}}), home).campaign_id for s in (1, 2, 3)]  # fmt: skip
    at = page_opener(home, monkeypatch)("compare.py", id=ids)
    assert sorted(at.multiselect[0].value) == sorted(ids)
    admin.delete_campaign(Store(home / "latentfuzz.duckdb"), home, ids[2])
    at.run()
    assert not at.exception, at.exception
    assert sorted(at.multiselect[0].value) == sorted(ids[:2])
    assert any(f"{ids[2]} no longer here (deleted?), left out" in t.value for t in at.toast)
