"""The Campaign page's Manage panel: rename and delete through the store functions."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def test_rename_then_delete_from_the_campaign_page(tmp_path: Path, monkeypatch):
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/campaign.py")
    at.query_params["id"] = cid
    at.run()
    store = Store(home / "latentfuzz.duckdb")
    for bad, said in (("   ", "not only spaces"), ("x" * 300, "not 300 characters")):
        at.text_input(key="rename").input(bad).run()
        next(b for b in at.button if b.label == "Rename").click().run()
        assert not at.exception, at.exception  # was a StoreError traceback
        assert at.error[0].value.startswith("Not renamed: a campaign name needs 1 to 200")
        assert said in at.error[0].value
        assert sc.campaign(store, cid)["name"] != bad.strip()
    at.text_input(key="rename").input("renamed here").run()
    next(b for b in at.button if b.label == "Rename").click().run()
    assert sc.campaign(store, cid)["name"] == "renamed here"
    delete = next(b for b in at.button if b.label == "Delete")
    assert delete.disabled  # not before the confirmation
    at.checkbox(key="confirm_delete").check().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert sc.campaign(store, cid) is None
    assert not (home / "campaigns" / cid).exists()
