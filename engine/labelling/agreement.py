"""Statistics of human judgements: verdict rules and each item's verdicts, agreement,
confidence intervals, sample size.

Answers are class indices (0..K-1) or the markers INVALID, OTHER and UNSURE. OTHER is
"valid, but of a class outside the dataset's classes" (the ICST ImageNet studies' "a
different real-world object"): valid, never the expected class, naming no class. Verdicts
follow the ICST study by default, with majority vote as an alternative for three or more
assessors. Verdicts are True (yes), False (no) or None (undecided).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import norm

INVALID = -1  # "not a valid <domain> image"
UNSURE = -2
OTHER = -3  # "a valid <domain> image of another class", for open-world datasets


def validity(answers: Sequence[int], rule: str = "icst") -> bool | None:
    """Valid when all say valid, invalid when all say invalid, else undecided (ICST).
    "majority": the strict majority of the decided answers (needs k >= 3)."""
    decided = [a != INVALID for a in answers if a != UNSURE]
    if rule == "majority":
        if len(answers) < 3:
            raise ValueError(f"majority vote needs at least 3 answers, got {len(answers)}")
        yes = sum(decided)
        return (
            True
            if yes * 2 > len(answers)
            else False
            if (len(decided) - yes) * 2 > len(answers)
            else None
        )
    if len(decided) != len(answers) or not answers:
        return None
    return True if all(decided) else False if not any(decided) else None


def _other_class(a: int, expected: int) -> bool:
    return a == OTHER or (a >= 0 and a != expected)


def preservation(answers: Sequence[int], expected: int, rule: str = "icst") -> bool | None:
    """ICST: yes when all name the expected class; no when every answer differs from the
    expected class and not all say invalid (so "invalid" + "other class" is no, as the
    study's own files decide); undecided otherwise, and whenever someone is unsure.
    "majority": yes when a strict majority names the expected class, no when a strict
    majority names another class (OTHER included)."""
    if rule == "majority":
        if len(answers) < 3:
            raise ValueError(f"majority vote needs at least 3 answers, got {len(answers)}")
        same = sum(a == expected for a in answers)
        other = sum(_other_class(a, expected) for a in answers)
        return True if same * 2 > len(answers) else False if other * 2 > len(answers) else None
    if not answers or UNSURE in answers:
        return None
    if all(a == expected for a in answers):
        return True
    if all(a != expected for a in answers) and not all(a == INVALID for a in answers):
        return False
    return None


def verdicts(
    items: pd.DataFrame, judgements: pd.DataFrame, adjudications: pd.DataFrame, k: int, rule: str
) -> pd.DataFrame:
    """One row per item: its answers, whether it is complete (k answers), validity and
    preservation (True / False / None = undecided), and whether an adjudication settled it."""
    answers = (
        judgements.groupby("item_id")["answer"].apply(list).to_dict() if len(judgements) else {}
    )
    settled = (
        dict(zip(adjudications["item_id"], adjudications["answer"], strict=True))
        if len(adjudications)
        else {}
    )
    out = []
    for it in items.itertuples():
        a = answers.get(it.item_id, [])
        complete = len(a) >= k
        valid = pres = None
        if complete:
            valid = validity(a, rule)
            if not pd.isna(it.expected):
                pres = preservation(a, int(it.expected), rule)
        adjudicated = it.item_id in settled
        if adjudicated:
            s = int(settled[it.item_id])
            valid = s != INVALID and s != UNSURE
            pres = None if pd.isna(it.expected) else s == int(it.expected)
        out.append(
            {
                "item_id": it.item_id,
                "answers": a,
                "n_answers": len(a),
                "complete": complete,
                "validity": valid,
                "preservation": pres,
                "adjudicated": adjudicated,
            }
        )
    return items.merge(pd.DataFrame(out), on="item_id")


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa of two raters over the same items (any hashable categories)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"two raters need the same, non-empty items: {len(a)} vs {len(b)}")
    n = len(a)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in ca) / n**2
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from counts (items, categories): how many raters chose each category.
    Every item needs the same number of raters."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(1)
    if not np.all(n == n[0]) or n[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of raters per item")
    r = n[0]
    p_j = counts.sum(0) / counts.sum()
    p_i = ((counts**2).sum(1) - r) / (r * (r - 1))
    pe = (p_j**2).sum()
    return 1.0 if pe == 1 else float((p_i.mean() - pe) / (1 - pe))


def krippendorff_alpha(data: np.ndarray) -> float:
    """Nominal Krippendorff's alpha; data (raters, items) with NaN for missing answers."""
    data = np.asarray(data, dtype=float)
    values = np.unique(data[~np.isnan(data)])
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))  # coincidence matrix
    for unit in data.T:
        vals = unit[~np.isnan(unit)]
        m = len(vals)
        if m < 2:
            continue
        for i, x in enumerate(vals):
            for j, y in enumerate(vals):
                if i != j:
                    o[index[x], index[y]] += 1 / (m - 1)
    n_c = o.sum(1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n * n - (n_c**2).sum()) / (n - 1)
    return 1.0 if d_e == 0 else float(1 - d_o / d_e)


class BootstrapCI(NamedTuple):
    """A percentile interval, and over how many resamples the statistic was defined.

    A ratio such as preserved/valid is undefined in a resample without a valid image; such
    resamples are left out rather than poisoning the quantiles. When fewer than
    ``min_defined`` of them remain, low and high are NaN and ``defined`` says why."""

    low: float
    high: float
    defined: int
    resamples: int

    @property
    def complete(self) -> bool:
        return self.defined == self.resamples

    def describe(self, scale: float = 100.0, fmt: str = ".0f") -> str:
        """'12-34', '12-34 (873 of 1000 resamples)', or 'n/a (defined in 12 of 1000)'."""
        if math.isnan(self.low):
            return f"n/a (defined in {self.defined} of {self.resamples} resamples)"
        text = f"{scale * self.low:{fmt}}-{scale * self.high:{fmt}}"
        return text if self.complete else f"{text} ({self.defined} of {self.resamples} resamples)"


def bootstrap_ci(
    values: Sequence,
    stat: Callable[[np.ndarray], float] = np.mean,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    min_defined: float = 0.5,
) -> BootstrapCI:
    """Percentile bootstrap confidence interval of stat over values, seeded. Resamples
    where stat is NaN are dropped; with fewer than min_defined x resamples left the
    interval is NaN."""
    arr = np.asarray(values)
    if len(arr) == 0:
        return BootstrapCI(math.nan, math.nan, 0, resamples)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(arr), (resamples, len(arr)))
    stats = np.array([stat(arr[i]) for i in idx], dtype=float)
    stats = stats[~np.isnan(stats)]
    if len(stats) == 0 or len(stats) < min_defined * resamples:
        return BootstrapCI(math.nan, math.nan, len(stats), resamples)
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return BootstrapCI(float(lo), float(hi), len(stats), resamples)


def sample_size(
    population: int, confidence: float = 0.95, margin: float = 0.05, p: float = 0.5
) -> int:
    """Cochran's sample size with finite-population correction (10,000 at 95%/5%: 370)."""
    if population < 1:
        raise ValueError(f"population must be >= 1, got {population}")
    z = norm.ppf(1 - (1 - confidence) / 2)
    n0 = z * z * p * (1 - p) / margin**2
    return min(population, math.ceil(n0 / (1 + (n0 - 1) / population)))
