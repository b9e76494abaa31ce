"""The Compare page's statistics: best and not-significantly-different marks."""

from __future__ import annotations

import pandas as pd
from scipy.stats import fisher_exact, mannwhitneyu

from dashboard.compare import markdown_table, significance


def table() -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    t = pd.DataFrame({
        "campaign": ["a", "b", "c"], "name": ["A", "B", "C"], "generator": ["vae"] * 3,
        "preset": ["low", "high", "strong"], "seeds": [20, 20, 20], "viable": [20, 19, 10],
        "viable_pct": [100.0, 95.0, 50.0], "misclassified": [2, 19, 9],
        "misclassified_pct": [10.0, 100.0, 90.0],
        "mean_iterations": [120.0, 90.0, 10.0], "std_iterations": [5.0, 60.0, 3.0],
        # human labels: C has no study yet
        "labelled": [10, 19, 0], "valid": [10, 5, 0], "valid_pct": [100.0, 100 * 5 / 19, None],
        "preserved": [5, 5, 0], "preserved_pct": [50.0, 100.0, None],
    })  # fmt: skip
    its = {
        "a": pd.Series([118.0, 122.0]),
        "b": pd.Series(range(30, 160, 7), dtype=float),
        "c": pd.Series([8.0, 9, 10, 11, 12, 9, 10, 11, 10]),
    }
    return t, its


def test_marks_follow_fisher_and_mann_whitney():
    t, its = table()
    m = significance(t, its)
    # viable: A best; B vs A 19/20 vs 20/20 is not significant; C 10/20 is.
    assert m["viable_pct"].tolist() == ["best", "tied", ""]
    assert fisher_exact([[20, 0], [19, 1]])[1] >= 0.05 > fisher_exact([[20, 0], [10, 10]])[1]
    # misclassified: B best (19/19); C 9/10 tied; A 2/20 not.
    assert m["misclassified_pct"].tolist() == ["", "best", "tied"]
    # iterations: C best (fewest); B differs significantly, A too.
    assert m["mean_iterations"].tolist() == ["", "", "best"]
    assert mannwhitneyu(its["c"], its["b"])[1] < 0.05
    # validity: A best (10/10); B 5/19 differs (p < 0.05); C has no labels.
    assert m["valid_pct"].tolist() == ["best", "", ""]
    assert fisher_exact([[10, 0], [5, 14]])[1] < 0.05
    # preservation: B best (5/5); A 5/10 not significantly different.
    assert m["preserved_pct"].tolist() == ["tied", "best", ""]


def test_markdown_bolds_best_and_underlines_ties():
    t, its = table()
    md = markdown_table(t, significance(t, its))
    assert "| A | vae | low | **100** | 10 (2) | 120.0 (5.0) | **100** (10) | <u>50</u> (5) |" in md
    assert (
        "| B | vae | high | <u>95</u> | **100** (19) | 90.0 (60.0) | 26 (5) | **100** (5) |" in md
    )
    assert "| C | vae | strong | 50 | <u>90</u> (9) | **10.0** (3.0) | – | – |" in md
