"""AppTest of a just-launched campaign's page (issue 36, point 7: launch to the first
generation shown under 5 s): it looks for the first generation every half second, not at
the live panel's 2 s, and stops looking once the chart has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard import progress
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store.liveness import CampaignLock
from tests.helpers import page_opener
from tests.pages.charts import specs


@pytest.fixture
def started(tmp_path: Path):
    """(home, cid, store): a campaign shown as running (its lock held) with no
    generation written yet, as in the first seconds after Launch."""
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 2}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    with store.write() as con:
        con.execute(
            "UPDATE campaigns SET status = 'running', finished_at = NULL WHERE id = ?", [cid]
        )
        con.execute("UPDATE seeds SET status = 'searching' WHERE campaign_id = ?", [cid])
        con.execute("DELETE FROM individuals WHERE campaign_id = ?", [cid])
        # Kept aside, to be written as the campaign's writer would flush them.
        con.execute("CREATE TABLE held AS SELECT * FROM generations WHERE campaign_id = ?", [cid])
        con.execute("DELETE FROM generations WHERE campaign_id = ?", [cid])
    lock = CampaignLock(home, cid).acquire()
    try:
        yield home, cid, store
    finally:
        lock.release()


def first_generation(store: Store) -> None:
    """As the campaign's writer flushes its first generation."""
    with store.write() as con:
        con.execute("INSERT INTO generations SELECT * FROM held WHERE generation = 1")


def test_a_campaign_without_a_generation_is_polled_fast_until_one_shows(started, monkeypatch):
    home, cid, store = started
    calls = []
    monkeypatch.setattr(progress, "wait_for_first_generation", lambda *a: calls.append(a[2]))
    open_page = page_opener(home, monkeypatch)
    at = open_page("campaign.py", id=cid)
    assert not at.exception, at.exception
    # The chart's frame is drawn empty, said to be waiting: the browser loads the chart's
    # code while the campaign starts (issue 36, launch to first generation).
    assert any("No generation written yet" in x.value for x in at.caption)
    (spec,) = specs(at)
    assert spec["layer"][0]["encoding"]["y"]["axis"]["format"] == "~g"  # "0", not "0.000000"
    assert calls == [cid]  # the half-second poll runs beside the live panel
    assert progress.FIRST_POLL_S <= 0.5
    first_generation(store)
    at = open_page("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert calls == [cid]  # the chart has it: the live panel's 2 s refresh alone
    assert not any("No generation written yet" in x.value for x in at.caption)
    assert len(specs(at)) == 1


def test_has_generation_answers_without_reading_the_rows(started):
    home, cid, store = started
    assert sc.has_generation(store, cid) is False
    first_generation(store)
    assert sc.has_generation(store, cid) is True
    assert sc.has_generation(store, "no-such-campaign") is False
