"""`latentfuzz study --strategies`: equal evaluation budgets, same seeds, one table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import ConfigError
from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.base import BUDGET_RULE
from engine.studies.strategy import evaluation_budget, run_strategy_study, strategy_configs
from store import Store
from store import campaigns as sc


def test_the_ga_budget_counts_the_first_population_then_children():
    assert evaluation_budget(250) == 25 + 15 * 249 == 3760


@pytest.mark.parametrize(
    "name, generations", [("ga", 250), ("sinvad", 125), ("random", 151), ("nsga2", 38)]
)
def test_every_strategy_gets_the_fewest_generations_that_reach_the_gas_budget(
    name: str, generations: int
):
    """The fewest, the last one cut short: sinvad's 50 + 30 x 124 = 3,770 and random's
    151 x 25 = 3,775 stop at 3,760 (they were given 3,740 and 3,750)."""
    cls = STRATEGIES.get(name)
    raw = cls.with_budget(3760, {})
    assert raw["generations"] == generations and raw["evaluations"] == 3760
    p = cls.Params(**raw)
    fewer = p.model_copy(update={"generations": generations - 1})
    assert cls.budget(fewer) < 3760 <= cls.budget(p)


def test_every_strategy_of_a_study_is_set_exactly_the_same_budget():
    """3,760 / 3,740 / 3,750 before: each strategy rounded the GA's budget to its whole
    generations."""
    names = STRATEGIES.names()
    configs = strategy_configs(names, 3, 1, 250, "mnist", "vae", "s")
    assert [n for n, _ in configs] == names
    budgets = {}
    for name, raw in configs:
        cls = STRATEGIES.get(name)
        s = cls(cls.Params(**raw["strategy_params"]), SearchSpace((8,), -3.0, 3.0, 10))
        budgets[name] = (raw["strategy_params"]["evaluations"], s.evaluation_budget())
    assert set(budgets.values()) == {(3760, 3760)}, budgets


def test_unknown_strategies_are_rejected_in_one_line(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"unknown \['nope'\]; expected a comma-separated"):
        strategy_configs(["ga", "nope"], 3, 1, 10, "mnist", "vae", "s")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "study",
            "--strategies",
            "ga,nope",
            "--home",
            str(tmp_path / "h"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "unknown ['nope']" in r.stderr
    assert not (tmp_path / "h" / "latentfuzz.duckdb").exists()


def test_strategies_run_on_the_same_seeds_at_an_equal_budget(home: Path):
    """A real study, in this process: every campaign records the same budget and rule,
    no seed costs more, and a seed that searched to the end (SINVAD's boundary fitness
    searches every seed on) cost exactly the budget, its last generation cut short."""
    study, table = run_strategy_study(home, ["ga", "sinvad", "random"], seeds=3, generations=6)
    assert table["strategy"].tolist() == ["ga", "sinvad", "random"]
    assert table["fitness"].tolist() == ["margin", "boundary", "margin"]
    budget = evaluation_budget(6)
    assert budget == 25 + 15 * 5 == 100
    assert table["budget"].tolist() == [budget] * 3
    assert table["budget_rule"].tolist() == [BUDGET_RULE] * 3
    store = Store(home / "latentfuzz.duckdb")
    configs = [sc.campaign(store, c)["config"] for c in table["campaign"]]
    assert [c["strategy_params"]["evaluations"] for c in configs] == [budget] * 3
    # SINVAD: 50 + 30 + 30 would be 110; its third generation asks 20 children.
    assert configs[1]["strategy_params"]["generations"] == 3
    sources = [sc.seeds(store, c)["source_index"].tolist() for c in table["campaign"]]
    assert sources[0] == sources[1] == sources[2]
    seeds = [sc.seeds(store, c) for c in table["campaign"]]
    assert all(s["evaluations"].max() <= budget for s in seeds)
    searched = seeds[1][seeds[1]["viable"].astype(bool)]
    assert len(searched) and searched["evaluations"].eq(budget).all()
    assert table["error_rate"].notna().all() and table["test_gap_median"].gt(0.9).all()
