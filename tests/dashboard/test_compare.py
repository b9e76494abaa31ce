"""dashboard/compare.py: blocks, best and not-significantly-different marks, names that
stay text, failure curves; blocks across strategies, generators and failure criteria;
campaigns grouped by objective; the settings that differ."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import fisher_exact, mannwhitneyu

from dashboard.compare import (
    BLOCK,
    STRATEGY_BLOCK,
    block_columns,
    blocks,
    significance,
)
from dashboard.compare_table import markdown_table
from dashboard.text import md_text
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.search.strategies.base import BUDGET_RULE
from store import Store


def table(presets=("high", "high", "high")) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    t = pd.DataFrame(
        {
            "campaign": ["a", "b", "c"],
            "name": ["A", "B", "C"],
            "dataset": ["mnist"] * 3,
            "generator": ["vae", "gan", "dm"],
            "preset": list(presets),
            "budget": [250] * 3,
            "seeds": [20, 20, 20],
            "viable": [20, 19, 10],
            "viable_pct": [100.0, 95.0, 50.0],
            "misclassified": [2, 19, 9],
            "misclassified_pct": [10.0, 100.0, 90.0],
            "iterations_icst": [120.0, 90.0, 10.0],
            "iterations_icst_std": [5.0, 60.0, 3.0],
            "iterations_to_failure": [110.0, 90.0, 9.0],
            "iterations_to_failure_std": [None, 60.0, 3.0],
            # human labels: C has no study yet
            "labelled": [10, 19, 0],
            "valid": [10, 5, 0],
            "valid_pct": [100.0, 100 * 5 / 19, None],
            "preserved": [5, 5, 0],
            "preserved_pct": [50.0, 100.0, None],
        }
    )
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
    # A alone in the low block is compared with nothing, even where C (high) is better;
    # wave 1 compared every selected campaign, presets mixed.
    t, its = table(presets=("low", "high", "high"))
    assert [k for k, _ in blocks(t)] == [("mnist", "low", "250"), ("mnist", "high", "250")]
    m = significance(t, its)
    assert m.loc[0].tolist() == [""] * 5  # alone in its block: neither best nor worse
    assert m.loc[[1, 2], "iterations_icst"].tolist() == ["", "best"]
    t.loc[2, "budget"] = 100  # another budget is another block: three alone, no marks
    assert len(blocks(t)) == 3 and (significance(t, its) == "").all().all()


def test_markdown_has_one_table_per_block_with_both_iteration_columns():
    t, its = table(presets=("low", "high", "high"))
    md = markdown_table(t, significance(t, its))
    assert md.index("**Block: mnist, low perturbation, 250 generations**") < md.index("| A |")
    assert md.index("**Block: mnist, high perturbation, 250 generations**") < md.index("| B |")
    assert "| A | vae | 100 | 10 (2) | 120.0 (5.0) | 110.0 (-) | 100 (10) |" in md
    # B's validity is the only one of its block (C has no labels): compared with nothing.
    assert "| B | gan | **95** | **100** (19) | 90.0 (60.0) | 90.0 (60.0) | 26 (5) |" in md
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
    from dashboard.compare_charts import failure_curves

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


def strategy_table(strategies: list[str], eval_budgets: list[int]) -> pd.DataFrame:
    n = len(strategies)
    return pd.DataFrame(
        {
            "campaign": list("abcd")[:n],
            "name": list("ABCD")[:n],
            "dataset": ["mnist"] * n,
            "generator": ["mnist-vae"] * n,
            "seeds_from": ["mnist-vae"] * n,
            "preset": ["strong", None, "strong", "strong"][:n],
            "budget": [250, 124, 150, 250][:n],
            "strategy": strategies,
            "eval_budget": eval_budgets,
            "seeds": [30] * n,
            "viable": [27] * n,
            "viable_pct": [90.0] * n,
            "misclassified": [27, 27, 3, 20][:n],
            "misclassified_pct": [100.0, 100.0, 11.0, 74.0][:n],
            "iterations_icst": [12.0, 1.0, 140.0, 50.0][:n],
            "iterations_icst_std": [5.0] * n,
            "iterations_to_failure": [12.0] * n,
            "iterations_to_failure_std": [5.0] * n,
            "labelled": [0] * n,
            "valid": [0] * n,
            "valid_pct": [None] * n,
            "preserved": [0] * n,
            "preserved_pct": [None] * n,
        }
    )


def test_one_strategy_keeps_the_icst_blocks():
    t = strategy_table(["ga", "ga"], [3760, 3760])
    assert block_columns(t) == BLOCK


def test_strategies_are_compared_at_equal_dataset_and_evaluation_budget():
    t = strategy_table(["ga", "sinvad", "random"], [3760, 3740, 3750])
    assert block_columns(t) == STRATEGY_BLOCK
    # Presets and generation budgets differ, the evaluation budgets too: three blocks.
    assert len(blocks(t)) == 3
    t["eval_budget"] = 3760
    assert [k for k, _ in blocks(t)] == [("mnist", "mnist-vae", "3760")]
    its = {c: pd.Series([1.0, 2.0, 3.0]) for c in "abc"}
    marks = significance(t, its)
    assert marks.loc[[0, 1], "misclassified_pct"].tolist() == ["best", "best"]
    md = markdown_table(t, marks)
    assert "**Block: mnist, mnist\\-vae, 3760 evaluations per seed at most**" in md
    assert "| campaign | strategy | % viable seeds" in md and "| B | sinvad |" in md


def test_an_unfinished_campaign_of_another_strategy_does_not_regroup_finished_ones():
    t = strategy_table(["ga", "ga", "sinvad"], [3760, 3760, 3740])
    t["preset"] = ["low", "high", None]
    t["status"] = ["finished", "finished", "running"]
    # The two GA campaigns keep their ICST blocks (low, high): they are not compared,
    # so neither is marked.
    assert block_columns(t) == BLOCK
    m = significance(t, {c: pd.Series([1.0, 2.0]) for c in t["campaign"]})
    assert m.loc[[0, 1], "misclassified_pct"].tolist() == ["", ""]
    t["status"] = "running"  # nothing finished: the campaigns' own grouping
    assert block_columns(t) == STRATEGY_BLOCK


def test_campaigns_of_other_generators_or_failure_criteria_never_share_a_block():
    """A differential campaign's "100 (4)" disagreements were marked best against a plain
    campaign's misclassifications in one block, and a VAE random campaign was ranked
    against a GAN NSGA-II one."""
    t = strategy_table(["ga", "random"], [3760, 3760])
    t["generator"] = t["seeds_from"] = ["mnist-vae", "mnist-gan"]
    assert len(blocks(t)) == 2
    t = strategy_table(["ga", "ga"], [3760, 3760])
    t["preset"], t["budget"] = "strong", 250  # the ICST block of both, but for this:
    t["criterion"] = ["misclassified", "disagree"]
    assert block_columns(t) == ["criterion", *BLOCK]
    assert len(blocks(t)) == 2
    marks = significance(t, {c: pd.Series([1.0, 2.0]) for c in "ab"})
    assert marks["misclassified_pct"].tolist() == ["", ""]  # each alone: nothing to mark
    md = markdown_table(t, marks)
    assert "strong perturbation, 250 generations; failing: A and B disagree**" in md
    assert "| % A and B disagree (#) |" in md and "| % misclassification (#) |" in md
    t["criterion"] = "misclassified"  # one criterion: the ICST blocks as before
    assert block_columns(t) == BLOCK


def test_a_grid_along_classifier_b_splits_its_blocks_by_criterion():
    """A grid whose axis is classifier_b: its own blocks (the other axes) put a plain and
    a differential cell together, and the disagreements were marked best."""
    t = strategy_table(["ga", "ga"], [3760, 3760])
    t["criterion"] = ["misclassified", "disagree"]
    t.attrs["blocks"], t.attrs["along"] = ["axis: seed"], "axis: classifier_b"
    t["axis: seed"], t["axis: classifier_b"] = ["1", "1"], ["None", "mnist-lenet5"]
    assert block_columns(t) == ["criterion", "axis: seed"]
    assert len(blocks(t)) == 2
    md = markdown_table(t, significance(t, {c: pd.Series([1.0]) for c in "ab"}))
    assert "seed = 1; failing: A and B disagree**" in md


def test_a_campaign_without_a_recorded_objective_is_not_called_margin():
    """An imported campaign's config has no fitness: it was grouped as "margin"."""
    from dashboard.compare_charts import by_objective

    camps = pd.DataFrame({"id": ["a", "b", "c"], "config": [{"fitness": "boundary"}, {}, None]})
    assert by_objective(camps, ["a", "b", "c"]) == {"boundary": ["a"], "not recorded": ["b", "c"]}


def test_settings_that_differ_name_a_renamed_campaign_by_its_name_now(home: Path):
    from dashboard.compare_table import config_diff
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store, admin

    ids = [
        run_campaign(
            parse_config(
                {"seeds": 1, "seed": s, "name": f"was {s}", "strategy_params": {"generations": 2}}
            ),
            home,
        ).campaign_id
        for s in (1, 2)
    ]
    store = Store(home / "latentfuzz.duckdb")
    admin.rename_campaign(store, ids[0], "is now")
    diff = config_diff(store, ids)
    assert diff.loc["name"].tolist() == ["is now", "was 2"]
    unnamed = [
        run_campaign(
            parse_config({"seeds": 1, "seed": s, "strategy_params": {"generations": 2}}), home
        ).campaign_id
        for s in (1, 2)
    ]
    assert "name" not in config_diff(store, unnamed).index  # not a row of the ids again


def test_one_canonical_model_name_in_the_settings_that_differ(tmp_path):
    """A campaign asked for 'vae' and one for 'mnist-vae' use the same model: Compare's
    settings that differ must not list the generator (or the default classifier)."""
    from dashboard.compare_table import config_diff
    from store import Store

    home = tmp_path / "home"
    cfg = {"seeds": 1, "seed": 1, "strategy_params": {"generations": 2}}
    a = run_campaign(parse_config({**cfg, "generator": "vae"}), home).campaign_id
    b = run_campaign(
        parse_config({**cfg, "generator": "mnist-vae", "classifier": "mnist-convnet"}), home
    ).campaign_id
    diff = config_diff(Store(home / "latentfuzz.duckdb"), [a, b])
    assert "generator" not in diff.index and "classifier" not in diff.index


def test_a_strategy_block_without_a_budget_says_so_and_whole_numbers_stay_whole():
    from dashboard.compare import STRATEGY_BLOCK
    from dashboard.compare_table import block_title

    # An imported campaign has no evaluation budget: "nan evaluations" before, and a
    # missing value turned the others' column into floats ("170.0 evaluations").
    assert block_title(("mnist", "gb-vae", float("nan")), STRATEGY_BLOCK) == (
        "mnist, gb-vae, an unknown number of evaluations per seed at most"
    )
    assert block_title(("mnist", "mnist-vae", 170.0), STRATEGY_BLOCK) == (
        "mnist, mnist-vae, 170 evaluations per seed at most"
    )


def study_store(home: Path, budgets: dict[str, dict], misclassified: dict[str, int]) -> Store:
    """A store holding one study of three strategy campaigns on the same 20 seeds, as
    `study --strategies` writes them: `budgets` is each strategy's recorded config (its
    budget setting and evaluation budget), `misclassified` its failing seeds (failing at
    iteration 10; the others survive to 40)."""
    from store.writer import create_campaign, now

    store = Store(home / "latentfuzz.duckdb")
    for name, config in budgets.items():
        cid = f"s-{name}"
        create_campaign(
            store,
            {
                "id": cid,
                "name": f"s {name}",
                "status": "finished",
                "created_at": now(),
                "dataset": "mnist",
                "generator": "pixel" if name.startswith("pixel") else "mnist-vae",
                "classifier": "mnist-convnet",
                "strategy": name,
                "preset": "strong" if name != "sinvad" else None,
                "n_seeds": 20,
                "random_seed": 1,
                "config": {"fitness": "margin", **config},
                "environment": {},
                "dir": f"campaigns/{cid}",
                "study": "s",
            },
        )
        k = misclassified[name]
        with store.write() as con:
            for i in range(20):
                fails = i < k
                con.execute(
                    "INSERT INTO seeds (campaign_id, seed_idx, seed_label, seed_pred, "
                    "seed_margin, viable, status, misclassified, iterations, evaluations) "
                    "VALUES (?, ?, 1, 1, 0.5, true, ?, ?, ?, 100)",
                    [cid, i, "misclassified" if fails else "survived", fails, 10 if fails else 40],
                )
    return store


def budget_config(evaluations: int | None, generations: int, spends: int) -> dict:
    """A campaign's recorded config: its budget setting and generations, and the most a
    seed could cost (`evaluation_budget`)."""
    params = {"generations": generations, "evaluations": evaluations}
    rule = {"budget_rule": BUDGET_RULE} if evaluations is not None else {}
    return {"strategy_params": params, "evaluation_budget": spends, **rule}


#: What `study --strategies ga,sinvad,random` at 250 GA generations records now, and
#: what it recorded before budgets were set (each strategy's own whole generations).
BUDGET_SET = {
    "ga": budget_config(3760, 250, 3760),
    "sinvad": budget_config(3760, 125, 3760),
    "random": budget_config(3760, 151, 3760),
}
BEFORE = {
    "ga": budget_config(None, 250, 3760),
    "sinvad": budget_config(None, 124, 3740),
    "random": budget_config(None, 150, 3750),
}


@pytest.mark.parametrize("worse", [0, 5, 14])
@pytest.mark.parametrize("recorded", ["budget set", "before budgets were set"])
def test_a_weaker_strategy_is_never_marked_best_in_a_study(home: Path, worse: int, recorded: str):
    """`study --strategies ga,sinvad,random` gave 3,760 / 3,740 / 3,750 evaluations and
    Compare blocked by them: each strategy alone in its block and marked best, random
    search's 6% misclassification in bold. Blocked by the budget the study set, random
    (fewer failures, more iterations) is never the best of anything it is worse at."""
    from dashboard.compare import campaign_rows

    budgets = BUDGET_SET if recorded == "budget set" else BEFORE
    store = study_store(home, budgets, {"ga": 18, "sinvad": 15, "random": worse})
    t, its, _ = campaign_rows(store, ["s-ga", "s-sinvad", "s-random"])
    assert block_columns(t) == STRATEGY_BLOCK
    assert [k for k, _ in blocks(t)] == [("mnist", "s", "3760")]
    marks = significance(t, its).set_index(t["strategy"])
    assert marks.loc["random", "misclassified_pct"] != "best"
    assert marks.loc["ga", "misclassified_pct"] == "best"
    # Generations hold different numbers of evaluations per strategy: never compared.
    assert (marks["iterations_icst"] == "").all()
    # The same seeds, so the same viable share: nobody's best (random was bold in it).
    assert (marks["viable_pct"] == "").all()
    md = markdown_table(t, significance(t, its))
    assert md.count("**Block:") == 1 and "3760 evaluations per seed at most" in md
    assert (md_text(f"Budget kept by: {BUDGET_RULE}.") in md) == (recorded == "budget set")
    # Alone, random is compared with nothing and marked nothing (it was bold).
    alone, its_alone, _ = campaign_rows(store, ["s-random"])
    assert (significance(alone, its_alone) == "").all().all()


def test_a_pixel_baseline_shares_its_studys_block_and_is_marked_against_the_latent_search(
    home: Path,
):
    """A pixel-space baseline searches generator `pixel`; blocked by generator, it sat
    alone in its block beside the study's VAE campaigns and was compared with nothing."""
    from dashboard.compare import campaign_rows

    budgets = {"ga": BUDGET_SET["ga"], "pixel-ga": BUDGET_SET["random"]}
    store = study_store(home, budgets, {"ga": 18, "pixel-ga": 1})
    t, its, _ = campaign_rows(store, ["s-ga", "s-pixel-ga"])
    assert sorted(t["generator"]) == ["mnist-vae", "pixel"]
    assert [k for k, _ in blocks(t)] == [("mnist", "s", "3760")]
    marks = significance(t, its).set_index(t["strategy"])
    assert marks.loc["ga", "misclassified_pct"] == "best"
    assert marks.loc["pixel-ga", "misclassified_pct"] == ""


def test_iterations_of_different_strategies_are_never_marked():
    """FGSM's 2 iterations (its seed, then every image along its step: one generation of
    3,759) were bold beside the GA's 12 (generations of 15): generations of different
    sizes are no common unit."""
    t = strategy_table(["ga", "fgsm"], [3760, 3760])
    t["iterations_icst"] = [12.0, 2.0]
    t["misclassified"], t["misclassified_pct"] = [27, 13], [100.0, 48.0]
    marks = significance(t, {"a": pd.Series([12.0] * 27), "b": pd.Series([2.0] * 14)})
    assert (marks["iterations_icst"] == "").all()
    assert marks.loc[0, "misclassified_pct"] == "best"  # the counts are still compared
    md = markdown_table(t, marks)
    assert md_text("they are not marked.") in md
    # One strategy (the ICST layout): iterations are generations of one size, marked.
    t = strategy_table(["ga", "ga"], [3760, 3760])
    t["preset"], t["budget"], t["iterations_icst"] = "strong", 250, [12.0, 30.0]
    marks = significance(t, {"a": pd.Series([12.0] * 27), "b": pd.Series([30.0] * 27)})
    assert marks.loc[0, "iterations_icst"] == "best"


def test_campaigns_outside_a_study_are_blocked_by_their_own_budget(home: Path):
    """Outside a study: a campaign's budget setting, else the most its generations let a
    seed cost; so hand-run campaigns of two strategies share a block only at one budget."""
    from dashboard.compare import campaign_rows, set_budget

    assert set_budget(BUDGET_SET["random"], None, {}) == 3760
    assert set_budget(BEFORE["random"], None, {}) == 3750
    assert set_budget(BEFORE["random"], "s", {"s": 3760}) == 3760
    assert set_budget({}, None, {}) is None  # an imported campaign
    store = study_store(home, BEFORE, {"ga": 18, "sinvad": 15, "random": 2})
    with store.write() as con:  # not a study: three budgets, three blocks, no marks
        con.execute("UPDATE campaigns SET study = NULL")
    t, its, _ = campaign_rows(store, ["s-ga", "s-sinvad", "s-random"])
    assert len(blocks(t)) == 3 and (significance(t, its) == "").all().all()


def test_settings_that_differ_are_named_in_people_s_words_with_blank_cells(tmp_path):
    """The settings read as config paths ("strategy_params.generations") and a setting
    one strategy has not read "None"."""
    from dashboard.compare_table import config_diff
    from store import Store

    home = tmp_path / "home"
    base = {"seeds": 1, "seed": 1}
    ga = run_campaign(
        parse_config({**base, "strategy_params": {"generations": 2, "perturbation": "high"}}),
        home,
    ).campaign_id
    sinvad = run_campaign(
        parse_config({**base, "strategy": "sinvad", "strategy_params": {"generations": 3}}),
        home,
    ).campaign_id
    diff = config_diff(Store(home / "latentfuzz.duckdb"), [ga, sinvad])
    assert {"generation budget", "perturbation", "strategy"} <= set(diff.index), diff.index
    assert not any("strategy_params" in k or "_" in k for k in diff.index), list(diff.index)
    assert diff.loc["perturbation"].tolist() == ["high", ""]  # SINVAD has no preset
    assert not diff.isin(["None", "nan"]).any().any(), diff


def test_a_block_of_campaigns_without_a_preset_says_so_not_none():
    from dashboard.compare_table import block_title

    assert block_title(("mnist", "None", "None"), BLOCK) == "mnist, no perturbation preset"
    assert (
        block_title(("mnist", "high", "250"), BLOCK) == "mnist, high perturbation, 250 generations"
    )
    cols = ["axis: strategy_params.perturbation", "axis: classifier_b"]
    assert block_title(("high", "None"), cols) == "perturbation = high, classifier B = none"


def test_a_grid_cell_of_a_whole_budget_search_says_evaluations_not_iterations():
    from dashboard.compare import AXIS, pivot

    table = pd.DataFrame(
        {
            f"{AXIS}strategy": ["ga", "nsga2"],
            "misclassified_pct": [40.0, 60.0],
            "misclassified": [4, 6],
            "iterations_icst": [12.25, 1.0],  # NSGA-II's "1 iteration": its whole budget
            "whole_budget": [False, True],
            "evaluations_per_seed": [180.0, 1500.0],
        }
    )
    table.attrs.update(blocks=[], along=f"{AXIS}strategy")
    cells = pivot(table).iloc[0]
    assert cells["ga"] == "40% (4) / 12.2" and cells["nsga2"] == "60% (6) / 1,500 evaluations"
