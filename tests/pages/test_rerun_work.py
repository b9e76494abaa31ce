"""What a rerun of a page at rest recomputes (issue 36, point 7, counted rather than timed):
a finished campaign's charts, zip, bands and marks are built once per content of their
rows, a linked Campaign page does not read every campaign, and the Validity studies page
runs only its open tab."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import engine.api
from dashboard import data, memo
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io.export import zip_bytes
from engine.labelling.validity import StudyConfig, create_study
from store import Store, host
from store import campaigns as sc
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("home")
    ids = [
        run_campaign(
            parse_config({"seeds": 4, "seed": s, "strategy_params": {"generations": 30}}), home
        ).campaign_id
        for s in (1, 2)
    ]
    return home, ids


def counting(monkeypatch, owner, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, counted, raising=False)
    return calls


def test_a_finished_campaigns_rerun_builds_no_chart_and_no_zip(two, monkeypatch):
    home, (cid, _) = two
    # The page's engine.api name, bound now so that it can be counted.
    monkeypatch.setattr(engine.api, "zip_bytes", zip_bytes, raising=False)
    zips = counting(monkeypatch, engine.api, "zip_bytes")
    checks = counting(monkeypatch, data, "check_zip")  # a stat of every image
    listed = counting(monkeypatch, sc, "list_campaigns")
    before = memo.computed
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert memo.computed > before  # its charts went through the kept specs
    assert len(at.get("vega_lite_chart")) >= 1 and len(at.get("download_button")) == 2
    built, zipped = memo.computed, len(zips)
    listed.clear()  # (the opener's first run is the Campaigns page)
    at.run()
    at.run()
    assert not at.exception
    assert memo.computed == built and len(zips) == zipped <= 1
    assert len(checks) == 1  # the zip's images checked once for these rows, not per run
    assert not listed  # linked by id: the picker's list of every campaign is not read
    assert len(at.get("vega_lite_chart")) >= 1  # still drawn, from the kept spec


def test_compares_rerun_recomputes_no_chart_band_or_mark(two, monkeypatch):
    home, ids = two
    before = memo.computed
    at = page_opener(home, monkeypatch)("compare.py", id=ids, tab="Convergence")
    assert not at.exception, at.exception
    assert memo.computed > before
    assert len(at.get("vega_lite_chart")) >= 1
    built = memo.computed
    at.run()
    assert not at.exception and memo.computed == built


def test_the_studies_page_runs_only_its_open_tab(two, monkeypatch):
    home, (cid, _) = two
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], k=1, sample=2))
    listed = counting(monkeypatch, sc, "list_campaigns")
    at = page_opener(home, monkeypatch)("studies.py", study=sid)
    assert not at.exception, at.exception
    assert [m.label for m in at.metric][:2] == ["images", "answers"]
    listed.clear()  # (the opener's first run is the Campaigns page)
    at.run()
    # The New study form (every campaign listed, their failing seeds counted) is not built.
    assert not listed and not any(b.label == "Create study" for b in at.button)
    at.session_state["tab"] = "New study"
    at.run()
    assert listed and any(b.label == "Create study" for b in at.button)
    assert not at.metric  # ...and the statistics are not


FRAGMENT_SCRIPT = """
import streamlit as st
from dashboard.data import fragment, home_store
from store import campaigns as sc

@fragment
def panel():
    store = home_store()
    st.button("again")
    st.write(len(sc.list_campaigns(store)), sc.campaign(store, "none"))

panel()
"""


def test_a_fragment_run_of_its_own_reads_on_one_connection(two, monkeypatch, tmp_path):
    home, _ = two
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    script = tmp_path / "frag.py"
    script.write_text(FRAGMENT_SCRIPT)
    at = AppTest.from_file(str(script), default_timeout=60).run()
    assert not at.exception, at.exception
    opened = counting(monkeypatch, host, "attach")
    at.button[0].click().run()  # the fragment alone reruns: two queries
    assert not at.exception, at.exception
    assert len(opened) == 1
