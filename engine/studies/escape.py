"""SINVAD's class-escape matrix, read from a targeted campaign's seeds.

Cell (s, t): of the viable searches from source class s towards target class t, the share
that reached t (success rate), and the median iterations of those that did. Beside it the
classifier's test-set confusion matrix, row-normalised, at the same 0..1 scale: a pair the
confusion matrix shows as never confused may still be easy to escape to.
"""

from __future__ import annotations

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
