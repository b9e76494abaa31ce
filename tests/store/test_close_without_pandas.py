"""A campaign's close writes its metrics as numpy columns and reads its summary as plain rows
(pandas is 0.4 s of a small campaign's start-up): the same rows and figures as before, and
the same metrics from a recovery folder's Arrow form."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store.metrics import metrics, metrics_frame, put_metrics, write_metrics
from store.tables import arrow

#: A finished campaign's metrics row, every kind of value it holds: counts, rates, a NaN
#: and a None figure, JSON lists (one with nulls inside) and a nested list.
ROW = {
    "evaluations": 250,
    "failing_evaluations": 3,
    "error_rate": 0.012,
    "success_rate": 0.5,
    "label_diversity": 1.0,
    "mean_mse": 0.0123,
    "mean_ssim": float("nan"),
    "failures_per_1k": 12.0,
    "result_gap_median": None,
    "test_gap_median": 0.99,
    "result_gaps": [0.5, 0.25],
    "test_gaps": [0.99, 1.0, 0.75],
    "per_generation": [{"generation": 1, "step": 0.07, "mean_mse": None}],
    "test_confusion": [[9, 1], [0, 10]],
}


def test_the_close_and_a_recovery_folder_store_the_same_metrics(tmp_path: Path):
    store = Store(tmp_path / "latentfuzz.duckdb")
    write_metrics(store, "closed", ROW)
    with store.write() as con:  # what a recovery folder's ingest inserts
        put_metrics(con, "recovered", arrow(metrics_frame(ROW)))
    closed, recovered = metrics(store, "closed"), metrics(store, "recovered")
    assert closed.pop("campaign_id") == "closed" and recovered.pop("campaign_id") == "recovered"
    assert closed == recovered
    # JSON columns come back as the lists written: numpy text arrays would have stored each
    # as one JSON string ('"[0.5, 0.25]"').
    for c in ("result_gaps", "test_gaps", "per_generation", "test_confusion"):
        assert closed[c] == ROW[c], c
    assert closed["mean_ssim"] is None and closed["result_gap_median"] is None
    assert closed["evaluations"] == 250 and closed["mean_mse"] == ROW["mean_mse"]


def old_summary(store: Store, campaign_id: str) -> dict:
    """The summary as it was read through pandas before the close stopped importing it."""
    df = store.query(
        f"""SELECT c.id AS campaign_id, c.status,
               json_extract_string(c.config, '$.criterion') AS criterion,
               coalesce(s.seeds_total, 0) AS seeds_total, coalesce(s.viable, 0) AS viable,
               coalesce(s.misclassified, 0) AS misclassified,
               coalesce(s.searching, 0) AS searching,
               coalesce(s.interrupted, 0) AS interrupted,
               s.iterations_icst, s.iterations_icst_std, s.iterations_to_failure,
               s.iterations_to_failure_std
        FROM campaigns c LEFT JOIN ({sc.SUMMARY}) s ON s.campaign_id = c.id WHERE c.id = ?""",
        [campaign_id],
    )
    return {k: (None if pd.isna(v) else v) for k, v in df.iloc[0].to_dict().items()}


def test_the_summary_is_the_figures_the_pandas_read_gave(home: Path):
    cfg = parse_config(
        {"seeds": 3, "seed": 1, "strategy_params": {"generations": 30, "perturbation": "strong"}}
    )
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    got, want = sc.summary(store, cid), old_summary(store, cid)
    pct = got.pop("misclassified_pct")
    # The words of the search (store.campaigns.WORDS) came after; the old figures stay.
    words = {"evaluations_per_seed", "whole_budget", "generation_budget", "generations"}
    assert {k: v for k, v in got.items() if k not in words} == want
    assert got["whole_budget"] is False and got["generation_budget"] == 30
    assert got["seeds_total"] == 3 and type(got["viable"]) is int
    assert pct == (100.0 * got["misclassified"] / got["viable"] if got["viable"] else None)
    # A mean over one seed has no deviation: None, as pandas' NaN was made None.
    one = [k for k in sc._ITERATION_COLS if k.endswith("_std") and got[k] is None]
    assert all(want[k] is None for k in one)
    assert all(v is None or not (isinstance(v, float) and math.isnan(v)) for v in got.values())
    assert sc.summary(store, "no-such-campaign")["status"] is None
