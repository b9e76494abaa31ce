"""The Calibration tab of the Validity studies page: how well each validity filter agrees
with the study's verdicts (table and ROC curves), and a button that scores the study."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from engine.api import (
    VALIDATORS,
    LatentfuzzError,
    calibration_headline,
    study_calibration,
    to_csv_bytes,
)
from store import Store

#: The table's columns in words, in the order shown.
COLUMNS = {
    "validator": "validator",
    "verdict": "verdict",
    "n": "images",
    "auc": "ROC AUC",
    "auc_ci": "95% CI",
    "threshold": "threshold",
    "balanced_accuracy": "balanced accuracy",
    "precision": "precision",
    "recall": "recall",
    "kappa": "kappa",
    "decides": "decides at 95% precision",
    "note": "note",
}


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """The calibration table as the page shows it: figures rounded, as text ("–" where a
    row cannot be computed, and its reason in the note)."""

    def num(col: str, spec: str) -> list[str]:
        return ["–" if pd.isna(x) else format(x, spec) for x in table[col]]

    out = table.assign(
        auc=num("auc", ".3f"),
        auc_ci=[
            "–" if pd.isna(lo) else f"{lo:.2f}-{hi:.2f}"
            for lo, hi in zip(table["auc_ci_low"], table["auc_ci_high"], strict=True)
        ],
        threshold=num("threshold", ".4g"),
        balanced_accuracy=num("balanced_accuracy", ".3f"),
        precision=num("precision", ".3f"),
        recall=num("recall", ".3f"),
        kappa=num("kappa", ".2f"),
        n=["–" if pd.isna(x) else str(int(x)) for x in table["n"]],
        decides=[
            "–" if pd.isna(d) else f"{int(d)} of {int(n)}"
            for d, n in zip(table["decides"], table["n"], strict=True)
        ],
        note=table["note"].astype(object).where(table["note"].notna(), ""),
    )
    return out[list(COLUMNS)].rename(columns=COLUMNS)


def roc_chart(points: pd.DataFrame) -> alt.LayerChart:
    """One ROC line per validator, with the chance diagonal."""
    chance = pd.DataFrame({"fpr": [0, 1], "tpr": [0, 1]})
    lines = (
        alt.Chart(points)
        .mark_line(point=True)  # straight between points: a tie of scores is a diagonal
        .encode(
            x=alt.X("fpr:Q", title="false positive rate (invalid called valid)"),
            y=alt.Y("tpr:Q", title="true positive rate (valid called valid)"),
            color=alt.Color("validator:N", title="validator", scale=alt.Scale(scheme="tableau10")),
            tooltip=["validator", alt.Tooltip("fpr:Q", format=".2f"), "tpr"],
        )
    )
    diagonal = alt.Chart(chance).mark_line(strokeDash=[4, 4], color="grey").encode(x="fpr", y="tpr")
    return (diagonal + lines).properties(height=320)


def calibration_section(store: Store, home: Path, sid: str) -> None:
    """The tab's content for study `sid`."""
    st.caption(
        "Each validity filter's scores of the study's images against people's validity "
        "verdicts (gold images left out, undecided ones counted apart). Threshold: the "
        "score that maximises balanced accuracy; decides at 95% precision: the images the "
        "filter alone could have labelled (docs: Validators, Calibration)."
    )
    names = VALIDATORS.names()
    a, b = st.columns([3, 1], vertical_alignment="bottom")
    chosen = a.multiselect("Validity filters", names, default=names, key=f"cal_filters:{sid}")
    if b.button("Score the study", disabled=not chosen, key="cal_score"):
        try:
            with st.spinner("Scoring the study's images..."):
                done = study_calibration.score_study(store, home, sid, chosen)
        except LatentfuzzError as e:
            st.error(f"Cannot score the study: {e}")
        else:
            for name, why in done.skipped.items():
                st.warning(f"{name} skipped: {why}")
            for name, part in done.partly.items():
                st.info(f"{name} scored {done.scored[name]} images: {part}")
            if done.unreadable:
                st.warning(f"{done.unreadable} images not scored, e.g. {done.why_unreadable}")
    calibs = study_calibration.calibrations(store, sid)
    table = study_calibration.table_of(calibs)
    if table.empty:
        st.info(
            "No validity filter has scored this study yet: press Score the study "
            f"(or `latentfuzz labels calibrate {sid}`)."
        )
        return
    for name, c in calibs.items():
        if name[1] == "validity" and not isinstance(c, str):
            st.markdown(f"**{calibration_headline(name[0], c)}**")
    st.dataframe(shown_table(table), hide_index=True, width="stretch")
    points = study_calibration.roc_points(store, sid)
    if len(points):
        st.altair_chart(roc_chart(points), width="stretch")
    st.download_button(
        "Download the calibration table (CSV)",
        to_csv_bytes(table),
        f"{sid}-calibration.csv",
        "text/csv",
    )
