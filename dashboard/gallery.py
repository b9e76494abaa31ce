"""The Campaign page's gallery: every seed counted by status, filterable and paginated.

A 300-seed campaign drawn at once was one 9,675 px page, and non-viable seeds vanished from
it without a note. Here the counts come first, a filter chooses what to show (status,
expected class, iterations) and pages of PAGE_SIZE keep the page short. The filters live in
the URL (`gallery_*` query parameters), so a view of "misclassified 7s" can be shared.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.components import load_image
from dashboard.url_state import url_widget

PAGE_SIZE = 12
#: Seed statuses in the order they are counted and offered (store.schema.SEED_STATUSES).
SHOWN = ("misclassified", "survived", "non-viable", "interrupted", "searching")


def filter_seeds(
    seeds: pd.DataFrame, statuses: list[str], classes: list[int], max_iterations: int | None
) -> pd.DataFrame:
    """The seeds with one of `statuses`, expected class in `classes` (all when empty) and
    at most `max_iterations` (None: any)."""
    out = seeds[seeds["status"].isin(statuses)]
    if classes:
        out = out[out["seed_label"].isin(classes)]
    if max_iterations is not None:
        out = out[out["iterations"].fillna(0) <= max_iterations]
    return out


def gallery(
    seeds: pd.DataFrame,
    home: Path,
    class_names: tuple[str, ...],
    per_row: int = 4,
    failed: str = "misclassified",
) -> None:
    """Counts by status, the filters, then one page of seed / result pairs. `failed`: what
    the campaign's failing seeds are called ("A and B disagree" for two classifiers); the
    stored status and the URL keep `misclassified`."""
    counts = seeds["status"].value_counts()
    present = [s for s in SHOWN if counts.get(s, 0)]

    def said(status: str) -> str:
        return failed if status == "misclassified" else status

    st.caption(" · ".join(f"{counts[s]} {said(s)}" for s in present) or "No seed yet.")
    if seeds.empty:
        return
    a, b, c = st.columns([2, 2, 1])
    # Searched seeds by default, as GIFTbench's gallery; non-viable ones on request.
    default = [s for s in present if s != "non-viable"] or present
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
    classes = url_widget(
        b.multiselect, "Expected class", "gallery_class", list(class_names), [], many=True
    )
    top = int(seeds["iterations"].max()) if seeds["iterations"].notna().any() else 0
    # Only once some seed has its iterations (a crashed campaign's have none yet): a box
    # that said "at most 0" beside nine seeds shown read as a filter that failed.
    most = None
    if top:
        follow_top(top)
        most = c.number_input("At most iterations", 0, top, key="gallery_iterations")
        st.session_state["gallery_iterations:kept"] = most
    chosen = filter_seeds(seeds, statuses, [class_names.index(n) for n in classes], most)
    if chosen.empty:
        st.info("No seed matches these filters.")
        return
    pages = (len(chosen) - 1) // PAGE_SIZE + 1
    page = 1
    if pages > 1:
        page = url_widget(
            st.selectbox,
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
                card(r, home, class_names)


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


def card(r, home: Path, class_names: tuple[str, ...]) -> None:
    """One seed: its seed image and, once searched, its result image, with the labels."""
    pair = st.columns(2)
    seed_img, result_img = load_image(home, r.seed_image), load_image(home, r.result_image)
    if seed_img is not None:
        pair[0].image(seed_img, caption="seed", width="stretch")
    if result_img is not None:
        pair[1].image(result_img, caption="result", width="stretch")
    expected = class_names[int(r.seed_label)]
    if r.status == "non-viable":  # never searched: the classifier missed the seed itself
        st.caption(
            f"seed {r.seed_idx}: expected **{expected}**, the classifier said "
            f"**{class_names[int(r.seed_pred)]}** on the seed itself (non-viable, not searched)"
        )
    elif pd.isna(r.final_pred):
        st.caption(f"seed {r.seed_idx}: expected **{expected}** ({r.status})")
    elif not pd.isna(getattr(r, "final_pred_b", None)):
        # Two classifiers: the search's failure is their disagreement, often with A right
        # ("expected 5, predicted 5 (misclassified)" read as a contradiction).
        said = "they disagree" if r.status == "misclassified" else r.status
        n = int(r.iterations)
        st.caption(
            f"seed {r.seed_idx}: expected **{expected}**, A says "
            f"**{class_names[int(r.final_pred)]}**, B says "
            f"**{class_names[int(r.final_pred_b)]}** after {n} iteration{'s' * (n != 1)} "
            f"({said})"
        )
    else:
        st.caption(
            f"seed {r.seed_idx}: expected **{expected}**, predicted "
            f"**{class_names[int(r.final_pred)]}** after {int(r.iterations)} "
            f"iteration{'s' * (int(r.iterations) != 1)} ({r.status})"
        )
