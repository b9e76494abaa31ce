"""The Campaigns page's table as a workbench: the columns that tell runs apart first, a
sort kept in the URL, and ticked rows that stay with their campaigns when the list
refreshes or reorders."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from store import campaigns as sc

FAILED_HELP = (
    "Failing seeds: misclassified; for a campaign of two classifiers (A vs B), "
    "inputs A and B label differently; for a targeted one, the target reached."
)

#: The shown columns, in order: the figures that tell runs apart right after the name, so
#: that they fit 1,280 px beside the sidebar (they sat off-screen at 1,400 px).
COLUMNS = (
    "open",
    "name",
    "misclassified_pct",
    "iterations_icst",
    "misclassified",
    "iterations_to_failure",
    "viable_seeds",
    "seeds",
    "tags",
    "status",
    "strategy",
    "generator",
    "preset",
    "classifier",
    "dataset",
    "created_at",
    "duration_s",
)

#: ?sort= values: (column sorted, its label, the direction a click on it first wants).
SORTS = {
    "started": ("created_at", "started", "desc"),
    "misclassified": ("misclassified_pct", "misclassified %", "desc"),
    "iterations": ("iterations_icst", "iterations (ICST)", "asc"),
    "to-failure": ("iterations_to_failure", "iterations to failure", "asc"),
    "viable": ("viable_seeds", "viable seeds", "desc"),
    "name": ("name", "name", "asc"),
    "duration": ("duration_s", "duration", "desc"),
}
ORDERS = {"desc": "high first", "asc": "low first"}


def sort_changed() -> None:
    """A sort the user picks starts in its own first direction (fewest iterations, most
    failures); a link's ?order= is kept as given."""
    st.session_state["url:order"] = SORTS[st.session_state["url:sort"]][2]


def table_view(df: pd.DataFrame) -> pd.DataFrame:
    """The list_campaigns rows (with tags) as shown: one column per COLUMNS entry, plus
    the id (hidden, for the ticks)."""
    return df.assign(
        open="/campaign?id=" + df["id"],
        # A differential campaign's two classifiers (the filter matches its A).
        classifier=df["classifier"]
        + df["classifier_b"].map(lambda b: f" vs {b}" if isinstance(b, str) else ""),
        duration_s=df["wall_seconds"].round(1),
        # Numbers, so that the column sorts as numbers ("9 of 9" came after "90 of 90").
        viable_seeds=df["viable"].astype(int),
        seeds=df["n_seeds"].astype(int),
        # As text: a list column cut a campaign's tags to the first one or two.
        tags=[" · ".join(t) for t in df["tags"]],
    )[["id", *COLUMNS]]


def sorted_view(view: pd.DataFrame, sort: str, order: str) -> pd.DataFrame:
    """The rows by the ?sort= column in the ?order= direction; campaigns without the
    figure (none viable, not finished) last either way, ties newest first."""
    col = SORTS[sort][0]
    by_time = view.sort_values(["created_at", "id"], ascending=False, kind="stable")
    return by_time.sort_values(
        col, ascending=order == "asc", kind="stable", na_position="last"
    ).reset_index(drop=True)


def tags_width(tags: pd.Series) -> int:
    """Pixels that show the longest tag list whole (about 8 px a character at the grid's
    font, plus padding), at least the header's."""
    longest = max((len(t) for t in tags), default=0)
    return max(60, min(480, 8 * longest + 24))


def column_config(view: pd.DataFrame) -> dict:
    """People's words for every column, widths that put the result figures on screen."""
    num = st.column_config.NumberColumn
    return {
        "id": None,  # hidden: what a tick stands for
        "open": st.column_config.LinkColumn(
            "campaign", display_text=r"id=(.*)", width=165, pinned=True
        ),
        "name": st.column_config.TextColumn("name", width=150, pinned=True),
        "misclassified_pct": num("misclassified %", format="%.1f", width=105, help=FAILED_HELP),
        "iterations_icst": num(
            "iterations (ICST)", format="%.1f", width=115, help=sc.ICST_ITERATIONS
        ),
        # One column for every campaign's failing seeds; what a failure is, in its help.
        "misclassified": num("misclassified", width=95, help=FAILED_HELP),
        "iterations_to_failure": num(
            "iterations to failure", format="%.1f", width=130, help=sc.FAILURE_ITERATIONS
        ),
        "viable_seeds": num("viable seeds", width=90),
        "seeds": num("of seeds", width=70),
        "tags": st.column_config.TextColumn("tags", width=tags_width(view["tags"])),
        "preset": st.column_config.TextColumn("perturbation"),
        "created_at": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm"),
        "duration_s": num("duration (s)", format="%.1f"),
    }


def ticked_rows(key: str, shown: Sequence[str]) -> tuple[str, list[int]]:
    """The table's widget key and the rows to tick in it, so that ticks stay with their
    campaigns: the selection the grid sends holds row positions in the table drawn last,
    and a refresh (a campaign started from a terminal) or another sort moves the rows.
    The positions are read through the ids drawn last; when the rows moved, the table is
    drawn afresh (a new key) with its campaigns' ticks carried over."""
    ss = st.session_state
    version = ss.get(f"{key}:version", 0)
    before = ss.get(f"{key}:ids")
    state = ss.get(f"{key}:{version}")
    rows = list(state["selection"]["rows"]) if state else []
    if before is not None:
        ss[f"{key}:ticked"] = [before[r] for r in rows if r < len(before)]
    shown = list(shown)
    if before is not None and before != shown:
        ss.pop(f"{key}:{version}", None)
        version += 1
    ss[f"{key}:version"], ss[f"{key}:ids"] = version, shown
    ticked = ss.get(f"{key}:ticked", [])
    return f"{key}:{version}", [shown.index(c) for c in ticked if c in shown]
