"""Schema 13 (issue 37): a store of schema 11 gains campaign_metrics.realism on open; a
campaign's realism round-trips through write_realism, metrics and the set-based
realism_table, which names each campaign's generator (the effectiveness study and Compare
show it per generator)."""

from __future__ import annotations

from pathlib import Path

from store import SCHEMA_VERSION, Store, create_campaign, maintenance
from store import metrics as sm
from store.schema import DDL
from tests.helpers import old_store
from tests.store.test_contract import campaign_row
from tests.store.test_metrics_migration import ROW

#: campaign_metrics as schema 11 made it: without the realism column.
METRICS_11 = next(d for d in DDL if "TABLE IF NOT EXISTS campaign_metrics" in d)
METRICS_11 = METRICS_11[: METRICS_11.index("differential JSON") + len("differential JSON")] + ")"

REALISM = {
    "fid": 12.5,
    "kid": 0.03,
    "kid_sd": 0.01,
    "images": 20,
    "reference_images": 1000,
    "features": "penultimate of mnist-convnet",
    "note": "classifier features, not Inception",
}


def test_a_schema_11_store_gains_the_realism_column(tmp_path: Path):
    path = old_store(tmp_path / "v11.duckdb", 11, METRICS_11)
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    cols = store.query_rows(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'campaign_metrics'"
    )
    assert "realism" in {c["column_name"] for c in cols}


def test_realism_round_trips_and_is_read_per_campaign_with_its_generator(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    for cid, gen in (("a", "mnist-vae"), ("b", "mnist-gan"), ("c", "mnist-dm")):
        create_campaign(store, {**campaign_row(cid), "generator": gen})
        sm.write_metrics(store, cid, ROW)
    assert sm.metrics(store, "a")["realism"] is None  # not measured yet
    sm.write_realism(store, "a", REALISM)
    sm.write_realism(store, "b", {**REALISM, "fid": None, "kid": None, "images": 1})
    assert sm.metrics(store, "a")["realism"] == REALISM
    t = sm.realism_table(store, ["a", "b", "c"])
    assert t["campaign_id"].tolist() == ["a", "b"]  # c has none
    assert t["generator"].tolist() == ["mnist-vae", "mnist-gan"]
    assert t["fid"].iloc[0] == 12.5 and t["fid"].isna().iloc[1]
    assert t["images"].tolist() == [20, 1] and t["reference_images"].iloc[0] == 1000
    assert t["features"].iloc[0] == "penultimate of mnist-convnet"
    empty = sm.realism_table(store, [])
    assert empty.empty and {"campaign_id", "generator", "fid", "kid"} <= set(empty.columns)
    assert sm.REALISM_LABELS["fid"] == "FID (classifier features, not Inception)"
