"""`latentfuzz bench` reports engine efficiency per strategy (GA, SINVAD, random)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rich.console import Console

from engine.bench.campaign import bench_engine
from engine.core.errors import ConfigError
from engine.studies.strategy import check_strategies


def test_bench_reports_every_strategy(tmp_path: Path):
    console = Console(record=True, width=200)
    out = bench_engine(
        seeds=2,
        generations=3,
        repeats=1,
        home=tmp_path,
        console=console,
        strategies=("ga", "sinvad", "random"),
    )
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


def test_bench_measures_each_size_against_the_physical_limit(tmp_path: Path):
    from engine.bench.scale import bench_scale

    console = Console(record=True, width=250)
    out = bench_scale(
        (3,),
        generations=2,
        large_generations=1,
        console=console,
        help_runs=1,
        limit_budget_s=2.0,
        sustain_s=0.2,
        max_runs=2,
    )
    assert out["ranked"] == sorted(out["peak"], key=out["peak"].get, reverse=True)[:3]
    assert [r["seeds"] for r in out["sizes"]] == [3]
    for r in out["sizes"]:
        # Efficiency is against the best batch's raw throughput, not the campaign's own,
        # measured around this campaign.
        assert r["limit_batch"] in out["ranked"]
        assert r["limit"] == pytest.approx((r["limit_before"] + r["limit_after"]) / 2)
        assert r["efficiency"] == pytest.approx(r["campaign_evals_per_s"] / r["limit"])
        assert r["evaluations"] > 0 and 0 <= r["store_share"] < 1
        assert r["startup_s"] > 0 and r["peak_memory_gb"] > 0
        assert 0 < r["shape_bound"] <= 1
        # A campaign this short runs again (here up to 2 runs); the median run counts.
        assert len(r["runs"]) == 2 and r["campaign_evals_per_s"] == min(r["runs"])
    assert out["help_seconds"] > 0
    text = console.export_text()
    assert "physical limit" in text and "latentfuzz --help" in text
    assert "shape bound" in text and 1 in out["peak"]  # the sweep reaches single items


def test_sustained_counts_every_timed_call_but_the_untimed_first():
    from engine.bench.scale import sustained, sustained_limit

    calls = []

    def fn(n: int) -> None:
        calls.append(n)
        time.sleep(0.01)

    rate = sustained(fn, 8, 0.1)
    timed = len(calls) - 1
    assert timed >= 5 and set(calls) == {8}
    # Each timed call takes at least 10 ms: at most 8 items per 10 ms.
    assert 0 < rate <= 800
    calls.clear()
    assert sustained_limit(lambda n: time.sleep(0.01 if n == 4 else 0.04), [2, 4], 0.1)[1] == 4


def test_the_median_run_counts_whole():
    from engine.bench.scale import median_run

    runs = [{"campaign_evals_per_s": v, "store_share": v / 1e4} for v in (300.0, 100.0, 200.0)]
    assert median_run(runs) == {"campaign_evals_per_s": 200.0, "store_share": 0.02}
    assert median_run(runs[:2])["campaign_evals_per_s"] == 100.0  # the lower middle


def test_a_limit_that_moved_around_a_size_is_named():
    from engine.bench.scale import caveats

    def row(seeds, before, after, eff):
        return {"seeds": seeds, "limit_before": before, "limit_after": after, "efficiency": eff}

    # Run H of the README: the 10-seed limit went from 2,653 to 4,626 evals/s.
    lines = caveats([row(10, 2653.0, 4625.6, 1.008), row(100, 4544.7, 4300.0, 0.95)])
    assert len(lines) == 2
    assert lines[0].startswith("10 seeds: the limit moved by 74% between before (2,653)")
    assert "efficiency above 1" in lines[1]
    assert caveats([row(10, 4000.0, 4500.0, 0.9)]) == []  # 12.5%: within the noise allowed


def test_the_shape_bound_is_what_batch_sizes_allow():
    from engine.bench.scale import shape_bound

    flat = {1: 100.0, 64: 100.0, 256: 100.0}
    assert shape_bound([1, 15, 300], flat) == pytest.approx(1.0)
    # Batches of 8 run at half the best rate: a campaign of 8 candidates a step can reach
    # half the limit, however well its engine does.
    curve = {8: 50.0, 64: 100.0, 128: 100.0}
    assert shape_bound([8, 8, 8], curve) == pytest.approx(0.5)
    # 16 candidates: one batch of 16, at the rate linear between 8 and 64.
    assert shape_bound([16], curve) == pytest.approx((50 + 50 * 8 / 56) / 100)
    # 300 past a falling curve: three batches of 100 beat 256 + 44 and two of 150.
    falling = {8: 50.0, 100: 100.0, 256: 60.0}
    assert shape_bound([300], falling) == pytest.approx(1.0)
    # Steps weigh by their time, not their count: 1,000 candidates at full rate and 8 at
    # half take 10 + 0.16 time units for 1,008 items.
    assert shape_bound([1000, 8], curve) == pytest.approx(1008 / (1000 / 100 + 8 / 50) / 100)


def test_candidates_per_step_add_up_to_the_campaigns_evaluations(tmp_path: Path):
    from engine.bench.scale import candidates_per_step
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store
    from store import campaigns as sc

    cfg = parse_config(
        {"seeds": 4, "seed": 3, "strategy_params": {"generations": 6, "perturbation": "high"}}
    )
    res = run_campaign(cfg, tmp_path)
    store = Store(tmp_path / "latentfuzz.duckdb")
    counts = candidates_per_step(store, res.campaign_id)
    # The evaluator's own record of every batch, summed per call: the same steps.
    assert sum(counts) == res.evaluations == int(sc.campaign(store, res.campaign_id)["evaluations"])
    assert counts[0] == 4 and len(counts) == 1 + int(
        sc.generations(store, res.campaign_id)["generation"].max()
    )
    assert counts == res.batch_sizes  # the suite's batch (2,048) holds any step whole


def test_bench_times_the_bundled_classifiers_as_campaigns_run_them():
    from engine.bench.campaign import bench_classifiers

    rows = bench_classifiers("mnist", write_cards=False, console=Console(file=None, quiet=True))
    names = {r["classifier"] for r in rows}
    assert {"mnist-convnet", "mnist-lenet5"} <= names
    assert all(r["graph"] for r in rows)  # the optimised graphs a campaign uses
    assert all(r["ms_per_image_b1"] > 0 and r["ms_per_image_b25"] > 0 for r in rows)
