"""Schema 8 (issue 14): a version-6 store gains the second classifier's columns, the
archive and validity tables, and keeps its single-classifier rows as they were."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from store import SCHEMA_VERSION, Store, maintenance
from store import campaigns as sc
from store import differential as sd
from store.admin import delete_campaign
from tests.helpers import old_store

V6_SEEDS = """CREATE TABLE seeds (campaign_id VARCHAR NOT NULL, seed_idx INTEGER NOT NULL,
    source_index INTEGER, seed_label INTEGER NOT NULL, seed_pred INTEGER NOT NULL,
    seed_margin DOUBLE NOT NULL, viable BOOLEAN NOT NULL, status VARCHAR NOT NULL,
    misclassified BOOLEAN, iterations INTEGER, evaluations BIGINT, final_pred INTEGER,
    final_fitness DOUBLE, final_top1 DOUBLE, final_top2 DOUBLE, latent_distance DOUBLE,
    seed_image VARCHAR, result_image VARCHAR, improvements_image VARCHAR, elapsed_s DOUBLE,
    target INTEGER, PRIMARY KEY (campaign_id, seed_idx))"""


def test_a_version_6_store_gains_the_differential_columns_and_tables(tmp_path: Path):
    path = old_store(
        tmp_path / "latentfuzz.duckdb",
        6,
        V6_SEEDS,
        "INSERT INTO seeds (campaign_id, seed_idx, seed_label, seed_pred, seed_margin, viable, "
        "status, final_pred) VALUES ('c', 0, 3, 3, 1.5, true, 'failed', 5)",
    )
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    assert SCHEMA_VERSION >= 8
    s = sc.seeds(store, "c")
    assert s["final_pred"].tolist() == [5] and s["seed_pred_b"].isna().all()
    assert s["status"].tolist() == ["misclassified"]  # schema 7 renamed it on the way
    assert "final_pred_b" in s.columns
    assert sd.archive(store, "c").empty and sd.validity(store, "c").empty


def test_validity_scores_replace_per_filter_and_go_with_the_campaign(tmp_path: Path):
    store = Store(tmp_path / "latentfuzz.duckdb")
    rows = pd.DataFrame(
        {
            "kind": ["archive", "archive"],
            "ref": [0, 1],
            "validator": "x",
            "score": [0.2, 0.9],
            "threshold": 0.5,
            "valid": [False, True],
        }
    )
    sd.write_validity(store, "c", rows)
    sd.write_validity(store, "c", rows.assign(score=[0.6, 0.9], valid=[True, True]))
    v = sd.validity(store, "c")
    assert v["score"].tolist() == [0.6, 0.9]  # replaced, never duplicated
    with store.write() as con:
        con.execute(
            "INSERT INTO campaigns (id, status, created_at, dataset, generator, "
            "classifier, strategy, n_seeds, random_seed, config, environment, dir) "
            "VALUES ('c', 'finished', now(), 'mnist', 'g', 'a', 'ga', 1, 0, '{}', '{}', "
            "'campaigns/c')"
        )
    delete_campaign(store, tmp_path, "c")
    assert sd.validity(store, "c").empty
