"""Shared dashboard components: status bar, convergence chart, image helpers (the gallery
is dashboard/gallery.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
from PIL import Image

from dashboard.palette import categorical
from engine.api import LatentfuzzError, open_image
from store import Store, liveness
from store import campaigns as sc
from store.failures import failed_as

X_AXES = {"generation": "generation", "evaluations": "evaluations", "seconds": "elapsed_s"}
WHOLE_BUDGET_GENERATIONS = (
    "generations searched: the search went on past a seed's first failure to its budget"
)
WHOLE_BUDGET_EVALUATIONS = "mean evaluations (images classified) per viable seed"
WHOLE_BUDGET_FAILURE = "mean generation a failure was first found in (failing seeds)"


def status_bar(
    summary: dict[str, Any], n_seeds: int, whole_budget: bool = False, so_far: bool = False
) -> None:
    """GIFTbench's status bar, each counter named for what it counts. A strategy that
    searches its whole budget (NSGA-II, `Wording.whole_budget`) is told in generations and
    evaluations, with the generation a failure was first found in: its seeds' iterations
    are no search length, and "iterations" misled there. `so_far`: a running campaign's,
    whose failures count seeds still searching ("misclassified so far")."""
    a, b, *rest = st.columns(5 if whole_budget else 4)
    a.metric("viable seeds", f"{summary['viable']} of {n_seeds}")
    pct = summary.get("misclassified_pct")
    later = " so far" if so_far else ""
    if summary.get("criterion") == "targeted":
        # "reached target 7 (100%)" read as class 7 as well as 7 seeds. The share beneath,
        # as the differential split's tiles have it: "12 of 45 (27%)" was cut at 1,280 px.
        n, viable = summary["misclassified"], summary["viable"]
        b.metric(
            f"reached their target{later}",
            f"{n} of {viable}",
            None if pct is None else f"{pct:.0f}%",
            delta_color="off",
            delta_arrow="off",
            help=f"{n} of the {viable} viable seeds reached their target class{later}",
        )
    else:
        share = "" if pct is None else f" ({pct:.0f}%)"
        b.metric(failed_as(summary.get("criterion")) + later, f"{summary['misclassified']}{share}")
    icst, fail = summary.get("iterations_icst"), summary.get("iterations_to_failure")
    if whole_budget:
        gens, evals = summary.get("generations"), summary.get("evaluations_per_seed")
        rest[0].metric(
            "generations", "–" if gens is None else f"{gens:,}", help=WHOLE_BUDGET_GENERATIONS
        )
        rest[1].metric(
            "evaluations / seed",
            "–" if evals is None else f"{evals:,.0f}",
            help=WHOLE_BUDGET_EVALUATIONS,
        )
        rest[2].metric(
            "found in generation",
            "–" if fail is None else f"{fail:.1f}",
            help=WHOLE_BUDGET_FAILURE,
        )
    else:
        rest[0].metric(
            "iterations (ICST)", "–" if icst is None else f"{icst:.1f}", help=sc.ICST_ITERATIONS
        )
        rest[1].metric(
            "iterations to failure",
            "–" if fail is None else f"{fail:.1f}",
            help=sc.FAILURE_ITERATIONS,
        )
    if summary.get("interrupted"):
        resumable = summary.get("status") in liveness.RESUMABLE  # not a failed one
        st.caption(sc.unfinished_note(summary) + ("; Resume finishes them." if resumable else "."))


def convergence_frame(gens: pd.DataFrame) -> pd.DataFrame:
    """Median and inter-quartile range of best fitness per generation, over seeds.

    A seed that stopped keeps its last best (it does not vanish from the band), so the band
    describes the whole campaign rather than the seeds still searching."""
    if gens.empty:
        return pd.DataFrame(
            columns=["generation", "median", "q1", "q3", "evaluations", "elapsed_s"]
        )
    wide = gens.pivot(index="generation", columns="seed_idx", values="best_fitness").ffill()
    x = gens.groupby("generation")[["evaluations", "elapsed_s"]].median()
    return (
        pd.DataFrame(
            {
                "median": wide.median(axis=1),
                "q1": wide.quantile(0.25, axis=1),
                "q3": wide.quantile(0.75, axis=1),
            }
        )
        .join(x)
        .reset_index()
    )


#: What each objective's fitness measures, for the chart's axis: short lines, as one line
#: longer than the 320 px chart was cut at both ends ("est fitness (L1 ... class chan").
FITNESS_TITLES = {
    "margin": ["best fitness", "(margin of the expected class)"],
    "targeted": ["best fitness", "(how far the target trails", "the top other class)"],
    "boundary": ["best fitness", "(L1 distance to the seed,", "once the class changed)"],
    "escape": ["best fitness", "(L1 distance to the seed,", "once the target is reached)"],
}


def convergence_chart(
    gens: pd.DataFrame,
    x_axis: str = "generation",
    fitness: str = "margin",
    criterion: str | None = None,
) -> alt.Chart:
    """Best fitness per generation for each seed, plus median and inter-quartile band, and
    the score below which a seed fails where the objective has one."""
    # Deferred (start-up time: loads torch).
    from engine.api import FITNESS

    objective = FITNESS.get(fitness) if fitness in FITNESS.names() else None
    if objective is not None and objective.unreached is not None:
        # Until a seed reaches its goal (a changed class, the target) its fitness is a 1e6
        # constant, which flattened every distance to the axis: only generations that
        # reached it are drawn.
        gens = gens[gens["best_fitness"] < objective.unreached]
    x = X_AXES[x_axis]
    # Whole generations on the axis; points, so a seed with one row still shows.
    whole = alt.Axis(format="d", tickMinStep=1) if x != "elapsed_s" else alt.Axis()
    x_enc = alt.X(f"{x}:Q", title=x_axis, axis=whole)
    band = convergence_frame(gens)
    lines = (
        alt.Chart(gens)
        .mark_line(opacity=0.35, strokeWidth=1, point=alt.OverlayMarkDef(size=12, opacity=0.5))
        .encode(
            x=x_enc,
            y=alt.Y(
                "best_fitness:Q",
                title=FITNESS_TITLES.get(fitness, ["best fitness", f"({fitness})"]),
                # Before the first generation the axis holds the threshold alone: its one
                # tick read "0.000000".
                axis=alt.Axis(format="~g") if gens.empty else alt.Axis(),
            ),
            detail=alt.Detail("seed_idx:N"),
            tooltip=[
                alt.Tooltip(f) for f in ("seed_idx", "generation", "best_fitness", "best_pred")
            ],
        )
    )
    # Channels as objects, not "q1:Q" strings: altair hashed its whole schema to wrap each
    # string (a fifth of the chart's first build, 2 ms a channel).
    band_x = alt.X(f"{x}:Q")
    area = (
        alt.Chart(band)
        .mark_area(opacity=0.25, color="#1f77b4")
        .encode(x=band_x, y=alt.Y("q1:Q"), y2=alt.Y2("q3:Q"))
    )
    median = (
        alt.Chart(band)
        .mark_line(color="#1f77b4", strokeWidth=3)
        .encode(x=band_x, y=alt.Y("median:Q"))
    )
    chart = lines + area + median
    # Only under the criterion it goes with: a divergence or a distance has no such
    # score, and a line at 0 there read as a failure threshold that is none.
    if objective and objective.fails_below is not None and criterion in (None, objective.criterion):
        chart += (
            alt.Chart(pd.DataFrame({"y": [objective.fails_below], "what": ["fails below"]}))
            .mark_rule(strokeDash=[4, 4], color="red")
            .encode(
                y=alt.Y("y:Q"), tooltip=[alt.Tooltip("what:N", title="a seed"), alt.Tooltip("y:Q")]
            )
        )
    return chart.properties(height=320)


def top2_chart(
    gens: pd.DataFrame, class_names: tuple[str, ...], expected: int | None = None
) -> alt.Chart:
    """The two most likely classes' probabilities over generations, one line per class,
    named in the legend, the `expected` class's said so (a class that leaves the top two
    leaves a gap in its line: the store keeps those two only)."""
    parts = [
        gens[["generation", f"top{r}_label", f"top{r}_prob"]]
        .set_axis(["generation", "label", "probability"], axis=1)
        .assign(rank=f"top-{r}")
        for r in (1, 2)
    ]
    probs = pd.concat(parts).dropna(subset=["label"])
    probs["class"] = [
        class_names[int(v)] + (" (expected)" if v == expected else "") for v in probs["label"]
    ]
    # Room beyond the first and last generation, and above 1 and below 0: the points
    # there sat half cut on the chart's edges.
    edge = alt.Scale(padding=12, nice=False, zero=False)
    return (
        alt.Chart(probs)
        .mark_line(point=True)
        .encode(
            x=alt.X("generation:Q", axis=alt.Axis(format="d", tickMinStep=1), scale=edge),
            y=alt.Y("probability:Q", scale=alt.Scale(domain=[0, 1], padding=8)),
            color=categorical("class", "class"),
            tooltip=[
                "generation:Q",
                "class:N",
                "rank:N",
                alt.Tooltip("probability:Q", format=".3f"),
            ],
        )
        .properties(height=220)
    )


#: Longest side an image is enlarged to: a large stored image is shown at its own size.
SHOWN_SIDE = 2048


def load_image(home: Path, rel: str | None, scale: int = 4) -> Image.Image | None:
    """A stored image, enlarged without smoothing so that pixels stay visible; None when
    it is missing, unreadable, declares too many pixels, or lies outside `home`. Stores
    hold paths that came from files users shared (study CSVs, bundles): one that leaves the
    home (absolute, `..`, a symlink) is never opened, whatever let it in."""
    if not isinstance(rel, str) or not rel.strip():
        return None
    try:
        with open_image(rel, "image", root=home) as img:
            scale = max(1, min(scale, SHOWN_SIDE // max(img.width, img.height, 1)))
            return img.resize((img.width * scale, img.height * scale), Image.NEAREST)
    except (LatentfuzzError, OSError, SyntaxError, ValueError):
        return None


#: Pixels between the images of a side-by-side pair.
PAIR_GAP = 6


def side_by_side(images: list[Image.Image | None]) -> Image.Image | None:
    """The images beside each other on white, a gap apart (a missing one leaves its place
    empty, so columns stay aligned); None when every one is missing. One image for a pair:
    Compare drew 60 images, each its own element, a third of its page run."""
    shown = [i for i in images if i is not None]
    if not shown:
        return None
    w, h = max(i.width for i in shown), max(i.height for i in shown)
    out = Image.new("RGB", (len(images) * w + (len(images) - 1) * PAIR_GAP, h), "white")
    for k, img in enumerate(images):
        if img is not None:
            out.paste(img.convert("RGB"), (k * (w + PAIR_GAP), 0))
    return out


def study_table(t: pd.DataFrame, by: list[str], store: Store | None = None) -> pd.DataFrame:
    """A group_table (engine.labelling.statistics) in the paper's layout: % (#) with its 95% CI; by
    campaign, each named as on every other page beside its id (from `store`)."""

    def pct(v: float) -> str:
        return "–" if pd.isna(v) else f"{v:.1f}"

    # Deferred (start-up time: loads scipy, for the Studies page only).
    from engine.api import label_stats

    names = {"generator": "generator", "preset": "perturbation", "campaign_id": "campaign"}
    # group_table adds kind and strategy columns where a study mixes result and seed
    # images, or strategies: without them two rows of one generator read as duplicates.
    by = label_stats.group_keys(t) or list(by)
    # A strategy without perturbation presets (SINVAD, Argus) showed "None".
    out = t[by].map(label_stats.key_text).rename(columns=names)
    if "campaign" in out and store is not None:
        camps = sc.campaigns_by_id(store, out["campaign"].dropna().tolist())
        named = dict(zip(camps["id"], camps["name"], strict=True))
        out.insert(out.columns.get_loc("campaign") + 1, "name", out["campaign"].map(named))
    out["images"] = t["n"]
    out["% validity (#)"] = [f"{pct(p)} ({n})" for p, n in zip(t.valid_pct, t.valid, strict=True)]
    out["validity 95% CI"] = t["valid_ci"]
    out["% label preservation (#)"] = [
        f"{pct(p)} ({n})" for p, n in zip(t.preserved_pct, t.preserved, strict=True)
    ]
    out["preservation 95% CI"] = t["preserved_ci"]
    out["validity undecided"] = t["undecided_validity"]
    out["preservation undecided"] = t["undecided_preservation"]
    return out
