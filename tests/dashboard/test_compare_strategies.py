"""Compare across strategies: blocks of equal dataset and evaluation budget."""

from __future__ import annotations

import pandas as pd

from dashboard.compare import (
    BLOCK,
    STRATEGY_BLOCK,
    block_columns,
    blocks,
    markdown_table,
    significance,
)


def table(strategies: list[str], eval_budgets: list[int]) -> pd.DataFrame:
    n = len(strategies)
    return pd.DataFrame({
        "campaign": list("abcd")[:n], "name": list("ABCD")[:n], "dataset": ["mnist"] * n,
        "generator": ["mnist-vae"] * n, "preset": ["strong", None, "strong", "strong"][:n],
        "budget": [250, 124, 150, 250][:n], "strategy": strategies,
        "eval_budget": eval_budgets, "seeds": [30] * n, "viable": [27] * n,
        "viable_pct": [90.0] * n, "misclassified": [27, 27, 3, 20][:n],
        "misclassified_pct": [100.0, 100.0, 11.0, 74.0][:n],
        "iterations_icst": [12.0, 1.0, 140.0, 50.0][:n],
        "iterations_icst_std": [5.0] * n, "iterations_to_failure": [12.0] * n,
        "iterations_to_failure_std": [5.0] * n, "labelled": [0] * n, "valid": [0] * n,
        "valid_pct": [None] * n, "preserved": [0] * n, "preserved_pct": [None] * n,
    })  # fmt: skip


def test_one_strategy_keeps_the_icst_blocks():
    t = table(["ga", "ga"], [3760, 3760])
    assert block_columns(t) == BLOCK


def test_strategies_are_compared_at_equal_dataset_and_evaluation_budget():
    t = table(["ga", "sinvad", "random"], [3760, 3740, 3750])
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
    t = table(["ga", "ga", "sinvad"], [3760, 3760, 3740])
    t["preset"] = ["low", "high", None]
    t["status"] = ["finished", "finished", "running"]
    # The two GA campaigns keep their ICST blocks (low, high): they are not compared.
    assert block_columns(t) == BLOCK
    m = significance(t, {c: pd.Series([1.0, 2.0]) for c in t["campaign"]})
    assert m.loc[[0, 1], "misclassified_pct"].tolist() == ["best", "best"]
    t["status"] = "running"  # nothing finished: the campaigns' own grouping
    assert block_columns(t) == STRATEGY_BLOCK


def test_campaigns_of_other_generators_or_failure_criteria_never_share_a_block():
    """A differential campaign's "100 (4)" disagreements were marked best against a plain
    campaign's misclassifications in one block, and a VAE random campaign was ranked
    against a GAN NSGA-II one."""
    t = table(["ga", "random"], [3760, 3760])
    t["generator"] = ["mnist-vae", "mnist-gan"]
    assert len(blocks(t)) == 2
    t = table(["ga", "ga"], [3760, 3760])
    t["preset"], t["budget"] = "strong", 250  # the ICST block of both, but for this:
    t["criterion"] = ["misclassified", "disagree"]
    assert block_columns(t) == ["criterion", *BLOCK]
    assert len(blocks(t)) == 2
    marks = significance(t, {c: pd.Series([1.0, 2.0]) for c in "ab"})
    assert marks["misclassified_pct"].tolist() == ["best", "best"]  # each alone
    md = markdown_table(t, marks)
    assert "strong perturbation, 250 generations; failing: A and B disagree**" in md
    assert "| % A and B disagree (#) |" in md and "| % misclassification (#) |" in md
    t["criterion"] = "misclassified"  # one criterion: the ICST blocks as before
    assert block_columns(t) == BLOCK


def test_campaigns_of_different_objectives_get_one_convergence_chart_each(tmp_path, monkeypatch):
    """A margin (logits) and a boundary (1e6, then a latent distance) campaign shared one
    "median best fitness" axis: SINVAD's 1e6 flattened the GA's curve to zero."""
    import json

    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from tests.helpers import page_opener

    ga = run_campaign(
        parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 4}}), tmp_path
    ).campaign_id
    sinvad = run_campaign(parse_config(
        {"seeds": 3, "seed": 1, "strategy": "sinvad", "strategy_params": {"generations": 4}}),
        tmp_path).campaign_id  # fmt: skip
    ga2 = run_campaign(
        parse_config({"seeds": 3, "seed": 2, "strategy_params": {"generations": 4}}), tmp_path
    ).campaign_id
    at = page_opener(tmp_path, monkeypatch)("compare.py", id=[ga, sinvad, ga2])
    assert not at.exception, at.exception
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    titles = [s["title"] for s in specs if "layer" in s]
    assert titles == ["objective: margin", "objective: boundary"]
    margin, boundary = (s for s in specs if "layer" in s)

    def color(spec) -> dict:
        return {**spec.get("encoding", {}), **spec["layer"][0].get("encoding", {})}["color"]

    # Each lists its own campaigns; a campaign keeps its colour across the charts.
    assert len(color(margin)["legend"]["values"]) == 2
    assert len(color(boundary)["legend"]["values"]) == 1
    assert color(margin)["scale"]["domain"] == color(boundary)["scale"]["domain"]
    assert len(color(margin)["scale"]["domain"]) == 3
    assert any("One chart per objective (margin, boundary)" in c.value for c in at.caption)


def test_a_grid_along_classifier_b_splits_its_blocks_by_criterion():
    """A grid whose axis is classifier_b: its own blocks (the other axes) put a plain and
    a differential cell together, and the disagreements were marked best."""
    t = table(["ga", "ga"], [3760, 3760])
    t["criterion"] = ["misclassified", "disagree"]
    t.attrs["blocks"], t.attrs["along"] = ["axis: seed"], "axis: classifier_b"
    t["axis: seed"], t["axis: classifier_b"] = ["1", "1"], ["None", "mnist-lenet5"]
    assert block_columns(t) == ["criterion", "axis: seed"]
    assert len(blocks(t)) == 2
    md = markdown_table(t, significance(t, {c: pd.Series([1.0]) for c in "ab"}))
    assert "seed = 1; failing: A and B disagree**" in md


def test_a_campaign_without_a_recorded_objective_is_not_called_margin():
    """An imported campaign's config has no fitness: it was grouped as "margin"."""
    from dashboard.compare import by_objective

    camps = pd.DataFrame({"id": ["a", "b", "c"],
                          "config": [{"fitness": "boundary"}, {}, None]})  # fmt: skip
    assert by_objective(camps, ["a", "b", "c"]) == {"boundary": ["a"], "not recorded": ["b", "c"]}
