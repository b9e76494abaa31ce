"""Campaigns: every campaign in the store, filterable and sortable, each linking to its
page; tick two or more and Compare opens with them.

Filters (text, tag, status, strategy, dataset, generator, classifier) and the sort live in
the URL, so a list can be bookmarked; while a campaign runs, it refreshes every 2 s."""

from pathlib import Path

import streamlit as st

from dashboard import runlist as rl
from dashboard.data import fragment, get_store
from dashboard.deleting import say_deleted
from dashboard.url_state import url_text, url_widget
from store import annotations
from store import campaigns as sc

st.title("Campaigns")
store = get_store()
COMPARE = Path(__file__).with_name("compare.py")
say_deleted()  # a campaign just deleted on its page: what went


def with_tags(df):
    tags = annotations.table(store, "campaign").set_index("id")["tags"]
    return df.assign(tags=[tags.get(i, []) for i in df["id"]])


@fragment(run_every=10.0)
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

FILTERS = ("status", "strategy", "dataset", "generator", "classifier")
# Two rows: in one row of five filters, a chosen model's name was cut to "mnist-co…"; the
# sort and its order share the second row's end.
cols = [*st.columns(4), *st.columns([1, 1, 1, 0.9, 0.7])]
text = url_text(cols[0].text_input, "Name or id contains", "q")
tag = url_widget(
    cols[1].multiselect, "Tag", "tag", sorted({t for ts in df["tags"] for t in ts}), [], many=True
)
chosen = {
    f: url_widget(
        col.multiselect, f.capitalize(), f, sorted(df[f].dropna().unique()), [], many=True
    )
    for col, f in zip(cols[2:7], FILTERS, strict=True)
}
# The sort lives in the URL with the filters: a header click sorts the grid only, and was
# lost on every refresh and in every shared link.
sort = url_widget(
    cols[7].selectbox,
    "Sort by",
    "sort",
    list(rl.SORTS),
    "started",
    format_func=lambda k: rl.SORTS[k][1],
    on_change=rl.sort_changed,
)
order = url_widget(
    cols[8].selectbox,
    "Order",
    "order",
    list(rl.ORDERS),
    rl.SORTS[sort][2],
    format_func=rl.ORDERS.get,
)


# Live: every 2 s while a campaign runs, every 10 s otherwise, so that a campaign started
# from the terminal shows up without a reload.
FAST = (df["status"] == "running").any()


@fragment(run_every=2.0 if FAST else 10.0)
def campaign_table() -> None:
    """The filtered, sorted list, whose ticked rows open in Compare; reruns alone (live)."""
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
    view = rl.sorted_view(rl.table_view(df), sort, order)
    key, ticks = rl.ticked_rows("runs", view["id"])
    event = st.dataframe(
        view,
        hide_index=True,
        width="stretch",
        column_config=rl.column_config(view),
        placeholder="",  # an empty cell is blank (it read "None")
        key=key,
        on_select="rerun",
        selection_mode="multi-row",
        selection_default={"selection": {"rows": ticks}},
    )
    ticked = [view["id"].iloc[r] for r in event.selection.rows if r < len(view)]
    running = int((df["status"] == "running").sum())
    live = f" {running} running: this list refreshes every 2 s." if running else ""
    count = f"{len(view)} campaign{'' if len(view) == 1 else 's'}"
    left, right = st.columns([3, 1])
    left.caption(
        f"{count}. Sort with Sort by (kept in the link; a click on a header sorts this view "
        f"only). Tick two or more to compare them; click an id to open it.{live}"
    )
    if right.button(
        f"Compare {len(ticked)} ticked",
        type="primary",
        disabled=len(ticked) < 2,
        help="Tick two or more campaigns in the table to compare them.",
        width="stretch",
    ):
        st.switch_page(COMPARE, query_params={"id": ticked})


campaign_table()
