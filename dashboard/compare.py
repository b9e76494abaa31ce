"""Comparing campaigns in the ICST layout, with the significance marks of the paper.

Best value per column in bold; values not significantly different from the best
underlined. Tests, at alpha = 0.05: Fisher's exact test on the 2x2 counts for the
proportions (viable of seeds, misclassified of viable, valid of labelled, preserved of
valid), two-sided Mann-Whitney U on the iterations to failure (fewer is better).
"""

from __future__ import annotations

import json

import pandas as pd
from scipy.stats import fisher_exact, mannwhitneyu

from engine.labelling import campaign_validity
from store import Store, queries

ALPHA = 0.05
COLUMNS = {
    "viable_pct": "max", "misclassified_pct": "max", "mean_iterations": "min",
    "valid_pct": "max", "preserved_pct": "max",
}  # fmt: skip


def campaign_rows(store: Store, ids: list[str]) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    """One ICST row per campaign, and each campaign's iterations to failure."""
    rows, iterations = [], {}
    for cid in ids:
        c = queries.campaign(store, cid)
        s = queries.seeds(store, cid)
        viable, mis = int(s["viable"].sum()), int(s["misclassified"].fillna(False).sum())
        it = s.loc[s["misclassified"].fillna(False).astype(bool), "iterations"].astype(float)
        iterations[cid] = it
        rows.append({
            "campaign": cid, "name": c["name"], "generator": c["generator"], "preset": c["preset"],
            "seeds": len(s), "viable": viable, "viable_pct": 100 * viable / max(1, len(s)),
            "misclassified": mis, "misclassified_pct": 100 * mis / viable if viable else None,
            "mean_iterations": it.mean() if len(it) else None,
            "std_iterations": it.std() if len(it) > 1 else None,
        })  # fmt: skip
    table = pd.DataFrame(rows)
    # Human labels, where a validity study covers these campaigns' failing images.
    labels = campaign_validity(store, ids)
    table = table.merge(labels, on="campaign", how="left")
    for c in ("labelled", "valid", "preserved"):
        table[c] = table[c].fillna(0).astype(int)
    return table, iterations


def significance(table: pd.DataFrame, iterations: dict[str, pd.Series]) -> pd.DataFrame:
    """Per cell: 'best', 'tied' (not significantly different from the best) or ''."""
    marks = pd.DataFrame("", index=table.index, columns=list(COLUMNS))
    counts = {
        "viable_pct": ("viable", "seeds"), "misclassified_pct": ("misclassified", "viable"),
        "valid_pct": ("valid", "labelled"), "preserved_pct": ("preserved", "valid"),
    }  # fmt: skip
    for col, how in COLUMNS.items():
        vals = table[col].astype(float)
        if vals.notna().sum() == 0:
            continue
        best = vals.idxmax() if how == "max" else vals.idxmin()
        for i in table.index:
            if pd.isna(vals[i]):
                continue
            if i == best or vals[i] == vals[best]:
                marks.loc[i, col] = "best"
                continue
            if col in counts:
                k, n = counts[col]
                a, b = table.loc[best], table.loc[i]
                p = fisher_exact([[a[k], a[n] - a[k]], [b[k], b[n] - b[k]]])[1]
            else:
                x, y = iterations[table.loc[best, "campaign"]], iterations[table.loc[i, "campaign"]]
                p = mannwhitneyu(x, y, alternative="two-sided")[1] if len(x) and len(y) else 0.0
            marks.loc[i, col] = "tied" if p >= ALPHA else ""
    return marks


def markdown_table(table: pd.DataFrame, marks: pd.DataFrame) -> str:
    """The ICST table as markdown: bold best, underlined not significantly different."""

    def cell(i: int, col: str, text: str) -> str:
        mark = marks.loc[i, col]
        return f"**{text}**" if mark == "best" else f"<u>{text}</u>" if mark == "tied" else text

    def labelled(i: int, r: pd.Series, col: str, count: str) -> str:
        if pd.isna(r[col]):
            return "–"  # no validity study covers this campaign yet
        return f"{cell(i, col, f'{r[col]:.0f}')} ({r[count]})"

    lines = [
        "| campaign | generator | perturbation | % viable seeds | % misclassification (#) "
        "| iterations, mean (std) | % validity (#) | % label preservation (#) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in table.iterrows():
        mis = "n/a" if pd.isna(r.misclassified_pct) else f"{r.misclassified_pct:.0f}"
        it = "n/a" if pd.isna(r.mean_iterations) else f"{r.mean_iterations:.1f}"
        sd = "-" if pd.isna(r.std_iterations) else f"{r.std_iterations:.1f}"
        lines.append(
            f"| {r['name']} | {r.generator} | {r.preset} | "
            f"{cell(i, 'viable_pct', f'{r.viable_pct:.0f}')} | "
            f"{cell(i, 'misclassified_pct', mis)} ({r.misclassified}) | "
            f"{cell(i, 'mean_iterations', it)} ({sd}) | "
            f"{labelled(i, r, 'valid_pct', 'valid')} | "
            f"{labelled(i, r, 'preserved_pct', 'preserved')} |"
        )
    return "\n".join(lines)


def config_diff(store: Store, ids: list[str]) -> pd.DataFrame:
    """Settings that differ between the campaigns (flattened config keys)."""
    flat = {}
    for cid in ids:
        cfg = queries.campaign(store, cid)["config"]
        flat[cid] = pd.json_normalize(json.loads(json.dumps(cfg))).iloc[0].astype(str)
    df = pd.DataFrame(flat)
    return df[df.nunique(axis=1) > 1]
