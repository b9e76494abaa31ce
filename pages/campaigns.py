"""Campaigns: every campaign in the store, filterable, newest first, each linking to its page."""

import streamlit as st

from dashboard.data import get_store
from store import queries

st.title("Campaigns")
df = queries.list_campaigns(get_store())
if df.empty:
    st.info(
        "No campaigns yet. Start one on the New campaign page, or from a terminal: "
        "`latentfuzz run --seeds 10`."
    )
    st.stop()

a, b, c, d = st.columns(4)
status = a.multiselect("Status", sorted(df["status"].unique()))
generator = b.multiselect("Generator", sorted(df["generator"].unique()))
classifier = c.multiselect("Classifier", sorted(df["classifier"].unique()))
text = d.text_input("Name or id contains")
for col, chosen in (("status", status), ("generator", generator), ("classifier", classifier)):
    if chosen:
        df = df[df[col].isin(chosen)]
if text:
    # Plain text, not a regular expression: "(" or "[" in a search must not raise.
    hit = [df[c].str.contains(text, case=False, regex=False, na=False) for c in ("name", "id")]
    df = df[hit[0] | hit[1]]

view = df.assign(
    open="/campaign?id=" + df["id"],
    duration_s=df["wall_seconds"].round(1),
    viable_seeds=df["viable"].astype(str) + " of " + df["n_seeds"].astype(str),
)[["open", "name", "status", "dataset", "generator", "classifier", "strategy", "preset",
   "viable_seeds", "misclassified", "misclassified_pct", "iterations_icst",
   "iterations_to_failure", "created_at",
   "duration_s"]]  # fmt: skip
st.dataframe(
    view, hide_index=True, width="stretch",
    column_config={
        "open": st.column_config.LinkColumn("campaign", display_text=r"id=(.*)"),
        "misclassified_pct": st.column_config.NumberColumn("misclassified %", format="%.1f"),
        "iterations_icst": st.column_config.NumberColumn(
            "iterations (ICST)", format="%.1f", help=queries.ICST_ITERATIONS),
        "iterations_to_failure": st.column_config.NumberColumn(
            "iterations to failure", format="%.1f", help=queries.FAILURE_ITERATIONS),
        "created_at": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm"),
    },
)  # fmt: skip
st.caption(f"{len(view)} campaigns. Click a column header to sort; click an id to open it.")
