"""SINVAD's class-escape matrix, read from a targeted campaign's seeds.

Cell (s, t): of all searches from source class s towards target class t, the share that
reached t (success rate, SINVAD's: over every attempt), and the median iterations of those
that did. Beside it the classifier's test-set confusion matrix, row-normalised, at the same
0..1 scale: a pair the confusion matrix shows as never confused may still be easy to
escape to.

How many attempts per pair a ranking of the pairs needs is measured by a bootstrap over
attempts (``ranking_stability``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from store import Store
from store import campaigns as sc


def escape_table(store: Store, campaign_id: str, class_names: list[str]) -> pd.DataFrame:
    """One row per (source, target) pair, class names beside the indices (the CSV)."""
    df = sc.escape_matrix(store, campaign_id)
    df.insert(1, "source_name", [class_names[int(i)] for i in df["source"]])
    df.insert(3, "target_name", [class_names[int(i)] for i in df["target"]])
    return df


def confusion_rates(counts: list[list[int]]) -> pd.DataFrame:
    """Long form (true, predicted, rate) of confusion counts, each row divided by its
    total; the diagonal (correct predictions) left out, as in the escape matrix."""
    rows = []
    for t, row in enumerate(counts):
        total = sum(row)
        for p, n in enumerate(row):
            if p != t:
                rows.append(
                    {"source": t, "target": p, "rate": n / total if total else None, "count": n}
                )
    return pd.DataFrame(rows, columns=["source", "target", "rate", "count"])


def grid(df: pd.DataFrame, value: str, class_names: list[str]) -> pd.DataFrame:
    """A source x target table of one column: a row per source class searched from, a
    column per class, named by class."""
    sources = sorted(int(s) for s in df["source"].unique())
    g = df.pivot(index="source", columns="target", values=value).reindex(
        index=sources, columns=range(len(class_names))
    )
    g.index = [class_names[i] for i in g.index]
    g.columns = [class_names[i] for i in g.columns]
    return g


#: Attempts per pair at which ``ranking_stability`` is evaluated (with the count stored).
STABILITY_SIZES = (1, 2, 3, 5, 10, 20, 50)


def ranking_stability(
    attempts: pd.DataFrame,
    sizes: Sequence[int] = STABILITY_SIZES,
    resamples: int = 500,
    seed: int = 0,
) -> pd.DataFrame:
    """How stable the ranking of pairs by success rate is with k attempts per pair.

    attempts: one row per attempt, columns source, target, success (store/campaigns.py
    ``escape_attempts``). For each k (``sizes`` and the campaign's own count), two
    independent bootstrap resamples of k attempts per pair are drawn, each from the pair's
    own attempts, and their pair rankings compared by Spearman's rank correlation; the
    mean over ``resamples`` draws and its 5-95% band are returned. A resample of k 0/1
    outcomes drawn with replacement sums to Binomial(k, the pair's stored rate), which is
    how it is drawn. Rows with k above the stored count (``extrapolated``) treat the
    stored rates as the true ones, which overstates stability when few were stored.
    A draw whose two rankings cannot be compared (one ranks every pair equal) is
    ``undefined``, counted apart and left out of the mean.
    """
    # Deferred (start-up time: scipy.stats is slow to import; only --stability reads it).
    from scipy.stats import rankdata

    rates = attempts.groupby(["source", "target"])["success"].agg(["mean", "size"])
    stored = int(rates["size"].min()) if len(rates) else 0
    p = rates["mean"].to_numpy(float)
    rng = np.random.default_rng(seed)
    rows = []
    for k in sorted({*sizes, stored} - {0}):
        drawn = rng.binomial(k, p, size=(resamples, 2, len(p))) / k
        r = rankdata(drawn, axis=-1)
        r -= r.mean(-1, keepdims=True)
        a, b = r[:, 0], r[:, 1]
        den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
        rho = np.divide((a * b).sum(-1), den, out=np.full(resamples, np.nan), where=den > 0)
        ok = rho[~np.isnan(rho)]
        rows.append(
            {
                "attempts": k,
                "rank_correlation": float(ok.mean()) if len(ok) else np.nan,
                "low": float(np.quantile(ok, 0.05)) if len(ok) else np.nan,
                "high": float(np.quantile(ok, 0.95)) if len(ok) else np.nan,
                "undefined": float(np.isnan(rho).mean()),
                "extrapolated": k > stored,
            }
        )
    return pd.DataFrame(rows)


def attempts_needed(stability: pd.DataFrame, threshold: float = 0.9) -> int | None:
    """The fewest attempts per pair whose mean rank correlation reaches ``threshold``
    (None: none of those measured does)."""
    ok = stability[stability["rank_correlation"] >= threshold]
    return int(ok["attempts"].min()) if len(ok) else None
