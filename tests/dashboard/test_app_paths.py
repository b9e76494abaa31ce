"""Every page of the dashboard opens at its own path: the Campaigns page was served at "/"
only, and /campaigns opened a "Page not found" box."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
PATHS = {
    "campaigns": "Campaigns",
    "new_campaign": "New campaign",
    "campaign": "Campaign",
    "compare": "Compare",
    "studies": "Validity studies",
    "label": "Label",
    "models": "Models",
}


@pytest.fixture
def opened(home: Path, monkeypatch) -> AppTest:
    """The app run once on an empty home: its pages registered."""
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    return AppTest.from_file(str(APP), default_timeout=60).run()


def served(pages: dict, path: str) -> dict | None:
    """The page the server runs for a browser that opens /<path>: the same resolution
    (streamlit's PagesManager, the URL's page name, no page hash)."""
    manager = PagesManager(str(APP))
    manager.set_script_intent("", path)
    return manager.set_pages_and_resolve(pages, fallback_page_hash="")


@pytest.mark.parametrize("path", list(PATHS))
def test_each_page_opens_at_its_path(opened: AppTest, path: str):
    page = served(opened._registered_pages, path)
    assert page is not None, f"/{path}: Page not found"
    assert Path(page["script_path"]).name == f"{path}.py"
    at = opened.switch_page(str(Path("..") / "pages" / f"{path}.py")).run()
    assert not at.exception, at.exception
    # (A Campaign page of no campaign has no title: it says to pick one.)
    titles = [t.value for t in at.title]
    assert titles == [PATHS[path]] or (path == "campaign" and not titles), titles


def test_the_root_opens_the_campaigns_page_with_the_links_parameters(home: Path, monkeypatch):
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["tag"] = ["a", "b"]
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Campaigns"
    assert at.query_params["tag"] == ["a", "b"]
    page = at._registered_pages[at._finished_page_script_hash]
    assert page["url_pathname"] == "campaigns"
