"""Compare: several campaigns side by side, in the ICST layout."""

import pandas as pd
import streamlit as st
from PIL import Image

from dashboard import vega
from dashboard.compare import (
    ALPHA,
    campaign_rows,
    pivot,
    significance,
    with_auto,
    with_axes,
)
from dashboard.compare_charts import (
    by_objective,
    convergence_bands,
    failure_chart,
    failure_curves,
)
from dashboard.compare_table import (
    config_diff,
    markdown_table,
    realism_markdown,
    settings_markdown,
)
from dashboard.components import convergence_frame, load_image, side_by_side
from dashboard.data import get_home, get_store, read_set
from dashboard.differential import differential_table
from dashboard.lineage import parent_first
from dashboard.memo import kept
from dashboard.metrics import metrics_markdown
from dashboard.text import md_text, setting_label
from dashboard.url_state import url_unknown, url_widget
from engine.api import to_csv_bytes
from store import calibration as scal
from store import campaigns as sc
from store import metrics as sm
from store import studies as ss

st.title("Compare")
store, home = get_store(), get_home()
campaigns = sc.list_campaigns(store)
if len(campaigns) < 2:
    st.info("Comparing needs at least two campaigns.")
    st.stop()
studies = ss.campaign_studies(store)
labels = dict(zip(campaigns["id"], campaigns["name"], strict=True))
# A group (a study, or a grid: its cells) picks the campaigns; a link's ?id= list wins.
ANY = "(campaigns of your choice)"
#: Most validity filters given a column at once; more are chosen from a list.
MOST_FILTERS = 3
AUTO_NOTE = (
    " % valid (auto): the share of a campaign's result images that a validity filter "
    "passes, at the threshold fitted on a validity study (`latentfuzz validate ID "
    "--validator NAME=calibrated:STUDY`) or at a fixed one; no person's verdict, so never "
    "marked. –: the filter scored none of the campaign's result images (`latentfuzz "
    "validate ID` scores them)."
)
# The newest group with two campaigns or more: a one-cell grid opened on "Choose at least
# two campaigns".
several = studies.loc[studies["campaigns"] >= 2, "study"]
first = ANY if "id" in st.query_params or several.empty else several.iloc[0]
group = url_widget(
    st.selectbox,
    "Group (study or grid)",
    "group",
    [ANY, *studies["study"]],
    first,
    say_unknown=False,
)
members = ss.study_campaigns(store, group) if group != ANY else []
if group != ANY and st.session_state.get("compare:group") != group:
    st.session_state["url:id"] = members  # the group's campaigns replace the selection
st.session_state["compare:group"] = group
default = members or campaigns.head(3)["id"].tolist()
# The selection lives in the URL (?id=A&id=B): a comparison can be bookmarked and shared.
ids = url_widget(
    st.multiselect,
    "Campaigns",
    "id",
    campaigns["id"].tolist(),
    default,
    many=True,
    say_unknown=False,
    say_gone=True,
    format_func=lambda i: labels[i],
)
for param, what in (("group", "study or grid"), ("id", "campaign")):
    if gone := url_unknown(param):
        st.warning(
            f"The link names {len(gone)} {what}{'s' * (len(gone) > 1)} this store does "
            f"not hold, left out: {', '.join(gone)}. Deleted, or from another home?"
        )
if len(ids) < 2:
    st.info("Choose at least two campaigns.")
    st.stop()
ids = parent_first(ids, dict(zip(campaigns["id"], campaigns["classifier"], strict=True)))

# Set-based reads: a few queries for any number of campaigns, finished ones cached.
status = dict(zip(campaigns["id"], campaigns["status"], strict=True))
camps = read_set("campaigns", ids, status)
seed_rows = read_set("seeds", ids, status)
table, iterations, failures = campaign_rows(store, ids, camps, seed_rows)
cells = ss.grid_cells(store, ids)
if len(cells) == len(ids) and cells["grid"].nunique() == 1:
    # One grid's cells: blocked by its axes, compared along the one chosen.
    axes = list(cells["axes"].iloc[0])
    along = url_widget(
        st.selectbox,
        "Compare along (grid axis)",
        "along",
        axes,
        axes[0],
        format_func=setting_label,  # "perturbation", not "strategy_params.perturbation"
    )
    table = with_axes(table, cells, along)
# Validity filters' automatic % valid beside people's: a column per filter that scored any
# of these campaigns' result images (not cached: `validate` rescores a finished campaign).
auto = scal.auto_validity_table(store, ids)
filters = sorted(set(auto["validator"]))
if len(filters) > MOST_FILTERS:  # five filters made a table of thirteen columns
    calibrated = sorted(set(auto.loc[auto["study"].notna(), "validator"]))
    filters = st.multiselect(
        "Validity filters beside people's % validity",
        filters,
        [*calibrated, *(f for f in filters if f not in calibrated)][:MOST_FILTERS],
    )
table = with_auto(table, auto, filters)
# The sections as tabs, only the open one built and sent (as the Campaign page's): the
# charts' code (Vega's, compiled on its first chart in a browser) and the seed images made
# a third of the page's first load in a new browser (docs/measured/dashboard.md). The
# open tab is in the URL, so a shared link opens the same section.
tab_summary, tab_charts, tab_seeds = st.tabs(
    ["Summary", "Convergence", "Results by seed"], key="tab", bind="query-params"
)


def summary() -> None:
    """The comparison table, its CSV, the metrics, realism and what differs."""
    st.markdown(
        markdown_table(table, kept(significance, table, iterations)), unsafe_allow_html=True
    )
    st.caption(
        f"Campaigns are compared within blocks of equal dataset, perturbation and generation "
        f"budget, as in the ICST study; campaigns of different strategies, within blocks of "
        f"equal dataset, study (its campaigns share their seed images, whatever space they "
        f"search) and the evaluation budget per seed the study set (outside a study: equal "
        f"generator and their own evaluation budget setting, else the most their generations "
        f"let a seed cost), their iterations not compared, as a generation is a different "
        f"number of evaluations for each strategy; campaigns of different failure criteria "
        f"(two classifiers' disagreements), never together. Bold: best per column of a block "
        f"of two or more finished campaigns (one alone is compared with nothing, and marked "
        f"nothing). Underlined: not significantly different from that best (alpha {ALPHA}; "
        f"Fisher's exact test for the proportions, two-sided Mann-Whitney U for the ICST "
        f"iterations). {sc.ICST_ITERATIONS.capitalize()}; the {sc.FAILURE_ITERATIONS} is shown "
        f"beside it, unmarked. A campaign that has not finished shows its status; its figures "
        f"cover the seeds finished so far, and it takes no part in the marks. Validity and "
        f"label preservation: each labelled result image once, with the verdict of the newest "
        f"validity study that holds all its answers." + (AUTO_NOTE if filters else "")
    )
    # Made on the click: not at every run of the page.
    st.download_button(
        "Download table (CSV)", lambda: to_csv_bytes(table), "compare.csv", "text/csv"
    )
    if "along" in table.attrs:
        st.subheader(f"Grid {cells['grid'].iloc[0]}")
        st.dataframe(pivot(table), width="stretch")
        st.caption(
            "Misclassified % (#) / ICST iterations of each cell (evaluations per seed for a "
            "search of its whole budget, NSGA-II's): a row per value of the other axes (a "
            "block), a column per value of the compared axis."
        )

    st.subheader("Metrics")
    st.markdown(metrics_markdown(store, ids, labels))
    st.caption(
        "Error rate: failing / all evaluations; success rate: seeds with a failure; "
        "label diversity: wrong labels per seed; MSE and SSIM (Gaussian 11x11, sigma "
        "1.5, data range 1) of result vs seed images; failures per 1,000 evaluations; "
        "the median top-2 probability gap of the results and of the test images "
        "(SINVAD's boundary check). —: a campaign "
        "imported from another tool's results, which has no search evaluations, or one "
        "that has not finished (metrics are computed when it ends)."
    )

    st.subheader("Realism")
    realism = sm.realism_table(store, ids)
    st.markdown(realism_markdown(realism, table))
    features = ", ".join(sorted(set(realism["features"].dropna())))
    st.caption(
        "These are not Inception FIDs: FID and KID here measure how far a campaign's images "
        "(its seeds' results and archived failing inputs) lie from up to 1,000 real test "
        "images in the features of the dataset's default classifier"
        + (f" ({features})" if features else "")
        + ", not Inception-v3's. Compare campaigns of one dataset with each other, never with "
        "a published FID; lower is closer to the real images. FID is biased upwards for few "
        "images: compare campaigns with similar image counts. KID is unbiased, so it can be "
        "slightly negative. –: no realism stored (a campaign from before it, one not finished, "
        "or a dataset without a default classifier): `latentfuzz validate ID` computes it."
    )

    differential_table(store, ids, labels)
    st.subheader("Settings that differ")
    st.markdown(settings_markdown(config_diff(store, ids, camps), labels))


def convergence() -> None:
    """Median best fitness per generation (one chart per objective) and the share of
    viable seeds failed by iteration."""
    left, right = st.columns(2)
    best = dict(tuple(read_set("best_fitness", ids, status).groupby("campaign_id", sort=False)))
    empty = pd.DataFrame(
        columns=["seed_idx", "generation", "best_fitness", "evaluations", "elapsed_s"]
    )
    # The charts' names carry an unfinished campaign's status, as the tables do: its curves
    # stop where it stopped, not where the search would have.
    shown = {c: labels[c] + ("" if status[c] == "finished" else f" ({status[c]})") for c in ids}
    bands = pd.concat(
        [kept(convergence_frame, best.get(c, empty)).assign(campaign=shown[c]) for c in ids]
    )
    with left:
        st.subheader("Convergence")
        # One colour per campaign in both charts, in the selection's order.
        order = [shown[c] for c in ids]
        drawn = set(bands["campaign"])
        groups = {
            o: m for o, m in by_objective(camps, ids).items() if any(shown[c] in drawn for c in m)
        }  # a group with no rows draws nothing
        for objective, members in groups.items():
            names = [shown[c] for c in members]
            height = 300 if len(groups) == 1 else 220
            vega.chart(convergence_bands, bands, order, names, objective, height)
        if len(groups) > 1:
            st.caption(
                f"One chart per objective ({', '.join(groups)}): their fitness values have "
                "different scales and meanings, so one axis would compare numbers that do not "
                "compare."
            )
    with right:
        st.subheader("Seeds failed by iteration")
        n_viable = dict(zip(table["campaign"], table["viable"], strict=True))
        curves = failure_curves(failures, n_viable, shown)
        if curves.empty:
            st.info("No selected campaign has a misclassified seed yet.")
        else:
            vega.chart(failure_chart, curves, order)


def seed_caption(s: int, r: pd.Series) -> str:
    """One line under a seed's pair: its label and where the search took it."""
    if pd.notna(r.final_pred) and pd.notna(r.get("final_pred_b")):  # two classifiers
        outcome = f" → A {int(r.final_pred)}, B {int(r.final_pred_b)} in {int(r.iterations)}"
    elif pd.notna(r.final_pred):
        outcome = f" → {int(r.final_pred)} in {int(r.iterations)}"
    else:  # never searched, or still searching where the campaign stopped
        outcome = " (not viable)" if not bool(r.viable) else f" ({r.status})"
    return f"seed {s}: label {int(r.seed_label)}{outcome}"


def results_by_seed() -> None:
    """Each shared seed's pair (seed, result) per campaign, side by side."""
    # Seed i is the same starting point in two campaigns only when both drew their seeds the
    # same way: same dataset, generator, random seed and seed class.
    DRAW = ("dataset", "generator", "random_seed", "target_class")
    by_id = camps.set_index("id")
    draws = {c: tuple(None if pd.isna(v := by_id.loc[c, k]) else v for k in DRAW) for c in ids}
    if len(set(draws.values())) > 1:
        st.info(
            "These campaigns drew their seeds differently (dataset, generator, random seed or "
            "seed class differ), so a row shows unrelated seeds side by side, not the same seed."
        )
    per_campaign = dict(tuple(seed_rows.groupby("campaign_id", sort=False)))
    seeds = {c: per_campaign.get(c, seed_rows.iloc[:0]).set_index("seed_idx") for c in ids}
    shared = sorted(set.intersection(*(set(s.index) for s in seeds.values())))
    if not shared:
        st.info(
            "These campaigns have no seed in common (one of them has no seed rows yet), so "
            "there is nothing to show side by side."
        )
    # A slider needs two values to range over (one or no shared seed raised Streamlit's
    # min/max error).
    show = (
        st.slider("Seeds shown", 1, len(shared), min(6, len(shared)))
        if len(shared) > 1
        else len(shared)
    )
    # A column per campaign, its seeds' pairs one image list under its name: a row of
    # columns per seed made 100 of the page's 140 elements, each a message to the browser
    # (issue 36, point 7). Every pair has the same size and a one-line caption, so a seed's
    # pairs stay side by side across the columns.
    pairs = {
        c: [
            side_by_side([load_image(home, rel, scale=3) for rel in (r.seed_image, r.result_image)])
            for r in (seeds[c].loc[s] for s in shared[:show])
        ]
        for c in ids
    }
    size = next((p.size for ps in pairs.values() for p in ps if p is not None), None)
    for col, c in zip(st.columns(len(ids)), ids, strict=True):
        col.markdown(f"**{md_text(labels[c])}**")
        if size is None or not shared[:show]:
            continue
        captions = [seed_caption(s, seeds[c].loc[s]) for s in shared[:show]]
        # A missing pair keeps its place (blank), so that the rows stay aligned.
        column = [p if p is not None else Image.new("RGB", size, "white") for p in pairs[c]]
        col.image(column, caption=captions, width="stretch")


for tab, section in (
    (tab_summary, summary),
    (tab_charts, convergence),
    (tab_seeds, results_by_seed),
):
    if tab.open:
        with tab:
            section()
