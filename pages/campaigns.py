"""Campaigns: every campaign in the store, filterable, newest first, each linking to its page.

Filters (tag, status, dataset, generator, classifier) live in the URL, so a filtered list
can be bookmarked; while a campaign runs, the list refreshes itself every 2 s."""

import streamlit as st

from dashboard.data import get_store
from dashboard.url_state import url_text, url_widget
from store import annotations
from store import campaigns as sc

st.title("Campaigns")
store = get_store()


def with_tags(df):
    tags = annotations.table(store, "campaign").set_index("id")["tags"]
    return df.assign(tags=[tags.get(i, []) for i in df["id"]])


@st.fragment(run_every=10.0)
def wait_for_a_first_campaign() -> None:
    """An empty list still polls: a campaign started from a terminal shows up by itself."""
    if not sc.list_campaigns(store).empty:
        st.rerun(scope="app")
    st.info(
        "No campaigns yet. Start one on the New campaign page, or from a terminal: "
        "`latentfuzz run --seeds 10`. This page shows it when it starts."
    )


df = with_tags(sc.list_campaigns(store))
if df.empty:
    wait_for_a_first_campaign()
    st.stop()

FILTERS = ("status", "dataset", "generator", "classifier")
FAILED_HELP = (
    "Failing seeds: misclassified; for a campaign of two classifiers (A vs B), "
    "inputs A and B label differently; for a targeted one, the target reached."
)
# Two rows of three: in one row of five, a chosen model's name was cut to "mnist-co…".
cols = [*st.columns(3), *st.columns(3)]
text = url_text(cols[0].text_input, "Name or id contains", "q")
tag = url_widget(
    cols[1].multiselect, "Tag", "tag", sorted({t for ts in df["tags"] for t in ts}), [], many=True
)
chosen = {
    f: url_widget(
        col.multiselect, f.capitalize(), f, sorted(df[f].dropna().unique()), [], many=True
    )
    for col, f in zip(cols[2:], FILTERS, strict=True)
}


# Live: every 2 s while a campaign runs, every 10 s otherwise, so that a campaign started
# from the terminal shows up without a reload.
FAST = (df["status"] == "running").any()


@st.fragment(run_every=2.0 if FAST else 10.0)
def campaign_table() -> None:
    """The filtered list; reruns alone (live)."""
    if FAST:
        sc.reap(store)  # a campaign killed meanwhile is listed crashed, not running
    df = with_tags(sc.list_campaigns(store))
    if (df["status"] == "running").any() != FAST:
        st.rerun()  # the page again, to poll at the other pace
    for col, values in chosen.items():
        if values:
            df = df[df[col].isin(values)]
    if tag:  # every chosen tag
        df = df[[set(tag) <= set(ts) for ts in df["tags"]]]
    if text:
        # Plain text, not a regular expression: "(" or "[" in a search must not raise.
        hit = [df[c].str.contains(text, case=False, regex=False, na=False) for c in ("name", "id")]
        df = df[hit[0] | hit[1]]
    view = df.assign(
        open="/campaign?id=" + df["id"],
        preset=df["preset"].fillna("–"),  # a strategy without presets (it showed "None")
        # A differential campaign's two classifiers (the filter matches its A).
        classifier=df["classifier"]
        + df["classifier_b"].map(lambda b: f" vs {b}" if isinstance(b, str) else ""),
        duration_s=df["wall_seconds"].round(1),
        # Numbers, so that the column sorts as numbers ("9 of 9" came after "90 of 90").
        viable_seeds=df["viable"].astype(int),
        seeds=df["n_seeds"].astype(int),
    )[
        [
            "open",
            "name",
            "tags",
            "status",
            "dataset",
            "generator",
            "classifier",
            "strategy",
            "preset",
            "viable_seeds",
            "seeds",
            "misclassified",
            "misclassified_pct",
            "iterations_icst",
            "iterations_to_failure",
            "created_at",
            "duration_s",
        ]
    ]
    st.dataframe(
        view,
        hide_index=True,
        width="stretch",
        column_config={
            "open": st.column_config.LinkColumn("campaign", display_text=r"id=(.*)"),
            "tags": st.column_config.ListColumn("tags"),
            # One column for every campaign's failing seeds; what a failure is, in its help.
            "misclassified": st.column_config.NumberColumn("misclassified", help=FAILED_HELP),
            "misclassified_pct": st.column_config.NumberColumn(
                "misclassified %", format="%.1f", help=FAILED_HELP
            ),
            "iterations_icst": st.column_config.NumberColumn(
                "iterations (ICST)", format="%.1f", help=sc.ICST_ITERATIONS
            ),
            "iterations_to_failure": st.column_config.NumberColumn(
                "iterations to failure", format="%.1f", help=sc.FAILURE_ITERATIONS
            ),
            "created_at": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm"),
            "viable_seeds": st.column_config.NumberColumn("viable seeds"),
            "seeds": st.column_config.NumberColumn("of seeds"),
            "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
        },
    )
    running = int((df["status"] == "running").sum())
    live = f" {running} running: this list refreshes every 2 s." if running else ""
    count = f"{len(view)} campaign{'' if len(view) == 1 else 's'}"
    st.caption(f"{count}. Click a column header to sort; click an id to open it.{live}")


campaign_table()
