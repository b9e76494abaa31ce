"""Argus's figures per lambda of an interpolation campaign (engine/search/strategies/
interpolate.py: one generation per lambda), each as the paper defines it and none pooled
over the grid:

- error rate (ER): misclassified generated images / generated images;
- success rate (SR): viable seeds with at least one misclassified image / viable seeds
  searched at that lambda;
- label diversity: per viable seed, the distinct wrong labels (any but the seed's)
  among its images, averaged over the seeds;
- MSE and SSIM of every generated image to the ORIGINAL test image its seed was encoded
  from, and, apart and named so, to the decoded seed image (what the campaign-level
  figures use).

"Misclassified" is the classifier's label differing from the seed's, whatever failure
criterion the campaign searched with: Argus's own definition. ER, SR and label diversity
come from the individuals rows (a campaign run with `record_individuals` off has none, and
leaves them empty); MSE and SSIM need the images, so the campaign measures them as it runs
(engine/campaign/metrics.py) and stores them per generation in its metrics row, which a
campaign has once it finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store.connection import Store

if TYPE_CHECKING:
    import pandas as pd

#: The per-generation figures of campaign_metrics.per_generation this query reads.
PER_GENERATION = (
    '[{"generation": "INTEGER", "evaluations": "BIGINT", "mean_mse": "DOUBLE", '
    '"mean_ssim": "DOUBLE", "mean_mse_original": "DOUBLE", "mean_ssim_original": "DOUBLE"}]'
)

#: One row per lambda (generation) in order, then one pooled over every lambda (generation
#: and lambda NULL), which the campaign-level metrics also report.
PER_LAMBDA = f"""
WITH ind AS (
    SELECT i.seed_idx, i.generation, i.pred, i.pred <> s.seed_label AS wrong
    FROM individuals i
    JOIN seeds s ON s.campaign_id = i.campaign_id AND s.seed_idx = i.seed_idx
    WHERE i.campaign_id = ? AND i.evaluated AND s.viable
),
-- Per (lambda, seed), and per seed over every lambda (generation NULL): the pooled row.
cells AS (
    SELECT generation, seed_idx, count(*) AS n,
           count(*) FILTER (WHERE wrong) AS failing,
           count(DISTINCT pred) FILTER (WHERE wrong) AS labels
    FROM ind GROUP BY GROUPING SETS ((generation, seed_idx), (seed_idx))
),
counts AS (
    SELECT generation, count(*) AS seeds, sum(n)::BIGINT AS evaluations,
           sum(failing)::BIGINT AS failing,
           sum(failing) / sum(n) AS error_rate,
           avg(CASE WHEN failing > 0 THEN 1.0 ELSE 0.0 END) AS success_rate,
           avg(labels) AS label_diversity
    FROM cells GROUP BY generation
),
lambdas AS (
    SELECT generation, min(step) AS lambda FROM generations
    WHERE campaign_id = ? GROUP BY generation
),
images AS (
    SELECT unnest(from_json(per_generation, '{PER_GENERATION}'), recursive := true)
    FROM campaign_metrics WHERE campaign_id = ?
),
-- The pooled image figures: every image weighs the same, as in the per-lambda means.
pooled_images AS (
    SELECT NULL::INTEGER AS generation,
           sum(mean_mse_original * evaluations)
               / sum(evaluations) FILTER (WHERE mean_mse_original IS NOT NULL)
               AS mse_original,
           sum(mean_ssim_original * evaluations)
               / sum(evaluations) FILTER (WHERE mean_ssim_original IS NOT NULL)
               AS ssim_original,
           sum(mean_mse * evaluations)
               / sum(evaluations) FILTER (WHERE mean_mse IS NOT NULL) AS mse_seed,
           sum(mean_ssim * evaluations)
               / sum(evaluations) FILTER (WHERE mean_ssim IS NOT NULL) AS ssim_seed
    FROM images
),
figures AS (
    SELECT generation, mean_mse_original AS mse_original,
           mean_ssim_original AS ssim_original, mean_mse AS mse_seed, mean_ssim AS ssim_seed
    FROM images
    UNION ALL
    SELECT * FROM pooled_images WHERE EXISTS (SELECT 1 FROM images)
),
keys AS (
    SELECT generation FROM lambdas
    UNION SELECT generation FROM counts
    UNION SELECT generation FROM figures
)
SELECT k.generation, k.generation IS NULL AS pooled, l.lambda, c.seeds, c.evaluations,
       c.failing, c.error_rate, c.success_rate, c.label_diversity, f.mse_original,
       f.ssim_original, f.mse_seed, f.ssim_seed
FROM keys k
LEFT JOIN lambdas l ON l.generation = k.generation
LEFT JOIN counts c ON c.generation IS NOT DISTINCT FROM k.generation
LEFT JOIN figures f ON f.generation IS NOT DISTINCT FROM k.generation
ORDER BY k.generation NULLS LAST
"""


#: Each figure of ``per_lambda`` as it is shown (``latentfuzz show``, ``make figures``):
#: column, header, format.
SHOWN = (
    ("error_rate", "ER", ".3f"),
    ("success_rate", "SR", ".2f"),
    ("label_diversity", "label diversity", ".2f"),
    ("mse_original", "MSE to original", ".4f"),
    ("ssim_original", "SSIM to original", ".3f"),
    ("mse_seed", "MSE to decoded seed", ".4f"),
    ("ssim_seed", "SSIM to decoded seed", ".3f"),
)


def per_lambda(store: Store, campaign_id: str) -> pd.DataFrame:
    """Argus's figures of an interpolation campaign: a row per lambda in order (columns
    generation, pooled, lambda, seeds, evaluations, failing, error_rate, success_rate,
    label_diversity, mse_original, ssim_original, mse_seed, ssim_seed), then the row
    pooled over every lambda (pooled true, generation and lambda NA); empty for a
    campaign with no generations yet."""
    df = store.query(PER_LAMBDA, [campaign_id, campaign_id, campaign_id])
    if not df["generation"].notna().any():
        return df.iloc[0:0]
    return df


def unmeasured(df: pd.DataFrame) -> list[str]:
    """Why columns of a per_lambda frame are empty, one line each (none when all are in)."""
    notes = []
    if df["seeds"].isna().all():
        notes.append(
            "ER, SR and label diversity: none, as the campaign recorded no individuals "
            "(record_individuals off)."
        )
    if df["mse_seed"].isna().all():
        notes.append("MSE and SSIM: stored when the campaign finishes.")
    elif df["mse_original"].isna().all():
        notes.append(
            "MSE and SSIM to the original image: not measured by this campaign (run before "
            "they were, or from seeds not encoded from test images); run it again for them."
        )
    return notes
