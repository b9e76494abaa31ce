"""Named queries of a seed's search history: the generations its best improved (the
Campaign page's timeline) and how many generations each seed searched (the gallery's
words for strategies that search their whole budget)."""

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
