"""Compare opens with the newest grid's cells, blocked by its axes, and pivots them."""

from __future__ import annotations

from pathlib import Path

from engine.grid import run_grid
from engine.grid_spec import parse_grid
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
