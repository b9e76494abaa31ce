"""Schema 5 (issue 13): a version-4 store gains the campaign_metrics table on open, and a
metrics row round-trips through store.metrics and the named queries."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from store import SCHEMA_VERSION, Store, maintenance
from store import metrics as sm
from store.metrics import write_metrics
from tests.helpers import old_store

ROW = {
    "evaluations": 100,
    "failing_evaluations": 7,
    "error_rate": 0.07,
    "success_rate": 0.5,
    "label_diversity": 1.5,
    "mean_mse": 0.02,
    "mean_ssim": 0.8,
    "failures_per_1k": 20.0,
    "result_gap_median": 0.1,
    "test_gap_median": 0.99,
    "result_gaps": [0.1, 0.2],
    "test_gaps": [0.99],
    "per_generation": [{"generation": 1, "error_rate": 0.5}],
}


def test_a_version_4_store_gets_the_metrics_table(tmp_path: Path):
    path = old_store(tmp_path / "v4.duckdb", 4)
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    assert sm.metrics(store, "x") is None
    write_metrics(store, "x", ROW)
    write_metrics(store, "x", {**ROW, "evaluations": 200})  # replaces, never duplicates
    m = sm.metrics(store, "x")
    assert m["evaluations"] == 200 and m["result_gaps"] == [0.1, 0.2]
    assert sm.metrics_table(store, ["x"])["error_rate"].tolist() == [0.07]


def test_no_upgrade_under_a_running_campaign(tmp_path: Path):
    """A campaign run by an older latentfuzz would refuse the upgraded store at its next
    write; the upgrade waits until no campaign of the home is running."""
    from store import StoreError
    from store.liveness import CampaignLock

    path = old_store(tmp_path / "latentfuzz.duckdb", 4)
    lock = CampaignLock(tmp_path, "20260101-000000-beef").acquire()
    try:
        with pytest.raises(StoreError, match="campaign 20260101-000000-beef is still running"):
            Store(path)
        con = duckdb.connect(str(path), read_only=True)
        assert con.execute("SELECT value FROM meta").fetchone() == ("4",)  # untouched
        con.close()
    finally:
        lock.release()
    assert maintenance.schema_info(Store(path))["schema_version"] == str(SCHEMA_VERSION)


def test_schema_6_adds_the_target_and_confusion_columns(tmp_path: Path):
    path = old_store(
        tmp_path / "v5.duckdb",
        5,
        "CREATE TABLE seeds (campaign_id VARCHAR, seed_idx INTEGER)",
        "CREATE TABLE campaign_metrics (campaign_id VARCHAR PRIMARY KEY)",
        "INSERT INTO seeds VALUES ('old', 0)",
    )
    store = Store(path)
    assert store.query("SELECT target FROM seeds")["target"].isna().all()
    cols = store.query(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'campaign_metrics'"
    )["column_name"].tolist()
    assert "test_confusion" in cols
