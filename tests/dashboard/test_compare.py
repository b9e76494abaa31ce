"""The Compare page's statistics: blocks, best and not-significantly-different marks, and
names that stay text."""

from __future__ import annotations

import pandas as pd
from scipy.stats import fisher_exact, mannwhitneyu

from dashboard.compare import blocks, markdown_table, significance
from dashboard.text import md_text


def table(presets=("high", "high", "high")) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    t = pd.DataFrame({
        "campaign": ["a", "b", "c"], "name": ["A", "B", "C"], "dataset": ["mnist"] * 3,
        "generator": ["vae", "gan", "dm"], "preset": list(presets), "budget": [250] * 3,
        "seeds": [20, 20, 20], "viable": [20, 19, 10],
        "viable_pct": [100.0, 95.0, 50.0], "misclassified": [2, 19, 9],
        "misclassified_pct": [10.0, 100.0, 90.0],
        "iterations_icst": [120.0, 90.0, 10.0], "iterations_icst_std": [5.0, 60.0, 3.0],
        "iterations_to_failure": [110.0, 90.0, 9.0],
        "iterations_to_failure_std": [None, 60.0, 3.0],
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


def test_marks_follow_fisher_and_mann_whitney_within_a_block():
    t, its = table()
    m = significance(t, its)
    # viable: A best; B vs A 19/20 vs 20/20 is not significant; C 10/20 is.
    assert m["viable_pct"].tolist() == ["best", "tied", ""]
    assert fisher_exact([[20, 0], [19, 1]])[1] >= 0.05 > fisher_exact([[20, 0], [10, 10]])[1]
    # misclassified: B best (19/19); C 9/10 tied; A 2/20 not.
    assert m["misclassified_pct"].tolist() == ["", "best", "tied"]
    # ICST iterations: C best (fewest); B differs significantly, A too.
    assert m["iterations_icst"].tolist() == ["", "", "best"]
    assert mannwhitneyu(its["c"], its["b"])[1] < 0.05
    # validity: A best (10/10); B 5/19 differs (p < 0.05); C has no labels.
    assert m["valid_pct"].tolist() == ["best", "", ""]
    assert fisher_exact([[10, 0], [5, 14]])[1] < 0.05
    # preservation: B best (5/5); A 5/10 not significantly different.
    assert m["preserved_pct"].tolist() == ["tied", "best", ""]


def test_marks_never_compare_across_blocks():
    # A alone in the low block is the best of its block even where C (high) is better;
    # wave 1 compared every selected campaign, presets mixed.
    t, its = table(presets=("low", "high", "high"))
    assert [k for k, _ in blocks(t)] == [("mnist", "low", "250"), ("mnist", "high", "250")]
    m = significance(t, its)
    assert m.loc[0].tolist() == ["best"] * 5  # alone in its block
    assert m.loc[0, "iterations_icst"] == "best"
    assert m.loc[[1, 2], "iterations_icst"].tolist() == ["", "best"]
    t.loc[2, "budget"] = 100  # another budget is another block
    assert len(blocks(t)) == 3 and significance(t, its)["iterations_icst"].eq("best").all()


def test_markdown_has_one_table_per_block_with_both_iteration_columns():
    t, its = table(presets=("low", "high", "high"))
    md = markdown_table(t, significance(t, its))
    assert md.index("**Block: mnist, low perturbation, 250 generations**") < md.index("| A |")
    assert md.index("**Block: mnist, high perturbation, 250 generations**") < md.index("| B |")
    assert "| A | vae | **100** | **10** (2) | **120.0** (5.0) | 110.0 (-) | **100** (10) |" in md
    assert "| B | gan | **95** | **100** (19) | 90.0 (60.0) | 90.0 (60.0) | **26** (5) |" in md
    assert "| C | dm | 50 | <u>90</u> (9) | **10.0** (3.0) | 9.0 (3.0) | – | – |" in md


def test_names_are_text_never_markup():
    t, its = table()
    t.loc[0, "name"] = "a | b *bold* <script>x</script> $x$"
    md = markdown_table(t, significance(t, its))
    row = next(line for line in md.splitlines() if line.startswith("| a"))
    # The name stays in the first column: escaped pipes do not split cells.
    assert row.replace("\\|", "").count("|") == 9
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert md_text("$x$") == "\\$x\\$" and md_text("*b*") == "\\*b\\*"


def test_an_unfinished_campaign_says_so_and_takes_no_part_in_the_marks():
    t, its = table()
    # C was interrupted: its seeds that fail early have finished, so its iterations (10)
    # look best. It must not be bold, nor push A and B out of the best.
    t["status"] = ["finished", "finished", "interrupted"]
    m = significance(t, its)
    assert m.loc[2].tolist() == [""] * 5
    # B (90) is best once C is out; A (two seeds) is not significantly different.
    assert m["iterations_icst"].tolist() == ["tied", "best", ""]
    assert m["misclassified_pct"].tolist() == ["", "best", ""]
    md = markdown_table(t, m)
    assert "| C *(interrupted)* | dm | 50 | 90 (9) | 10.0 (3.0) |" in md
    assert "| A | vae |" in md  # a finished campaign's name is as before
    t["status"] = "running"  # a block of unfinished campaigns only: nothing to mark
    assert (significance(t, its) == "").all().all()


def test_failure_curves_start_at_zero_and_reach_the_last_failure():
    from dashboard.compare import failure_curves

    failures = {
        "a": pd.Series([8.0]),
        "b": pd.Series([30.0, 12.0]),
        "c": pd.Series([], dtype=float),
    }
    got = failure_curves(failures, {"a": 4, "b": 2, "c": 3}, {"a": "A", "b": "B", "c": "C"})
    by = {k: g[["iterations", "share"]].values.tolist() for k, g in got.groupby("campaign")}
    # One failing seed: a line from (0, 0) through its step to the end (it drew nothing).
    assert by["A"] == [[0, 0], [8, 0.25], [30, 0.25]]
    assert by["B"] == [[0, 0], [12, 0.5], [30, 1.0]]  # already at the end
    assert "C" not in by  # no failure, no curve
    assert failure_curves({}, {}, {}).empty
