"""The Campaign page's per-seed table in people's words: the glossary's column names
(docs/concepts/glossary.md), classes by name, outcomes as the gallery says them, and a
blank where a value does not apply. It showed the store's snake_case columns, image
paths, and "None" in every cell a seed had no value for. The CSV download keeps the
stored columns, for scripts."""

from __future__ import annotations

import pandas as pd

from dashboard.gallery import Wording
from store.failures import status_as

#: Stored column -> header, in the order shown; columns absent from a campaign are left out.
COLUMNS = {
    "seed_idx": "seed",
    "source_index": "dataset image",
    "seed_label": "expected",
    "target": "target",
    "seed_pred": "seed predicted",
    "seed_pred_b": "seed predicted by B",
    "viable": "viable",
    "status": "outcome",
    "iterations": "iterations",
    "generations": "generations",
    "evaluations": "evaluations",
    "final_pred": "predicted",
    "final_pred_b": "predicted by B",
    "final_fitness": "final fitness",
    "final_top1": "top-1 probability",
    "final_top2": "top-2 probability",
    "latent_distance": "latent distance to the seed",
    "elapsed_s": "seconds",
}
#: Columns only some campaigns fill (a second classifier, targets): left out where no seed
#: has a value; the others stay, blank, until the seeds have one (a stopped campaign).
OPTIONAL = ("target", "seed_pred_b", "final_pred_b", "generations")
#: Columns holding a class index, shown by the class's name.
CLASSES = ("seed_label", "target", "seed_pred", "seed_pred_b", "final_pred", "final_pred_b")


def seed_table(seeds: pd.DataFrame, class_names: tuple[str, ...], wording: Wording) -> pd.DataFrame:
    """`seeds` (store.campaigns.seeds) as shown: headers of COLUMNS, class names, outcome
    words; an OPTIONAL column no seed has a value in is left out, an empty cell is blank."""
    out = pd.DataFrame(index=seeds.index)
    for col, header in COLUMNS.items():
        if col not in seeds or (col in OPTIONAL and seeds[col].isna().all()):
            continue  # a single-classifier campaign has no "predicted by B" at all
        v = seeds[col]
        if col in CLASSES:
            v = v.map(lambda i: "" if pd.isna(i) else class_names[int(i)])
        elif col == "status":
            v = v.map(lambda s: status_as(s, wording.criterion))
        elif col == "viable":
            v = v.map({True: "yes", False: "no"})
        elif col == "source_index":  # -1: a latent drawn at random, not a dataset image
            v = v.map(lambda i: "" if pd.isna(i) or i < 0 else str(int(i)))
        elif col == "iterations" and wording.whole_budget:
            header = "generation found"
        if v.isna().any():
            # Streamlit writes "None" in a missing cell: text, blank there.
            v = v.map(lambda x: "" if pd.isna(x) else _text(x))
        out[header] = v
    return out.reset_index(drop=True)


def _text(x: object) -> str:
    if isinstance(x, float):
        return f"{x:.4g}" if not x.is_integer() else str(int(x))
    return str(x)
