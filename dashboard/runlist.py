"""The Campaigns page's table as a workbench: the columns that tell runs apart first, a
sort kept in the URL, and ticked rows that stay with their campaigns when the list
refreshes or reorders."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from store import campaigns as sc
from store.failures import failed_as

#: What counts as a failing seed, by failure criterion (store.failures names them).
FAILS_WHEN = {
    "misclassified": "the classifier labels the image other than its expected class",
    "targeted": "the search reached its target class (a targeted or class-escape campaign)",
    "disagree": "classifiers A and B label the image differently (a campaign of two)",
}
#: Why a search of the whole budget has blank iteration cells.
WHOLE_BUDGET = (
    "Blank for a campaign that searches its whole budget past the first failure (NSGA-II): "
    "its seeds have no search length in iterations; its generations and evaluations per "
    "seed are given instead."
)
GENERATIONS_HELP = (
    "Generation budget each seed searches whole, not stopping at its first failure "
    "(NSGA-II); a wall-clock budget may end it sooner."
)
EVALUATIONS_HELP = "Evaluations (images classified) per viable seed, mean."

#: The shown columns, in order: the figures that tell runs apart right after the name, so
#: that they fit 1,280 px beside the sidebar (they sat off-screen at 1,400 px). `columns`
#: puts a whole-budget search's generations and evaluations in the iterations' place when
#: every campaign shown has them.
COLUMNS = (
    "open",
    "name",
    "misclassified_pct",
    "iterations_icst",
    "misclassified",
    "iterations_to_failure",
    "viable_seeds",
    "seeds",
    "generations",
    "evaluations_per_seed",
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
ITERATIONS = ("iterations_icst", "iterations_to_failure")
WHOLE = ("generations", "evaluations_per_seed")

#: ?sort= values: (column sorted, its label, the direction a click on it first wants).
SORTS = {
    "started": ("created_at", "started", "desc"),
    # "failed": the glossary's neutral word, as the list mixes failure criteria.
    "misclassified": ("misclassified_pct", "failed %", "desc"),
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
    """The list_campaigns rows (with tags) as shown: the id first (hidden, for the ticks),
    one column per COLUMNS entry in the order `columns` gives, then the failure criterion
    and whether the search ran its whole budget (hidden, for the headers)."""
    whole = df["whole_budget"].astype(bool)
    view = df.assign(
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
        # A whole-budget search's iterations are the generation a failure was first found
        # in, no search length: blank (WHOLE_BUDGET), its generations and evaluations
        # instead; the others' generations vary by seed and are their iterations.
        iterations_icst=df["iterations_icst"].astype(float).mask(whole),
        iterations_to_failure=df["iterations_to_failure"].astype(float).mask(whole),
        generations=df["generation_budget"].astype(float).where(whole),
        evaluations_per_seed=df["evaluations_per_seed"].astype(float).round(0).where(whole),
    )
    return view[["id", *columns(whole), "criterion", "whole_budget"]]


def columns(whole: pd.Series) -> list[str]:
    """COLUMNS in the order shown: where every campaign searches its whole budget, its
    generations and evaluations take the iterations' place (those go last, hidden)."""
    if len(whole) and whole.all():
        swap = dict(zip(ITERATIONS, WHOLE, strict=True))
        return [*(swap.get(c, c) for c in COLUMNS if c not in WHOLE), *ITERATIONS]
    return list(COLUMNS)


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


def failed_words(criteria: pd.Series) -> tuple[str, str]:
    """The failure columns' word and help for the campaigns shown: their criterion's own
    word where they share one ("A and B disagree"), else the glossary's neutral "failed"
    with what counts as a failure under each criterion shown ("misclassified %" headed
    reached targets and disagreements)."""
    shown = list(dict.fromkeys(criteria.fillna("misclassified"))) or list(FAILS_WHEN)
    if len(shown) == 1:
        word = failed_as(shown[0])
        return word, f"Viable seeds that failed: {FAILS_WHEN.get(shown[0], word)}."
    each = "; ".join(f"{failed_as(c)}: {FAILS_WHEN.get(c, c)}" for c in shown)
    return (
        "failed",
        f"Viable seeds whose search found a failure by its campaign's criterion: {each}.",
    )


def _width(label: str, least: int) -> int:
    """Pixels that show a header whole: about 6 px a character at the grid's font (18
    characters, "A and B disagree %", took 111 px), plus the cell's padding."""
    return max(least, 6 * len(label) + 24)


def column_config(view: pd.DataFrame) -> dict:
    """People's words for every column, widths that put the result figures on screen."""
    num = st.column_config.NumberColumn
    word, failed_help = failed_words(view["criterion"])
    whole = view["whole_budget"].astype(bool)
    mixed = whole.any() and not whole.all()
    pct = f"{word} %"
    config = {
        "id": None,  # hidden: what a tick stands for
        "criterion": None,
        "whole_budget": None,
        "open": st.column_config.LinkColumn(
            "campaign", display_text=r"id=(.*)", width=165, pinned=True
        ),
        "name": st.column_config.TextColumn("name", width=150, pinned=True),
        "misclassified_pct": num(pct, format="%.1f", width=_width(pct, 105), help=failed_help),
        "iterations_icst": num(
            "iterations (ICST)",
            format="%.1f",
            width=115,
            help=f"{sc.ICST_ITERATIONS}. {WHOLE_BUDGET if mixed else ''}".strip(),
        ),
        # One column for every campaign's failing seeds; what a failure is, in its help.
        "misclassified": num(word, width=_width(word, 95), help=failed_help),
        "iterations_to_failure": num(
            "iterations to failure",
            format="%.1f",
            width=130,
            help=f"{sc.FAILURE_ITERATIONS}. {WHOLE_BUDGET if mixed else ''}".strip(),
        ),
        "viable_seeds": num("viable seeds", width=90),
        "seeds": num("of seeds", width=70),
        # Narrow: beside a criterion's longer words ("A and B disagree %") the first six
        # columns still fit the 790 px a 1,280 px window leaves the table.
        "generations": num("generations", format="%d", width=85, help=GENERATIONS_HELP),
        "evaluations_per_seed": num(
            "evaluations", format="localized", width=97, help=EVALUATIONS_HELP
        ),
        "tags": st.column_config.TextColumn("tags", width=tags_width(view["tags"])),
        "preset": st.column_config.TextColumn("perturbation"),
        "created_at": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm"),
        "duration_s": num("duration (s)", format="%.1f"),
    }
    # Only the columns that say something of the campaigns shown: no whole-budget search,
    # no generations; only whole-budget searches, no iterations.
    for c in WHOLE if not whole.any() else ITERATIONS if whole.all() else ():
        config[c] = None
    return config


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
