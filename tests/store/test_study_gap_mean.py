"""SINVAD's boundary statistic is the mean top-2 gap (its paper: 0.06); the strategy
study's table sets it beside the stored median, read from the stored gaps."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from engine.cli.studies import print_table
from store import Store
from store import studies as ss
from store.metrics import write_metrics

ROW = {
    "evaluations": 100,
    "failing_evaluations": 3,
    "error_rate": 0.03,
    "success_rate": 1.0,
    "label_diversity": 1.0,
    "mean_mse": 0.01,
    "mean_ssim": 0.7,
    "failures_per_1k": 30.0,
    # A long tail: the median says 0.000, the mean 0.100.
    "result_gap_median": 0.0,
    "test_gap_median": 1.0,
    "result_gaps": [0.0, 0.0, 0.3],
    "test_gaps": [1.0, 1.0, 0.94],
    "per_generation": [],
    "test_confusion": None,
}


def test_the_study_table_gives_the_mean_gap_beside_the_median(tmp_path: Path):
    store = Store(tmp_path / "latentfuzz.duckdb")
    with store.write() as con:
        con.execute(
            "INSERT INTO campaigns (id, status, created_at, dataset, generator, classifier, "
            "strategy, n_seeds, random_seed, config, environment, dir, study) VALUES ('c', "
            "'finished', now(), 'mnist', 'g', 'a', 'sinvad', 3, 0, '{}', '{}', 'campaigns/c', "
            "'st')"
        )
    write_metrics(store, "c", ROW)
    df = ss.strategy_table(store, "st")
    assert df["result_gap_median"][0] == 0.0
    assert df["result_gap_mean"][0] == pytest.approx(0.1)
    assert df["test_gap_mean"][0] == pytest.approx(0.98)
    console = Console(width=400, record=True)
    console.print(print_table(df, "st"))
    text = console.export_text()
    assert "top-2 gap, results / test: median (mean)" in text
    assert "0.000 (0.100) / 1.000 (0.980)" in text
