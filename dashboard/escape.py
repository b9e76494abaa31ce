"""The class-escape matrix on the Campaign page, beside the test-set confusion matrix."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from engine.api import LatentfuzzError, confusion_rates, escape_table, get_dataset, to_csv_bytes
from store import Store
from store import metrics as sm

#: Both heatmaps share this colour scale, so a cell means the same in each.
SCALE = alt.Scale(domain=[0, 1], scheme="orangered")
#: The per-pair table's headers, in the words the gallery's cards and counts use ("reached
#: target"); the CSV download keeps the stored columns.
HEADERS = {
    "source_name": "source class",
    "target_name": "target class",
    "attempts": "attempts",
    "viable": "searched (viable seeds)",
    "successes": "reached target",
    "success_rate": "share that reached it",
    "median_iterations": "median iterations to reach it",
    "rate": "rate",
    "count": "test images",
}


def tips(fields: list[str]) -> list[alt.Tooltip]:
    """Tooltips of `fields` under HEADERS' words."""
    return [alt.Tooltip(f, title=HEADERS.get(f, f)) for f in fields]


def heatmap(df: pd.DataFrame, value: str, title: str, names: list[str], tip: list) -> alt.Chart:
    """A source x target heatmap of `value` in [0, 1], the value printed in each cell."""
    # A single-target campaign's seeds of the target class itself made a 0→0 cell read
    # "0.00" under a caption saying the diagonal is left out.
    df = df[df["source"] != df["target"]]
    df = df.assign(
        source_name=[names[int(i)] for i in df["source"]],
        target_name=[names[int(i)] for i in df["target"]],
    )
    axis = {"sort": names}
    base = alt.Chart(df, title=title).encode(
        x=alt.X("target_name:O", title="target class", **axis),
        y=alt.Y("source_name:O", title="source class", **axis),
    )
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", scale=SCALE, title="rate"), tooltip=tips(tip)
    )
    text = base.mark_text(fontSize=10).encode(
        text=alt.Text(f"{value}:Q", format=".2f"),
        color=alt.condition(f"datum.{value} > 0.6", alt.value("white"), alt.value("black")),
    )
    return (rect + text).properties(width=320, height=320)


def target_words(campaign: dict) -> str:
    """The header's words for a targeted campaign's target (" · target class 4"; an escape
    campaign's " · class escape: each seed's own target"), "" for any other: its tile read
    "reached target 7 (100%)", 7 seeds or class 7?"""
    cfg = campaign.get("config") or {}
    target, escape = cfg.get("target"), cfg.get("escape_per_pair")
    if target is None and escape is None:
        return ""
    try:
        names = get_dataset(campaign["dataset"]).class_names
    except LatentfuzzError:  # a user's dataset removed since: the indices say it
        names = None

    def name(i: int) -> str:
        return names[i] if names is not None and 0 <= i < len(names) else str(i)

    if escape is None:
        return f" · target class {name(int(target))}"
    source = cfg.get("target_class")
    return (
        " · class escape"
        + ("" if source is None else f" from class {name(int(source))}")
        + ": each seed's own target"
    )


def escape_panel(store: Store, campaign_id: str, names: list[str]) -> None:
    """Nothing for a campaign without per-seed targets."""
    df = escape_table(store, campaign_id, names)
    if df.empty:
        return
    st.subheader("Class escape")
    st.caption(
        "Left: of all targeted searches from each source class, the share that reached "
        "each target class (SINVAD's escape matrix; a seed not searched counts as a "
        "failed attempt). Right: the classifier's "
        "test-set confusion, each row divided by its class's test images. Same colour "
        "scale; the diagonal is left out of both."
    )
    left, right = st.columns(2)
    left.altair_chart(
        heatmap(
            df,
            "success_rate",
            "escape success rate",
            names,
            [
                "source_name",
                "target_name",
                "attempts",
                "viable",
                "successes",
                "success_rate",
                "median_iterations",
            ],
        ),
    )
    m = sm.metrics(store, campaign_id)
    if m is None or m.get("test_confusion") is None:
        right.info("The test-set confusion matrix is stored when the campaign finishes.")
    else:
        conf = confusion_rates(m["test_confusion"])
        right.altair_chart(
            heatmap(
                conf,
                "rate",
                "test-set confusion rate",
                names,
                ["source_name", "target_name", "count", "rate"],
            ),
        )
    with st.expander("Per pair: attempts, how many reached the target, median iterations"):
        table = df[[c for c in HEADERS if c in df.columns]].rename(columns=HEADERS)
        st.dataframe(table, hide_index=True, width="stretch")
    st.download_button(
        "Download escape matrix (CSV)",
        to_csv_bytes(df),
        f"{campaign_id}-escape.csv",
        "text/csv",
    )
