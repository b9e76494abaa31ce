"""The Campaign page's gallery: every seed counted by status, filterable, sortable and
paginated, the same while the campaign runs (its failures so far) and after.

A 300-seed campaign drawn at once was one 9,675 px page, and non-viable seeds vanished from
it without a note. Here the counts come first, filters choose what to show (status,
expected and predicted class, iterations), a sort orders it, and pages of PAGE_SIZE keep the
page short. Every filter and the sort live in the URL (`gallery_*` query parameters), so a
view of "misclassified 7s, fewest iterations first" can be shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.components import load_image, side_by_side
from dashboard.so_far import FAILING, best_so_far, decided_live, said_as, so_far_text
from dashboard.url_state import url_int, url_int_written, url_widget
from store.failures import status_as, target_outcome

PAGE_SIZE = 12
#: Seed statuses in the order they are counted and offered (store.schema.SEED_STATUSES).
SHOWN = ("misclassified", FAILING, "survived", "non-viable", "interrupted", "searching")
#: Statuses not shown unless asked: never searched, or not searched to an outcome yet (a
#: running campaign's gallery opened on seeds without a result image).
HIDDEN = ("non-viable", "searching")
#: The sort orders, as the URL holds them ("-": most first); "seed" the default.
SORTS = ("seed", "iterations", "-iterations")


@dataclass(frozen=True)
class Wording:
    """How a campaign's seeds are told: its failure criterion (store.failures), and
    whether its strategy searches its whole budget past the first failure (NSGA-II,
    Argus's interpolation), whose `iterations` is then the generation a failure was first
    found in, not the length of the search (`wording_of` asks the strategy)."""

    criterion: str | None = None
    whole_budget: bool = False
    #: The campaign's target class, for seeds whose row names none (a `target_class`
    #: campaign stores it once; an escape campaign's seeds each have their own).
    target: int | None = None
    #: Whether a generations row's best prediction says if the seed has failed so far:
    #: where the fitness is the one that goes with the criterion, the best individual
    #: fails whenever one does. (A margin search under `criterion: targeted` may hold a
    #: target-reaching individual that is not its best: its seeds stay "searching".)
    decided_live: bool = False

    @property
    def unit(self) -> str:
        return "generation found" if self.whole_budget else "iterations"

    def most(self) -> str:
        return "Found by generation" if self.whole_budget else "At most iterations"

    def sort_label(self, key: str) -> str:
        if key == "seed":
            return "seed"
        return f"{self.unit}, {'fewest' if key == 'iterations' else 'most'} first"


def wording_of(campaign: dict) -> Wording:
    """A campaign's Wording, its strategy asked whether it stops a seed at its first
    failure (each strategy's `stop_at_failure` setting and its default; no strategy is
    named here)."""
    # Deferred (start-up time: loads torch).
    from engine.api import STRATEGIES

    cfg = campaign.get("config") or {}
    name = campaign.get("strategy")
    whole = False
    if name in STRATEGIES:
        try:
            params = STRATEGIES.get(name).Params.model_validate(cfg.get("strategy_params") or {})
        except ValueError:  # a stored config an older version wrote: the usual words
            params = None
        whole = params is not None and not getattr(params, "stop_at_failure", True)
    target = campaign.get("target_class")
    return Wording(
        cfg.get("criterion"), whole, None if pd.isna(target) else int(target), decided_live(cfg)
    )


def filter_seeds(
    seeds: pd.DataFrame,
    statuses: list[str],
    classes: list[int],
    max_iterations: int | None,
    predicted: list[int] | None = None,
) -> pd.DataFrame:
    """The seeds with one of `statuses`, expected class in `classes` and final prediction
    in `predicted` (all when empty), and at most `max_iterations` (None: any)."""
    out = seeds[seeds["status"].isin(statuses)]
    if classes:
        out = out[out["seed_label"].isin(classes)]
    if predicted:
        out = out[out["final_pred"].isin(predicted)]
    if max_iterations is not None:
        out = out[out["iterations"].fillna(0) <= max_iterations]
    return out


def sort_seeds(seeds: pd.DataFrame, key: str) -> pd.DataFrame:
    """`seeds` in a SORTS order; seeds without iterations yet (searching) last, ties by
    seed, so a page holds the same seeds at every rerun."""
    if key == "seed":
        return seeds.sort_values("seed_idx", kind="stable")
    return seeds.sort_values(
        ["iterations", "seed_idx"],
        ascending=[key == "iterations", True],
        na_position="last",
        kind="stable",
    )


def gallery(
    seeds: pd.DataFrame,
    home: Path,
    class_names: tuple[str, ...],
    per_row: int = 4,
    wording: Wording | None = None,
) -> None:
    """Counts by status, the filters and sort, then one page of seed / result pairs. The
    stored status and the URL keep `misclassified`; `wording` says it as the campaign
    does ("reached target", "A and B disagree")."""
    wording = wording or Wording()
    counts = seeds["status"].value_counts()
    present = [s for s in SHOWN if counts.get(s, 0)]

    def said(status: str) -> str:
        return said_as(status, wording.criterion)

    st.caption(" · ".join(f"{counts[s]} {said(s)}" for s in present) or "No seed yet.")
    if seeds.empty:
        return
    a, b, p = st.columns([3, 2, 2])
    # Seeds searched to an outcome by default, as GIFTbench's gallery; the others on
    # request (a running campaign before its first outcome: the seeds searching).
    default = (
        [s for s in present if s not in HIDDEN]
        or [s for s in present if s != "non-viable"]
        or present
    )
    statuses = url_widget(
        a.multiselect,
        "Show",
        "gallery_status",
        present,
        default,
        many=True,
        follow=True,
        format_func=said,
    )
    names = list(class_names)
    classes = url_widget(b.multiselect, "Expected class", "gallery_class", names, [], many=True)
    predicted = url_widget(p.multiselect, "Predicted class", "gallery_pred", names, [], many=True)
    c, d, e = st.columns([2, 3, 2])
    top = int(seeds["iterations"].max()) if seeds["iterations"].notna().any() else 0
    # Only once some seed has its iterations (a crashed campaign's have none yet): a box
    # that said "at most 0" beside nine seeds shown read as a filter that failed.
    most = None
    if top:
        follow_top(top)
        url_int(wording.most(), "gallery_iterations", "gallery_iterations", 0, top)
        most = c.number_input(wording.most(), 0, top, key="gallery_iterations")
        st.session_state["gallery_iterations:kept"] = most
        # At the campaign's maximum it filters nothing: left out of the URL, so that a
        # link made now still shows seeds that later searches run longer.
        url_int_written("gallery_iterations", most, omit=top)
    order = url_widget(
        d.selectbox,
        "Sort by",
        "gallery_sort",
        SORTS,
        "seed",
        format_func=wording.sort_label,
    )
    chosen = filter_seeds(
        seeds,
        statuses,
        [names.index(n) for n in classes],
        most,
        [names.index(n) for n in predicted],
    )
    if chosen.empty:
        st.info("No seed matches these filters.")
        return
    chosen = sort_seeds(chosen, order)
    pages = (len(chosen) - 1) // PAGE_SIZE + 1
    page = 1
    if pages > 1:
        page = url_widget(
            e.selectbox,
            f"Page (of {pages}, {PAGE_SIZE} seeds each)",
            "gallery_page",
            list(range(1, pages + 1)),
            1,
        )
    shown = chosen.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    for start in range(0, len(shown), per_row):
        cols = st.columns(per_row)
        for col, r in zip(cols, shown.iloc[start : start + per_row].itertuples(), strict=False):
            with col:
                card(r, home, class_names, wording)


def follow_top(top: int, key: str = "gallery_iterations") -> None:
    """Set the iterations box to the campaign's new maximum where it was at the old one
    (it kept 98 after a resume, while seeds with up to 250 were listed), or above the new
    one (another campaign's); a value the user lowered stays."""
    before = st.session_state.get(f"{key}:top")
    # Streamlit drops a widget's state after a run that does not draw it (another tab of
    # the page): the value kept beside it survives.
    value = st.session_state.get(key, st.session_state.get(f"{key}:kept"))
    if value is None or value > top or (before is not None and value == before):
        value = top
    st.session_state[key] = value
    st.session_state[f"{key}:top"] = top


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit}{'s' * (n != 1)}"


def search_length(r, wording: Wording) -> str:
    """How long a searched seed's search ran, in its strategy's units: "after 12
    iterations", or, for a strategy that searches its whole budget, "first in generation 1;
    10 generations, 1,600 evaluations" (NSGA-II read "after 1 iteration" after 10)."""
    n = int(r.iterations)
    if not wording.whole_budget:
        return f"after {_count(n, 'iteration')}"
    parts = []
    gens, evals = getattr(r, "generations", None), getattr(r, "evaluations", None)
    if gens is not None and not pd.isna(gens):
        parts.append(_count(int(gens), "generation"))
    if evals is not None and not pd.isna(evals):
        parts.append(_count(int(evals), "evaluation"))
    first = f"first in generation {n}; " if r.status == "misclassified" else ""
    return f"{first}searched {', '.join(parts)}" if parts else first.removesuffix("; ")


def card(r, home: Path, class_names: tuple[str, ...], wording: Wording | None = None) -> None:
    """One seed: its seed image and, once searched, its result image beside it (one image:
    as two in nested columns, a page of twelve cards was 70 elements, each a message to
    the browser), with the labels."""
    wording = wording or Wording()
    seed_img = load_image(home, r.seed_image)
    right, said = None, None
    if r.status == FAILING:
        best, latest = best_so_far(home, r, seed_img)
        if best is None:  # its frames are appended at the engine's next flush of strips
            said = "failing so far: no image of it written yet"
        else:
            right = best
            said = "best so far" if latest else "failing so far (the best not written yet)"
    elif (result_img := load_image(home, r.result_image)) is not None:
        right, said = result_img, "result"
    # The seed's half is kept where it is missing (and the result's), so pairs line up.
    pair = side_by_side([seed_img, right])
    caption = " · ".join(x for x in ("seed" if seed_img is not None else None, said) if x)
    if pair is not None:
        st.image(pair, caption=caption, width="stretch")
    elif said:
        st.caption(said)
    st.caption(card_text(r, class_names, wording))


def card_text(r, class_names: tuple[str, ...], wording: Wording) -> str:
    """A card's one line, in the words the counts above it use."""
    expected = class_names[int(r.seed_label)]
    head = f"seed {r.seed_idx}: expected **{expected}**"
    status = status_as(r.status, wording.criterion)
    if r.status == "non-viable":  # never searched: the classifier missed the seed itself
        return (
            f"{head}, the classifier said **{class_names[int(r.seed_pred)]}** on the seed "
            "itself (non-viable, not searched)"
        )
    if pd.isna(r.final_pred):
        return f"{head} ({status})"
    final = class_names[int(r.final_pred)]
    if r.status == FAILING:
        return so_far_text(r, head, final, class_names, wording.criterion)
    # "B says 6 after 30 iterations", but "B says 6, first in generation 1; searched ...".
    length = (", " if wording.whole_budget else " ") + search_length(r, wording)
    if not pd.isna(getattr(r, "final_pred_b", None)):
        # Two classifiers: the search's failure is their disagreement, often with A right
        # ("expected 5, predicted 5 (misclassified)" read as a contradiction).
        said = "they disagree" if r.status == "misclassified" else status
        return (
            f"{head}, A says **{final}**, B says **{class_names[int(r.final_pred_b)]}**"
            f"{length} ({said})"
        )
    target = getattr(r, "target", None)
    if target is None or pd.isna(target):
        target = wording.target if wording.criterion == "targeted" else None
    if target is not None:
        # A targeted search names its target: "(survived)" beside "predicted 9" never did.
        name = class_names[int(target)]
        outcome = target_outcome(r.status == "misclassified", f"**{name}**", f"**{final}**")
        return f"{head}, {outcome}{length}"
    return f"{head}, predicted **{final}**{length} ({status})"
