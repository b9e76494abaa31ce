"""The Campaigns list in the words of the runs it shows: a search of the whole budget
(NSGA-II) is told in generations and evaluations, never in iterations, and the failure
columns are headed by the criterion of the campaigns shown ("misclassified %" headed
reached targets and disagreements)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A home with a GA, a targeted GA (to class 3) and an NSGA-II campaign of two
    classifiers."""
    home = tmp_path_factory.mktemp("home")
    ga = {"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}}
    nsga = {
        "generator": "gan",
        "classifier": "convnet",
        "classifier_b": "lenet5",
        "strategy": "nsga2",
        "seeds": 2,
        "seed": 1,
        "name": "diff",
        # The fewest evaluations that still make a whole-budget search: 2 x 8 per seed.
        "strategy_params": {"generations": 2, "population": 8, "objectives": "divergence"},
    }
    ids = {
        "ga": run_campaign(parse_config({**ga, "name": "plain"}), home).campaign_id,
        "targeted": run_campaign(
            parse_config({**ga, "name": "aimed", "fitness": "targeted", "target": 3}), home
        ).campaign_id,
        "nsga2": run_campaign(parse_config(nsga), home).campaign_id,
    }
    return home, ids


def headers(at) -> dict[str, dict]:
    """The shown table's column settings, by column: label, help, hidden."""
    return {k: v for k, v in json.loads(at.dataframe[0].proto.columns).items()}


def label(cols: dict, col: str) -> str | None:
    c = cols.get(col)
    return None if c is None or c.get("hidden") else c.get("label")


def test_nsga2_has_no_iterations_in_a_mixed_list_and_the_header_says_why(mixed, monkeypatch):
    home, ids = mixed
    at = page_opener(home, monkeypatch)("campaigns.py")
    assert not at.exception, at.exception
    table = at.dataframe[0].value.set_index("id")
    nsga, ga = table.loc[ids["nsga2"]], table.loc[ids["ga"]]
    listed = sc.list_campaigns(Store(home / "latentfuzz.duckdb")).set_index("id")
    # Its iteration cells are blank (NaN, drawn as the empty placeholder), not 0 or its
    # first-found generation; the GA keeps its figure.
    assert nsga.isna()[["iterations_icst", "iterations_to_failure"]].all()
    assert ga["iterations_icst"] == listed.loc[ids["ga"], "iterations_icst"]
    assert at.dataframe[0].proto.placeholder == ""
    # Its generations and evaluations instead; blank for the GA.
    assert nsga["generations"] == 2 and nsga["evaluations_per_seed"] == 16
    assert pd.isna(ga["generations"]) and pd.isna(ga["evaluations_per_seed"])
    cols = headers(at)
    assert "searches its whole budget past the first failure" in cols["iterations_icst"]["help"]
    assert label(cols, "generations") == "generations"
    assert label(cols, "evaluations_per_seed") == "evaluations"


def test_an_nsga2_only_view_shows_generations_and_evaluations_not_iterations(mixed, monkeypatch):
    home, _ = mixed
    at = page_opener(home, monkeypatch)("campaigns.py", strategy="nsga2")
    assert not at.exception, at.exception
    shown = [
        c for c in at.dataframe[0].value.columns if c not in ("id", "criterion", "whole_budget")
    ]
    assert shown[:4] == ["open", "name", "misclassified_pct", "generations"]
    cols = headers(at)
    assert label(cols, "iterations_icst") is None and label(cols, "iterations_to_failure") is None
    said = " ".join(str(label(cols, c)) for c in cols)
    assert "iteration" not in said, said
    # Its own criterion's words for the failure columns.
    assert label(cols, "misclassified_pct") == "A and B disagree %"
    assert label(cols, "misclassified") == "A and B disagree"


def test_a_list_of_mixed_criteria_says_failed_and_what_fails_under_each(mixed, monkeypatch):
    home, _ = mixed
    at = page_opener(home, monkeypatch)("campaigns.py")
    cols = headers(at)
    assert label(cols, "misclassified_pct") == "failed %"
    assert label(cols, "misclassified") == "failed"
    said = cols["misclassified_pct"]["help"]
    for words in ("misclassified: ", "reached target: ", "A and B disagree: "):
        assert words in said, said
    # A list of one criterion: its own word.
    at = page_opener(home, monkeypatch)("campaigns.py", q="plain")
    assert label(headers(at), "misclassified_pct") == "misclassified %"


def test_the_result_columns_still_fit_1280_px(mixed, monkeypatch):
    """The pinned name and the figures that tell runs apart fit a 1,280 px window beside
    the sidebar (790 px of table after the tick boxes, measured in Chromium), whatever
    the criterion's words: the first six columns, as before."""
    home, _ = mixed
    for query in ({}, {"strategy": "nsga2"}, {"q": "aimed"}):
        at = page_opener(home, monkeypatch)("campaigns.py", **query)
        cols = headers(at)
        first = [c for c in at.dataframe[0].value.columns if label(cols, c)][:6]
        assert first[-1] in ("iterations_to_failure", "evaluations_per_seed"), first
        assert sum(cols[c]["width"] for c in first) <= 790, (query, first)


def test_compare_gives_an_nsga2_block_its_generations_and_evaluations(mixed, monkeypatch):
    home, ids = mixed
    at = page_opener(home, monkeypatch)("compare.py", id=[ids["ga"], ids["nsga2"]])
    assert not at.exception, at.exception
    table = at.markdown[0].value
    nsga = table[table.index("A and B disagree") :]  # its own block: another criterion
    nsga = nsga[: nsga.find("**Block:", 1) if "**Block:" in nsga[1:] else len(nsga)]
    assert "| generations | evaluations per seed, mean | first failure found in generation" in nsga
    assert "iteration" not in nsga, nsga
    assert "| diff | " in nsga and "| 2 | 16 | " in nsga
    # The GA's block keeps the ICST iterations.
    assert "iterations (ICST), mean (std)" in table.replace(nsga, "")


def test_a_block_mixing_whole_budget_and_stopping_searches_blanks_the_first_ones(mixed):
    """A study's block of NSGA-II beside a GA that stops at the first failure (the
    differential study's baseline with stop_at_failure on): NSGA-II's iteration cells
    are blank, and a note says why and gives its generations and evaluations."""
    from dashboard.compare import campaign_rows, significance
    from dashboard.compare_table import markdown_table

    home, ids = mixed
    store = Store(home / "latentfuzz.duckdb")
    table, iterations, _ = campaign_rows(store, [ids["ga"], ids["nsga2"]])
    # In one block, as a study that gives both the same seeds and budget puts them.
    nsga = table.index[table["campaign"] == ids["nsga2"]][0]
    for key in ("criterion", "generator", "seeds_from", "eval_budget", "dataset"):
        if key in table:
            table[key] = table.loc[nsga, key]
    text = markdown_table(table, significance(table, iterations))
    assert text.count("**Block:") == 1, text
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    cells = [c.strip() for c in rows["diff"].split("|")[1:-1]]
    heads = [c.strip() for c in rows["campaign"].split("|")[1:-1]]
    at = heads.index("iterations (ICST), mean (std)")
    assert cells[at] == cells[at + 1] == ""  # blank, not "n/a", "nan" or "0"
    plain = [c.strip() for c in rows["plain"].split("|")[1:-1]]
    assert plain[at] and plain[at] != "n/a"
    assert "Iterations blank: diff searched the whole budget past the first failure" in text
    assert "diff: 2 generations, 16 evaluations per seed" in text
