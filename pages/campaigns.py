"""Campaigns: every campaign in the store, newest first."""

import streamlit as st

from dashboard.data import get_store
from store import queries

st.title("Campaigns")
df = queries.list_campaigns(get_store())
if df.empty:
    st.info("No campaigns yet. Start one from a terminal: `latentfuzz run --seeds 10`.")
else:
    st.dataframe(df, hide_index=True, width="stretch")
