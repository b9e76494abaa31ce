"""The CLI's `tag` and `note` commands (engine/cli/campaigns.py) on a campaign, and the hint
for a study's id given without --study."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app as cli
from store import Store
from store import annotations as an


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[str]]:
    """Two finished campaigns named "first" and "second" (2 seeds, 5 generations)."""
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 2, "seed": 1, "strategy_params": {"generations": 5}}
    return home, [
        run_campaign(parse_config({**cfg, "name": n}), home).campaign_id
        for n in ("first", "second")
    ]


def test_cli_tags_and_notes_a_campaign(two, monkeypatch):
    home, (cid, _) = two
    run = CliRunner().invoke
    r = run(cli, ["tag", cid, "paper", "mnist-low", "--home", str(home)])
    assert r.exit_code == 0, r.output
    assert f"{cid}: tags paper, mnist-low" in r.output
    r = run(cli, ["tag", cid, "--remove", "mnist-low", "--home", str(home)])
    assert "tags paper" in r.output
    r = run(cli, ["note", cid, "the baseline", "--home", str(home)])
    assert r.exit_code == 0, r.output
    got = an.get(Store(home / "latentfuzz.duckdb"), "campaign", cid)
    assert got == {"tags": ["paper"], "notes": "the baseline"}
    r = run(cli, ["tag", "no-such-id", "x", "--home", str(home)])
    assert r.exit_code != 0 and "no campaign 'no-such-id'" in str(r.exception)
    # A study's id without --study: the hint, not "no campaign".
    from store import labels as ls

    sid = "study-x"
    ls.create_validity_study(
        Store(home / "latentfuzz.duckdb"),
        {
            "id": sid,
            "name": "x",
            "created_at": datetime.now(),
            "dataset": "mnist",
            "source": "campaigns",
            "k": 2,
            "rule": "icst",
            "seed": 0,
            "resamples": 1000,
            "config": {},
        },
        pd.DataFrame(columns=["item_id", "kind"]),
    )
    r = run(cli, ["tag", sid, "x", "--home", str(home)])
    assert r.exit_code != 0 and "is a label study, not a campaign; add --study" in str(r.exception)
