"""`latentfuzz bench` reports engine efficiency per strategy (GA, SINVAD, random)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from engine.bench import bench_engine
from engine.errors import ConfigError
from engine.strategy_study import check_strategies


def test_bench_reports_every_strategy(tmp_path: Path):
    console = Console(record=True, width=200)
    out = bench_engine(seeds=2, generations=3, repeats=1, home=tmp_path, console=console,
                       strategies=("ga", "sinvad", "random"))  # fmt: skip
    assert list(out) == ["ga", "sinvad", "random"]
    for figures in out.values():
        # Every batch was paired with a timed bare twin; efficiency is raw / campaign time.
        assert figures["evaluations"] > 0 and figures["raw_seconds"] > 0
        assert figures["efficiency"] == pytest.approx(
            figures["raw_seconds"] / figures["campaign_seconds"]
        )
        assert 0 <= figures["store_share"] < 1
    # SINVAD's population (50) is twice the GA's (25): more evaluations per generation.
    assert out["sinvad"]["evaluations"] > out["ga"]["evaluations"]
    text = console.export_text()
    assert "median of 1 runs" in text
    for name in ("ga", "sinvad", "random"):
        assert f"{name}: engine efficiency" in text


def test_bench_rejects_an_unknown_strategy():
    with pytest.raises(ConfigError, match=r"unknown \['nope'\]"):
        check_strategies(["ga", "nope"])
