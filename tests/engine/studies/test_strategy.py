"""`latentfuzz study --strategies`: equal evaluation budgets, same seeds, one table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import ConfigError
from engine.search.strategies import STRATEGIES
from engine.studies.strategy import evaluation_budget, run_strategy_study, strategy_configs
from store import Store
from store import campaigns as sc


def test_the_ga_budget_counts_the_first_population_then_children():
    assert evaluation_budget(250) == 25 + 15 * 249 == 3760


@pytest.mark.parametrize(
    "name, generations", [("ga", 250), ("sinvad", 1 + (3760 - 50) // 30), ("random", 150)]
)
def test_every_strategy_gets_the_largest_budget_within_the_gas(name: str, generations: int):
    cls = STRATEGIES.get(name)
    raw = cls.with_budget(3760, {})
    assert raw["generations"] == generations
    p = cls.Params(**raw)
    assert cls.budget(p) <= 3760 < cls.budget(p.model_copy(update={"generations": generations + 1}))


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
    study, table = run_strategy_study(home, ["ga", "sinvad", "random"], seeds=3, generations=6)
    assert table["strategy"].tolist() == ["ga", "sinvad", "random"]
    assert table["fitness"].tolist() == ["margin", "boundary", "margin"]
    budget = evaluation_budget(6)
    assert (table["budget"] <= budget).all()
    store = Store(home / "latentfuzz.duckdb")
    sources = [sc.seeds(store, c)["source_index"].tolist() for c in table["campaign"]]
    assert sources[0] == sources[1] == sources[2]
    per_seed = [sc.seeds(store, c)["evaluations"].max() for c in table["campaign"]]
    assert max(per_seed) <= budget
    assert table["error_rate"].notna().all() and table["test_gap_median"].gt(0.9).all()
