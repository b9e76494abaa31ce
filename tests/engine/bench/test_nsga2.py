"""`latentfuzz bench nsga2` (engine/bench/nsga2.py): NSGA-II share of a generation."""

from __future__ import annotations


def test_bench_nsga2_reports_its_share_of_a_generation():
    from engine.bench.nsga2 import bench_nsga2

    (row,) = bench_nsga2(("pca",), seeds=1, generations=3, population=8)
    assert 0 < row["nsga2_share"] < 1 and 0 < row["model_share"] < 1
    assert row["nsga2_share"] + row["model_share"] < 1  # both are parts of the wall time
    assert row["seconds_per_generation"] > 0 and row["triggering"] >= 0
