"""The Calibration tab of the Validity studies page: how well each validity filter agrees
with the study's verdicts (table and ROC curves), over the whole study and over each
generator's images apart, and a button that scores the study."""

from __future__ import annotations

import copy
import hashlib
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
from store import calibration as store_cal
from store import labels as label_store

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

#: What a row's positives are, by verdict ("160 decided, 100 preserved").
POSITIVE = {"validity": "valid", "preservation": "preserved"}


def _why(note: str) -> str:
    """The reason of a note from CannotCalibrate ("cannot calibrate: <why>; <what to
    do>"): "all 3 decided images are valid"."""
    return note.removeprefix("cannot calibrate: ").split("; ")[0]


def _images(n: object, positives: object, verdict: str, note: object) -> str:
    if not pd.isna(n):
        return f"{int(n)} decided, {int(positives)} {POSITIVE.get(verdict, 'positive')}"
    return _why(note) if isinstance(note, str) else "–"


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """The calibration table as the page shows it: figures rounded, as text. A row that
    cannot be computed has "none" for its AUC, its reason in words for its images ("all 3
    decided images are valid"), "–" for its other figures, and the whole reason in its note.
    A table with a `generator` column shows it after the verdict."""

    def num(col: str, spec: str) -> list[str]:
        return ["–" if pd.isna(x) else format(x, spec) for x in table[col]]

    out = table.assign(
        auc=[
            "none" if isinstance(w, str) else a
            for a, w in zip(num("auc", ".3f"), table["note"], strict=True)
        ],
        auc_ci=[
            "–" if pd.isna(lo) else f"{lo:.2f}-{hi:.2f}"
            for lo, hi in zip(table["auc_ci_low"], table["auc_ci_high"], strict=True)
        ],
        threshold=num("threshold", ".4g"),
        balanced_accuracy=num("balanced_accuracy", ".3f"),
        precision=num("precision", ".3f"),
        recall=num("recall", ".3f"),
        kappa=num("kappa", ".2f"),
        n=[
            _images(*row)
            for row in zip(
                table["n"], table["positives"], table["verdict"], table["note"], strict=True
            )
        ],
        decides=[
            "–" if pd.isna(d) else f"{int(d)} of {int(n)}"
            for d, n in zip(table["decides"], table["n"], strict=True)
        ],
        note=table["note"].astype(object).where(table["note"].notna(), ""),
    )
    cols = list(COLUMNS)
    if "generator" in table:
        cols.insert(cols.index("verdict") + 1, "generator")
    return out[cols].rename(columns=COLUMNS)


def csv_rows(table: pd.DataFrame, apart: pd.DataFrame) -> pd.DataFrame:
    """The rows `labels report --calibration-csv` writes: the pooled ones (generator "all")
    then each generator's, a `generator` column first."""
    parts = [table.assign(generator="all"), *([apart] if len(apart) else [])]
    rows = pd.concat(parts, ignore_index=True)
    return rows.reindex(columns=["generator", *table.columns])


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


class _Reads:
    """The store's reads, each distinct one made once and handed out as a copy: the
    engine's pooled and ROC tables each load the study and its scores again (five
    queries each), and its per-generator table six more per generator: the same reads."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._seen: dict[tuple, object] = {}

    def _once(self, how: str, sql: str, params: list | None) -> object:
        key = (how, sql, repr(params))
        if key not in self._seen:
            self._seen[key] = getattr(self._store, how)(sql, params)
        return copy.deepcopy(self._seen[key])  # the engine may add columns to a frame

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        return self._once("query", sql, params)

    def query_rows(self, sql: str, params: list | None = None) -> list[dict]:
        return self._once("query_rows", sql, params)


def _fingerprint(*frames: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for f in frames:
        h.update(pd.util.hash_pandas_object(f, index=False).to_numpy().tobytes())
        h.update(b"|")
    return h.hexdigest()


def no_auc_reasons(apart: pd.DataFrame) -> list[str]:
    """One line per generator and reason for the per-generator rows with no figures
    (e.g. a generator whose decided images are all valid), naming the filters."""
    notes = apart[apart["note"].notna()]
    lines = []
    for (gen, note), part in notes.groupby(["generator", "note"], sort=True):
        rows = ", ".join(f"{r.validator} ({r.verdict})" for r in part.itertuples())
        why = note.removeprefix("cannot calibrate: ")  # the line says no AUC already
        lines.append(f"No AUC for the {gen} images with {rows}: {why}.")
    return lines


def _by_filter(apart: pd.DataFrame) -> pd.DataFrame:
    # A filter's rows of each generator one under the other: the comparison people make.
    order = apart.assign(later=apart["verdict"].ne("validity"))
    order = order.sort_values(["validator", "later", "generator"], kind="stable")
    return shown_table(order.drop(columns="later"))


@st.cache_data(max_entries=16, show_spinner="Calibrating the filters...")
def _figures(path: str, sid: str, key: str, _reads: _Reads) -> dict:
    """What the tab shows, ready: computed once per study and state of its answers and
    scores (`key`). Each calibration is a bootstrap of its AUC (a second or more for a
    study of several generators), and the chart's spec is validated against Vega-Lite's
    schema as it is built (0.1 s); a rerun (a tick, a tab switch) changes none of them."""
    calibs = study_calibration.calibrations(_reads, sid)
    table = study_calibration.table_of(calibs)
    apart = study_calibration.calibration_by_generator(_reads, sid)
    points = study_calibration.roc_points(_reads, sid)
    return {
        "scored": not table.empty,
        "headlines": [
            calibration_headline(name, c)
            for (name, what), c in calibs.items()
            if what == "validity" and not isinstance(c, str)
        ],
        "pooled": shown_table(table),
        "roc": roc_chart(points).to_dict() if len(points) else None,
        "generators": apart["generator"].nunique(),
        "apart": _by_filter(apart),
        "reasons": no_auc_reasons(apart),
        "csv": to_csv_bytes(csv_rows(table, apart)),
    }


def figures(store: Store, sid: str) -> dict:
    """What the Calibration tab of study `sid` shows (see _figures): five store queries,
    the reads its verdicts and figures come from, and the calibrations only where they
    changed (an answer, an adjudication, a scoring) since they were last computed."""
    reads = _Reads(store)
    s = label_store.validity_study(reads, sid)
    settings = pd.DataFrame([{c: str(s[c]) for c in ("k", "rule", "seed", "resamples")}])
    key = _fingerprint(
        settings,
        label_store.items(reads, sid),
        label_store.judgements(reads, sid),
        label_store.adjudications(reads, sid),
        store_cal.study_scores(reads, sid),
    )
    return _figures(str(store.path), sid, key, reads)


def by_generator(got: dict) -> None:
    """The per-generator rows, with why a generator's row has no AUC."""
    st.markdown("**Over each generator's images apart**")
    st.caption(
        f"The same figures over the images of each of the study's {got['generators']} "
        "generators. A pooled AUC also rewards a filter for telling the generators apart "
        "when their shares of invalid images differ; these rows show what is left within each."
    )
    st.dataframe(got["apart"], hide_index=True, width="stretch", height="content")
    for line in got["reasons"]:
        st.info(line)


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
    got = figures(store, sid)
    if not got["scored"]:
        st.info(
            "No validity filter has scored this study yet: press Score the study "
            f"(or `latentfuzz labels calibrate {sid}`)."
        )
        return
    for line in got["headlines"]:
        st.markdown(f"**{line}**")
    st.dataframe(got["pooled"], hide_index=True, width="stretch")
    if got["roc"] is not None:
        st.vega_lite_chart(got["roc"], width="stretch")
    if got["generators"]:
        by_generator(got)
    st.download_button(
        "Download the calibration table (CSV)",
        got["csv"],
        f"{sid}-calibration.csv",
        "text/csv",
        help="the rows of `latentfuzz labels report --calibration-csv`: generator 'all' "
        "for the whole study, then each generator's",
    )
