"""Streamlit entry point: the router. Pages live in pages/, one thin file each."""

from pathlib import Path

import streamlit as st

PAGES = Path(__file__).resolve().parent.parent / "pages"

st.set_page_config(page_title="latentfuzz", layout="wide")
# Once per server process: no full garbage collection after every run, heavy imports in
# the background (dashboard/warmup.py says what each cost).
from dashboard import warmup  # noqa: E402 - after set_page_config, which comes first

warmup.start()
# Every page has a path of its own (/campaigns, /new_campaign, /campaign, /compare,
# /studies, /label, /models): the Campaigns page was the default, served at "/" only,
# and /campaigns opened a "Page not found" box.
campaigns = st.Page(PAGES / "campaigns.py", title="Campaigns", icon=":material/table_chart:")


def start() -> None:
    """The root opens the Campaigns page at its own path, with the link's parameters."""
    st.switch_page(campaigns, query_params={k: st.query_params.get_all(k) for k in st.query_params})


nav = st.navigation(
    [
        st.Page(start, title="Start", url_path="start", default=True, visibility="hidden"),
        campaigns,
        st.Page(PAGES / "new_campaign.py", title="New campaign", icon=":material/rocket_launch:"),
        st.Page(PAGES / "campaign.py", title="Campaign", icon=":material/monitoring:"),
        st.Page(PAGES / "compare.py", title="Compare", icon=":material/compare:"),
        st.Page(PAGES / "studies.py", title="Validity studies", icon=":material/fact_check:"),
        st.Page(PAGES / "label.py", title="Label", icon=":material/label:"),
        st.Page(PAGES / "models.py", title="Models", icon=":material/model_training:"),
    ]
)
# One store connection serves the whole page run (opened at its first query), instead of
# one per query (store/connection.py: Store.session).
from dashboard.data import home_store  # noqa: E402 - after set_page_config, which comes first
from store import StoreBusy, StoreError  # noqa: E402

# A damaged, truncated or newer store, or one another process holds: the one line that
# names it and the fix, instead of a traceback. Opening the store checks the file and its
# catalog; a block lost from one table is met only by the page that reads it.
try:
    # The page's own get_store() checks run inside it: one connection for the whole run.
    with home_store().session():
        nav.run()
except (StoreError, StoreBusy) as e:
    st.error(str(e), icon=":material/error:")
