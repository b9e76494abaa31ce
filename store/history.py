"""Named queries of a seed's search history: the generations its best improved (the
Campaign page's timeline), how many generations each seed searched (the gallery's
words for strategies that search their whole budget), and which seeds still searching
have failed so far (the live view)."""

from __future__ import annotations

import pandas as pd

from store.connection import Store


def improvements(store: Store, campaign_id: str, seed_idx: int) -> pd.DataFrame:
    """One row per generation in which the seed's best improved, in order: generation,
    best_fitness, best_pred, best_pred_b, evaluations, and the frame of its best image
    (image: the seed's strip, relative to the home; image_frame: 0-based)."""
    return store.query(
        "SELECT generation, best_fitness, best_pred, best_pred_b, evaluations, image, "
        "image_frame FROM generations "
        "WHERE campaign_id = ? AND seed_idx = ? AND image IS NOT NULL AND image_frame IS NOT NULL "
        "ORDER BY generation",
        [campaign_id, seed_idx],
    )


def generations_run(store: Store, campaign_id: str) -> pd.DataFrame:
    """seed_idx, generations: the generations each seed has searched so far (written
    rows), one set-based pass for the whole campaign."""
    return store.query(
        "SELECT seed_idx, max(generation) AS generations FROM generations "
        "WHERE campaign_id = ? GROUP BY seed_idx ORDER BY seed_idx",
        [campaign_id],
    )


#: Each failure criterion's rule (engine/search/fitness.py) applied to a generations row's
#: best individual: its prediction(s) against the seed's expected class or target.
BEST_FAILS = {
    "misclassified": "g.best_pred <> s.seed_label",
    "targeted": "g.best_pred = s.target",
    "disagree": "g.best_pred <> g.best_pred_b",
}


SO_FAR_COLUMNS = (
    "seed_idx",
    "first_failure",
    "generation",
    "best_fitness",
    "best_pred",
    "best_pred_b",
    "evaluations",
    "image",
    "image_frame",
    "first_frame",
)


def failing_so_far(store: Store, campaign_id: str, criterion: str | None) -> pd.DataFrame:
    """The seeds still searching whose best individual already fails `criterion` in some
    written generation: seed_idx, first_failure (that generation), and the failing row of
    lowest best_fitness (the best so far: generation, best_fitness, best_pred,
    best_pred_b, evaluations, image, image_frame), with first_frame, the strip frame of
    its first failing improvement. Empty for a criterion without a rule here. One
    set-based pass over the campaign's generations rows.

    Only exact where the campaign's fitness ranks failing individuals first (the fitness
    that goes with its criterion): its best then fails whenever one individual does."""
    rule = BEST_FAILS.get(criterion or "misclassified")
    if rule is None:
        return pd.DataFrame(columns=SO_FAR_COLUMNS)
    # The best so far: the failing row of lowest best_fitness, the earliest of equals
    # (the improvement, whose frame the strip holds); (fitness, generation) is unique
    # per seed, so each arg_min_null takes the same row (arg_min would skip a row whose
    # value is NULL, such as best_pred_b). A window per seed cost 5x as much.
    best = "(g.best_fitness, g.generation)"
    cols = ("generation", "best_fitness", "best_pred", "best_pred_b", "evaluations", "image")
    picked = ", ".join(f"arg_min_null(g.{c}, {best}) AS {c}" for c in (*cols, "image_frame"))
    return store.query(
        f"""
        SELECT g.seed_idx, min(g.generation) AS first_failure, {picked},
               min(g.image_frame) AS first_frame
        FROM generations g JOIN seeds s
            ON s.campaign_id = g.campaign_id AND s.seed_idx = g.seed_idx
        WHERE g.campaign_id = ? AND s.status = 'searching' AND ({rule})
        GROUP BY g.seed_idx ORDER BY g.seed_idx
        """,
        [campaign_id],
    )
