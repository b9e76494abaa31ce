"""A differential campaign on the Campaign page: its figures, who is right, where the two
classifiers disagree, the Pareto front per generation and the triggering inputs."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from dashboard.components import load_image
from engine.api import STRATEGIES, to_csv_bytes
from store import Store
from store import campaigns as sc
from store import differential as sd
from store import metrics as sm

PAGE = 24  # triggering inputs per gallery page
PER_ROW = 6
SPLIT = {"only_a_right": "only A right", "only_b_right": "only B right", "both_wrong": "both wrong"}


def _num(v, spec: str = ".1f") -> str:
    return "–" if v is None else f"{v:{spec}}"


#: Differential tiles per row: six in one row cut labels and units off at 1,280 px
#: ("per 1,000 evaluati…", "0.69 …"); three keep each whole.
TILES_PER_ROW = 3


def figures_row(figs: dict) -> None:
    """The campaign's differential figures, in rows of TILES_PER_ROW tiles."""
    valid = figs.get("valid_triggering")
    geo = figs.get("geometric_diversity")
    shannon = figs.get("shannon_diversity")
    ent = figs.get("label_entropy")
    tiles = [
        ("triggering inputs", figs["triggering"], "distinct images A and B label differently"),
        (
            "per 1,000 evaluations",
            _num(figs.get("triggering_per_1k")),
            "triggering inputs per 1,000 search evaluations (images classified)",
        ),
        (
            "valid (all filters)",
            "–" if valid is None else valid,
            "triggering inputs every validity filter accepts",
        ),
        ("geometric diversity", "–" if geo is None else f"{geo:.1f}", geometric_help(figs)),
        (
            "Shannon diversity",
            "–" if shannon is None else f"{shannon:.2f} nats",
            "DiffGAN's: -Σ p ln p over the valid triggering inputs' intended classes",
        ),
        (
            "label-pair entropy",
            # max: a single label pair's entropy came out as -0.00 (a rounding error below zero).
            "–" if ent is None else f"{max(ent, 0.0):.2f} bits",
            "Shannon entropy of the (label A, label B) pairs (not DiffGAN's Shannon diversity)",
        ),
    ]
    for start in range(0, len(tiles), TILES_PER_ROW):
        row = tiles[start : start + TILES_PER_ROW]
        for col, (label, value, why) in zip(st.columns(TILES_PER_ROW), row, strict=False):
            col.metric(label, value, help=why)


def geometric_help(figs: dict) -> str:
    """What the geometric diversity is and how the stored one was measured (figures stored
    before the draws were a parameter: one draw of the penultimate layer). It read
    "-4201.0" with nothing to say that a negative value is normal."""
    draws = figs.get("geometric_draws", 1)
    features = figs.get("geometric_features", "penultimate")
    subset = figs.get("geometric_subset")
    return (
        f"DiffGAN's geometric diversity: the natural log-determinant of the Gram matrix of "
        f"{subset} valid triggering inputs' L2-normalised features ({features} features of "
        f"the default classifier), mean over {draws} draw(s) of {subset} inputs. Each "
        "feature vector has length 1, so the determinant is at most 1 and its log at most "
        "0 (reached when the features are mutually orthogonal): negative values are "
        "normal, and they grow more negative with more inputs. Higher (nearer 0) is more "
        "diverse; compare it only between campaigns with the same subset size. – where "
        "the matrix is singular (two inputs with the same features)."
    )


def split_tiles(arch: pd.DataFrame, where) -> None:
    """Who is right against the generator's intended label, as counts and shares."""
    y, a, b = arch["label"], arch["pred"], arch["pred_b"]
    counts = {
        "only A right": int(((a == y) & (b != y)).sum()),
        "only B right": int(((b == y) & (a != y)).sum()),
        "both wrong": int(((a != y) & (b != y)).sum()),
    }
    where.markdown("**Who is right** (against the generator's intended label)")
    cols = where.columns(3)
    for col, (name, n) in zip(cols, counts.items(), strict=True):
        col.metric(name, n, f"{n / len(arch):.0%}", delta_color="off", delta_arrow="off")


def disagreement_heatmap(arch: pd.DataFrame, names: list[str]) -> alt.Chart:
    df = arch.groupby(["pred", "pred_b"]).size().rename("inputs").reset_index()
    df["A"] = [names[int(i)] for i in df["pred"]]
    df["B"] = [names[int(i)] for i in df["pred_b"]]
    # Every class named on both axes (vega would hide every other label to avoid overlap).
    axis = alt.Axis(labelOverlap=False, labelAngle=0)
    base = alt.Chart(df, title="label A x label B").encode(
        x=alt.X("B:O", sort=names, title="classifier B's label", axis=axis),
        y=alt.Y("A:O", sort=names, title="classifier A's label", axis=axis),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("inputs:Q", scale=alt.Scale(scheme="orangered")),
        tooltip=["A", "B", "inputs"],
    )
    text = base.mark_text(fontSize=10).encode(text="inputs:Q")
    return (rect + text).properties(width=300, height=300)


def pareto_front(f1: np.ndarray, f2: np.ndarray) -> np.ndarray:
    """Mask of the non-dominated points, both objectives maximised."""
    # Deferred (start-up time: loads pymoo).
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    if not len(f1):
        return np.zeros(0, bool)
    front = NonDominatedSorting().do(-np.stack([f1, f2], 1), only_non_dominated_front=True)
    mask = np.zeros(len(f1), bool)
    mask[front] = True
    return mask


def pareto_panel(store: Store, cid: str, seeds: list[int]) -> None:
    left, right = st.columns([1, 3])
    seed = left.selectbox("Search", seeds, key="pareto_seed", help="each seed is one NSGA-II run")
    df = sd.pareto(store, cid, int(seed))
    if df.empty:
        right.info("No generation recorded yet.")
        return
    gens = sorted(df["generation"].unique())
    g = gens[0] if len(gens) == 1 else left.select_slider("Generation", gens, value=gens[-1])
    now = df[df["generation"] == g].copy()
    now["divergence"] = -now["fitness"]
    now["diversity"] = now["objective2"]
    front = pareto_front(now["divergence"].to_numpy(), now["diversity"].to_numpy())
    # Words in the legend, not "false"/"true".
    now["point"] = np.where(front, "on the front", "dominated")
    now["labels"] = np.where(now["pred"] != now["pred_b"], "A ≠ B", "A = B")
    chart = (
        alt.Chart(now, title=f"generation {g}: divergence vs diversity")
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X("divergence:Q", title="divergence (A vs B)"),
            y=alt.Y("diversity:Q", title="diversity (cosine distance to finds)"),
            color=alt.Color(
                "point:N",
                title="",
                scale=alt.Scale(domain=["dominated", "on the front"], range=["#bbbbbb", "#d55e00"]),
            ),
            shape=alt.Shape("labels:N", title=""),
            tooltip=["individual", "divergence", "diversity", "pred", "pred_b"],
        )
        .properties(height=300)
    )
    right.altair_chart(chart, width="stretch")


def verdict(name: str, score: float, threshold: float | None, valid: bool | None) -> str:
    """One filter's score with its threshold and pass / fail: "ssim-nearest 0.41 ≥ 0.30
    ✓ valid" (cards showed the score alone, which said nothing without the threshold)."""
    if score is None or pd.isna(score):
        return f"{name} not scored"
    if threshold is None or pd.isna(threshold):
        return f"{name} {score:.2f} " + ("✓ valid" if valid else "✗ invalid")
    # The filter's own verdict, stored with its score (a score reaching the threshold).
    sign, word = ("≥", "✓ valid") if valid else ("<", "✗ invalid")
    return f"{name} {score:.2f} {sign} {threshold:.2f} {word}"


def triggering_gallery(
    home: Path,
    arch: pd.DataFrame,
    names: list[str],
    filters: list[str],
    thresholds: dict[str, float] | None = None,
):
    n = len(arch)
    if not n:
        st.info("No triggering input matches.")
        return
    thresholds = thresholds or {}
    pages = (n + PAGE - 1) // PAGE
    page = st.number_input(f"Page (of {pages})", 1, pages, 1, key="trig_page") if pages > 1 else 1
    chunk = arch.iloc[(page - 1) * PAGE : page * PAGE]
    for start in range(0, len(chunk), PER_ROW):
        cols = st.columns(PER_ROW)
        for col, r in zip(cols, chunk.iloc[start : start + PER_ROW].itertuples(), strict=False):
            img = load_image(home, r.image, scale=3)
            if img is not None:
                col.image(img, width="stretch")
            # One filter a line: four verdicts in one run of text read as a paragraph.
            scores = "  \n".join(
                verdict(
                    f,
                    getattr(r, "score_" + f.replace("-", "_"), None),
                    thresholds.get(f),
                    getattr(r, "valid_" + f.replace("-", "_"), None),
                )
                for f in filters
            )
            col.caption(
                f"#{r.entry}: A **{names[int(r.pred)]}**, B **{names[int(r.pred_b)]}** "
                f"(intended {names[int(r.label)]})" + ("  \n" + scores if scores else "")
            )


def human_split(store: Store, cid: str, where) -> None:
    """Which classifier labellers side with, from every study of this campaign's
    triggering inputs (engine.labelling.statistics.model_agreement)."""
    # Deferred (start-up time: loads scipy).
    from engine.api import label_stats

    frames = []
    for sid in sd.triggering_validity_studies(store, cid):
        s, v, _ = label_stats.load(store, sid)
        t = label_stats.model_agreement(v[v["campaign_id"] == cid], s["rule"])
        frames.append(t.assign(study=s["name"]))
    if not frames:
        where.caption(
            "No validity study covers these inputs yet: the split above is "
            "against the generator's intended label only."
        )
        return
    where.markdown("**Against human labels** (valid inputs, the study's rule)")
    cols = [
        "study",
        "labelled",
        "valid",
        "humans_agree_a",
        "humans_agree_b",
        "humans_agree_neither",
        "undecided",
    ]
    # Short headers: the long ones ran the table past its half of the page.
    short = {"humans_agree_a": "A's", "humans_agree_b": "B's", "humans_agree_neither": "other"}
    where.dataframe(pd.concat(frames)[cols].rename(columns=short), hide_index=True, width="stretch")
    where.caption(
        "Of the inputs judged valid: how many the labellers give A's label, B's, or another."
    )


def differential_panel(store: Store, home: Path, cid: str, names: list[str]) -> None:
    """Nothing for a campaign with one classifier."""
    c = sc.campaign(store, cid)
    if c is None or not c.get("classifier_b"):
        return
    st.subheader("Differential testing")
    st.caption(f"A = {c['classifier']}, B = {c['classifier_b']}")
    m = sm.metrics(store, cid)
    if m is not None and m.get("differential"):
        figures_row(m["differential"])
    elif m is not None:
        st.info(
            f"No differential figures stored (the campaign searched nothing, or its "
            f"validity pass did not finish): `latentfuzz validate {cid}` computes "
            "them."
        )
    arch = sd.archive(store, cid)
    arch = arch[arch["pred_b"].notna()]
    arch.columns = [col.replace("-", "_") for col in arch.columns]
    filters = sorted(col.removeprefix("valid_") for col in arch.columns if col.startswith("valid_"))
    only_valid = st.toggle(
        "Valid inputs only",
        value=False,
        disabled=not filters,
        help="keep the inputs every validity filter accepts"
        + (f" ({', '.join(filters)})" if filters else " (no filter has scored them yet)"),
    )
    shown = arch[arch["valid"]] if only_valid and filters else arch
    if shown.empty:
        st.info("No triggering input yet." if arch.empty else "No valid triggering input.")
    else:
        left, right = st.columns(2)
        left.altair_chart(disagreement_heatmap(shown, names))
        split_tiles(shown, right)
        human_split(store, cid, right)
    seeds = sorted(sc.seeds(store, cid).query("viable")["seed_idx"].tolist())
    # A strategy that records a second objective has a Pareto front to show; DiffGAN's
    # ablation (NSGA-II on divergence alone) has none.
    params = (c.get("config") or {}).get("strategy_params") or {}
    if params.get("objectives") == "divergence":
        st.caption("NSGA-II on divergence alone (DiffGAN's ablation): no diversity objective.")
    elif c["strategy"] in STRATEGIES and STRATEGIES.get(c["strategy"]).multi_objective and seeds:
        with st.expander("Pareto front per generation", expanded=True):
            pareto_panel(store, cid, seeds)
    with st.expander(f"Triggering inputs ({len(shown)})", expanded=True):
        scored = sd.validity(store, cid)
        scored = scored[scored["kind"] == "archive"]
        thresholds = scored.groupby("validator")["threshold"].first().to_dict()
        triggering_gallery(home, shown, names, [f.replace("_", "-") for f in filters], thresholds)
    st.download_button(
        "Download triggering inputs (CSV)",
        to_csv_bytes(shown),
        f"{cid}-triggering.csv",
        "text/csv",
    )


#: Compare's columns for differential campaigns, in order, with their headers.
COMPARE_COLUMNS = {
    "classifier": "A",
    "classifier_b": "B",
    "strategy": "strategy",
    "evaluations": "evaluations",
    "triggering": "triggering",
    "triggering_per_1k": "triggering / 1k evals",
    "valid_triggering": "valid",
    "valid_triggering_per_1k": "valid / 1k evals",
    "geometric_diversity": "geometric diversity (valid)",
    "geometric_subset": "subset",
    "geometric_draws": "draws",
    "shannon_diversity": "Shannon diversity (valid, nats)",
    "label_entropy": "label-pair entropy (valid, bits)",
    "only_a_right": "only A right",
    "only_b_right": "only B right",
    "both_wrong": "both wrong",
}


def differential_table(store: Store, ids: list[str], labels: dict[str, str]) -> None:
    """Compare's own table for the differential campaigns among `ids` (nothing if none)."""
    df = sd.differential_table(store, ids)
    if df.empty:
        return
    st.subheader("Differential testing")
    out = df.reindex(columns=["campaign_id", *COMPARE_COLUMNS]).rename(columns=COMPARE_COLUMNS)
    out.insert(0, "campaign", [labels.get(c, c) for c in df["campaign_id"]])
    out = out.drop(columns=["campaign_id"])
    # One decimal, as on the Campaign page (it showed "281.3333").
    floats = {
        c: st.column_config.NumberColumn(format="%.1f")
        for c in out.columns
        if pd.api.types.is_float_dtype(out[c])
    }
    st.dataframe(out, hide_index=True, width="stretch", column_config=floats)
    st.caption(
        "Triggering inputs: distinct images A and B label differently. Valid: every "
        "validity filter accepts them. Geometric diversity: mean log det of the Gram "
        "matrix of normalised classifier features over random subsets (size and draws "
        "beside it); compare it only at equal subset size. Shannon diversity: DiffGAN's, "
        "over the intended classes."
    )
