"""The dashboard entry (what `make run` opens) renders against an empty and a seeded store."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture
def app_home(home: Path, monkeypatch) -> Path:
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    return home


def test_empty_store_shows_how_to_start(app_home: Path):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Campaigns"
    assert "latentfuzz run" in at.info[0].value


def test_campaigns_are_listed(app_home: Path):
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    res = run_campaign(cfg, app_home)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    df = at.dataframe[0].value
    assert df["open"].tolist() == [f"/campaign?id={res.campaign_id}"]
    # Numbers, so that the column sorts as numbers (as text "9 of 9" came after "90 of 90").
    assert df["seeds"].iloc[0] == 2 and 0 <= df["viable_seeds"].iloc[0] <= 2
    status = next(m for m in at.multiselect if m.label == "Status")
    assert status.options == ["finished"]  # filters offer what exists
    at.text_input[0].input("no-such-campaign").run()
    assert at.dataframe[0].value.empty
    at.text_input[0].input(res.campaign_id[-4:]).run()
    assert len(at.dataframe[0].value) == 1


@pytest.mark.parametrize(
    "how,says",
    [
        ("garbage", "is not a DuckDB database"),
        ("whole blocks cut", "is damaged (IO Error"),
        ("newer", "schema version 999"),
    ],
)
def test_a_damaged_store_is_named_in_one_line_not_a_traceback(app_home: Path, how, says):
    import duckdb

    from store import Store

    path = app_home / "latentfuzz.duckdb"
    Store(path)
    if how == "garbage":
        path.write_bytes(b"\0" * 300_000)
    elif how == "whole blocks cut":
        path.write_bytes(path.read_bytes()[: -256 * 1024])
    else:
        con = duckdb.connect(str(path))
        con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        con.close()
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert len(at.error) == 1 and says in at.error[0].value
    assert "\n" not in at.error[0].value and "move the file away" in at.error[0].value


def test_damage_a_page_meets_midway_is_one_line_not_a_traceback(app_home: Path, monkeypatch):
    # A block lost from one table passes the open (file and catalog) and is met by the
    # page that reads it: as if the campaigns table had lost one.
    from store import StoreError
    from store import campaigns as sc

    def damaged(*_a, **_k):
        raise StoreError("store x is damaged (IO Error: Could not read enough bytes)")

    monkeypatch.setattr(sc, "list_campaigns", damaged)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert len(at.error) == 1
    assert "is damaged" in at.error[0].value and "\n" not in at.error[0].value
