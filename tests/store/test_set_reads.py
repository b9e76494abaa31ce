"""Set-based reads: the number of queries does not grow with the number of campaigns
(counted, not timed), and finished campaigns' data is cached on the dashboard."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.labelling.validity import failing_seeds
from store import Store
from store import campaigns as sc
from store.connection import Store as StoreClass
from tests.helpers import page_opener

TABLES = {
    "campaigns": "id",
    "seeds": "campaign_id",
    "generations": "campaign_id",
    "individuals": "campaign_id",
    "images": "campaign_id",
    "campaign_metrics": "campaign_id",
}


def clone(store: Store, src: str, dst: str) -> None:
    """A copy of campaign `src`'s rows under id `dst` (what a store of many campaigns holds)."""
    with store.write() as con:
        for table, key in TABLES.items():
            name = f", '{dst}' AS name" if table == "campaigns" else ""
            con.execute(
                f"INSERT INTO {table} SELECT * REPLACE ('{dst}' AS {key}{name}) FROM {table} "
                f"WHERE {key} = '{src}'"
            )


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config(
        {"seeds": 4, "seed": 1, "strategy_params": {"generations": 40, "perturbation": "strong"}}
    )
    src = run_campaign(cfg, home, campaign_id="c00").campaign_id
    store = Store(home / "latentfuzz.duckdb")
    ids = [src] + [f"c{i:02d}" for i in range(1, 20)]
    for cid in ids[1:]:
        clone(store, src, cid)
    return home, ids


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    sqls: list[str] = []
    real = StoreClass.query

    def query(self, sql, params=None):
        sqls.append(sql)
        return real(self, sql, params)

    monkeypatch.setattr(StoreClass, "query", query)
    return sqls


def test_failing_seeds_over_many_campaigns_is_two_queries(many, counted):
    home, ids = many
    store = Store(home / "latentfuzz.duckdb")
    counted.clear()
    pool = failing_seeds(store, ids)
    assert len(counted) == 2
    # The same rows as reading campaign by campaign.
    one = sc.seeds(store, ids[0])
    one = one[one["misclassified"].fillna(False).astype(bool) & one["result_image"].notna()]
    assert len(pool) == len(ids) * len(one) > 0
    assert pool["campaign_id"].tolist() == [c for c in ids for _ in range(len(one))]
    assert (pool[pool.campaign_id == ids[3]]["seed_idx"].tolist()) == one["seed_idx"].tolist()
    assert set(pool["generator"]) == {"mnist-vae"}
    with pytest.raises(ConfigError, match="no campaign 'nope'"):
        failing_seeds(store, [ids[0], "nope"])


def test_set_queries_keep_the_order_asked(many):
    home, ids = many
    store = Store(home / "latentfuzz.duckdb")
    asked = [ids[5], ids[1], ids[9]]
    assert sc.campaigns_by_id(store, asked)["id"].tolist() == asked
    s = sc.seeds_of(store, asked)
    assert list(dict.fromkeys(s["campaign_id"])) == asked
    assert isinstance(sc.campaigns_by_id(store, asked)["config"][0], dict)
    g = sc.best_fitness_of(store, asked)
    pd.testing.assert_frame_equal(
        g[g.campaign_id == ids[5]].drop(columns="campaign_id").reset_index(drop=True),
        sc.generations(store, ids[5])[list(g.columns[1:])],
    )
    assert sc.campaigns_by_id(store, []).empty


def test_compare_queries_do_not_grow_with_campaigns_and_finished_ones_are_cached(
    many, counted, monkeypatch
):
    home, ids = many
    app = page_opener(home, monkeypatch)
    import streamlit as st

    st.cache_data.clear()
    at = app("compare.py")
    runs = {}
    for n in (2, 5, 10):
        at.multiselect[0].set_value(ids[:n])
        counted.clear()
        at.run()
        assert not at.exception
        assert at.markdown[0].value.count("| c") >= n  # a row per campaign
        runs[n] = len(counted)
    # Only finished campaigns here: 10 cost no more queries than 2.
    assert runs[10] == runs[5] == runs[2]
    counted.clear()
    at.run()  # the same selection again: its campaigns, seeds and bests come from the cache
    assert len(counted) < runs[10]
    assert not any("FROM seeds WHERE campaign_id IN" in q for q in counted)
