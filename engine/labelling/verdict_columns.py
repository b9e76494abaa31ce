"""A study file's own verdict columns (the ICST CSVs' `Validity?` and `Label Preservation?`),
read and compared with the verdicts latentfuzz computes from the same answers."""

from __future__ import annotations

import numpy as np
import pandas as pd


def parse_verdict(text: object) -> bool | None:
    """The file's own verdict column: yes/no/true/false/1/0, anything else undecided."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return None
    t = str(text).strip().lower()
    return (
        True
        if t in {"yes", "y", "true", "1", "1.0"}
        else False
        if t in {"no", "n", "false", "0", "0.0"}
        else None
    )


def cross_check(df: pd.DataFrame, v: pd.DataFrame, m) -> pd.DataFrame:
    """Rows where the file's own verdicts differ from ours (undecided counts as a value);
    `m` names the columns (importing.ImportMapping: id, validity, preservation)."""
    out = []
    for (_, r), ours in zip(df.iterrows(), v.itertuples(), strict=True):
        for col, mine in ((m.validity, ours.validity), (m.preservation, ours.preservation)):
            if col is None or col not in df.columns:
                continue
            theirs = parse_verdict(r[col])
            if not ours.complete:
                mine = None
            if theirs != mine:
                out.append(
                    {
                        "ID": r[m.id],
                        "column": col,
                        "file": r[col],
                        "latentfuzz": {True: "yes", False: "no", None: "undecided"}[mine],
                    }
                )
    return pd.DataFrame(out, columns=["ID", "column", "file", "latentfuzz"])
