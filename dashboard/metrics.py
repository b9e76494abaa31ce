"""Per-campaign metrics on the Campaign and Compare pages (engine/campaign/metrics.py
defines them)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from dashboard import vega
from dashboard.palette import categorical
from dashboard.text import md_text
from store import Store, liveness
from store import campaigns as sc
from store import interpolation as si
from store import metrics as sm

FORMATS = {
    "error_rate": ".3f",
    "success_rate": ".2f",
    "label_diversity": ".2f",
    "mean_mse": ".4f",
    "mean_ssim": ".3f",
    "failures_per_1k": ".2f",
    "result_gap_median": ".3f",
    "test_gap_median": ".3f",
}


def cell(v: Any, key: str) -> str:
    return "–" if v is None or pd.isna(v) else format(v, FORMATS[key])


def gap_histogram(m: dict[str, Any]) -> alt.Chart:
    """Top-2 probability gaps of the result images against the test images (SINVAD's
    boundary check), as shares of each group so different sizes compare."""
    df = pd.concat(
        [
            pd.DataFrame({"gap": m["result_gaps"], "images": "results"}),
            pd.DataFrame({"gap": m["test_gaps"], "images": "test images"}),
        ]
    )
    return (
        alt.Chart(df)
        .transform_joinaggregate(total="count()", groupby=["images"])
        .transform_calculate(share="1 / datum.total")
        .mark_bar(opacity=0.6)
        .encode(
            x=alt.X(
                "gap:Q",
                bin=alt.Bin(extent=[0, 1], step=0.05),
                title="top-1 minus top-2 probability",
            ),
            y=alt.Y("sum(share):Q", title="share of images", stack=None),
            color=categorical("images"),
        )
        .properties(height=220)
    )


def metrics_panel(
    store: Store, campaign_id: str, status: str = "finished", strategy: str | None = None
) -> None:
    """The metrics of a finished campaign, and its gap histogram; for an interpolation
    campaign, Argus's figures per lambda too."""
    m = sm.metrics(store, campaign_id)
    if m is None:
        if status == "finished":
            # Its process ended between closing the campaign and writing them.
            st.info(
                "No metrics were stored for this campaign: its process ended before writing them."
            )
        else:
            st.info(
                f"Metrics are stored when the campaign finishes; this one is {status}"
                + (": resume it above." if status in liveness.RESUMABLE else ".")
            )
        return
    # A table rather than st.metric tiles: the status bar above keeps its four counters.
    st.markdown(
        "| "
        + " | ".join(sm.METRIC_LABELS.values())
        + " |\n"
        + "|---" * len(sm.METRIC_LABELS)
        + "|\n"
        + "| "
        + " | ".join(cell(m[k], k) for k in sm.METRIC_LABELS)
        + " |"
    )
    interpolation = strategy == "interpolate"
    st.caption(
        f"Over {m['evaluations']:,} search evaluations"
        + (", pooled over every lambda (per lambda below)" if interpolation else "")
        + ". SSIM: Gaussian window 11x11, sigma 1.5, data range 1; a failure = a seed with "
        "at least one failing evaluation."
    )
    if m["result_gaps"]:
        vega.chart(gap_histogram, m)
    if not interpolation:
        return
    df = si.per_lambda(store, campaign_id)
    if df.empty:
        return
    st.markdown("**Argus's figures per lambda** (one generation each)")
    st.dataframe(by_lambda(df), width="stretch")
    st.caption(
        "ER: misclassified images / images at that lambda; SR: seeds with a misclassified "
        "image / seeds; label diversity: distinct wrong labels per seed; MSE and SSIM of "
        "every image at that lambda to the original test image its seed was encoded from, "
        "and to the decoded seed. Pooled: over every lambda. " + " ".join(si.unmeasured(df))
    )


#: by_lambda's rows: (per_lambda column, label, format).
PER_LAMBDA_ROWS = (
    ("seeds", "seeds", "d"),
    ("evaluations", "images", ",d"),
    ("error_rate", "ER", ".3f"),
    ("success_rate", "SR", ".2f"),
    ("label_diversity", "label diversity", ".2f"),
    ("mse_original", "MSE to the original", ".4f"),
    ("ssim_original", "SSIM to the original", ".3f"),
    ("mse_seed", "MSE to the decoded seed", ".4f"),
    ("ssim_seed", "SSIM to the decoded seed", ".3f"),
)


def by_lambda(df: pd.DataFrame) -> pd.DataFrame:
    """store.interpolation.per_lambda's frame as text, a column per lambda and a last one
    pooled over them, a figure per row."""

    def text(v: Any, spec: str) -> str:
        if v is None or pd.isna(v):
            return "–"
        return format(int(v), spec) if spec.endswith("d") else format(v, spec)

    out = pd.DataFrame(
        {label: [text(v, spec) for v in df[col]] for col, label, spec in PER_LAMBDA_ROWS}
    )
    names = zip(df["pooled"], df["lambda"], strict=True)
    out.index = ["pooled" if pooled else f"{lam:.2f}" for pooled, lam in names]
    return out.T.rename_axis("lambda")  # the corner cell above the figures' names


#: Compare's headers: three more columns than the Campaign page's table, whose long
#: headers ran the table past the page's column; its caption says what each measures.
SHORT = {
    "error_rate": "error rate",
    "success_rate": "success rate",
    "label_diversity": "label diversity",
    "mean_mse": "MSE",
    "mean_ssim": "SSIM",
    "failures_per_1k": "failures / 1k evals",
    "result_gap_median": "top-2 gap, results",
    "test_gap_median": "top-2 gap, test images",
}


def metrics_markdown(store: Store, ids: list[str], names: dict[str, str]) -> str:
    """One markdown row of metrics per campaign; a campaign that has not finished has
    none yet (they are computed once its search ends) and says its status."""
    df = sm.metrics_table(store, ids).set_index("campaign_id")
    camps = sc.campaigns_by_id(store, ids).set_index("id")
    strategies = camps["strategy"]
    imported = set(camps.index[camps["kind"] == "imported"]) if "kind" in camps else set()
    keys = list(sm.METRIC_LABELS)
    out = [
        "| campaign | strategy | evaluations | " + " | ".join(SHORT[k] for k in keys) + " |",
        "|---" * (3 + len(keys)) + "|",
    ]

    def without(name: str, cid: str) -> str:
        return (
            f"| {name} | {md_text(strategies[cid])} | — | " + " | ".join("—" for _ in keys) + " |"
        )

    for cid in ids:
        name = md_text(names.get(cid, cid))
        if cid in imported:  # another tool's results: no search evaluations to measure
            out.append(without(name, cid))
            continue
        if cid not in df.index:
            if (status := camps.loc[cid, "status"]) != "finished":  # computed at its end
                out.append(without(f"{name} *({status})*", cid))
            continue
        r = df.loc[cid]
        strategy = strategies[cid]
        out.append(
            f"| {name} | {md_text(strategy)} | {int(r['evaluations']):,} | "
            + " | ".join(cell(r[k], k) for k in keys)
            + " |"
        )
    return "\n".join(out)
