"""The store contract, run against an in-memory and a file database."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from store import SCHEMA_VERSION, CampaignWriter, Store, StoreError, create_campaign, maintenance
from store import campaigns as sc
from store.failures import failed_as
from store.writer import MAX_SPACING, STORE_SHARE, now
from tests.helpers import old_store


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path: Path) -> Store:
    return Store(":memory:" if request.param == "memory" else tmp_path / "s.duckdb")


def campaign_row(cid: str = "c1", n: int = 2) -> dict:
    return {
        "id": cid,
        "name": cid,
        "status": "running",
        "created_at": now(),
        "dataset": "mnist",
        "generator": "mnist-vae",
        "classifier": "mnist-convnet",
        "strategy": "ga",
        "preset": "high",
        "n_seeds": n,
        "target_class": None,
        "random_seed": 1,
        "config": {"seeds": n},
        "environment": {"torch": "x"},
        "dir": f"campaigns/{cid}",
    }


def seed_rows(cid: str, n: int) -> dict:
    return {
        "seed_idx": np.arange(n),
        "source_index": np.arange(n),
        "seed_label": 3,
        "seed_pred": 3,
        "seed_margin": 1.0,
        "viable": True,
        "status": "searching",
    }


def gen_rows(cid: str, g: int, n: int) -> dict:
    return {
        "seed_idx": np.arange(n),
        "generation": g,
        "best_fitness": 1.0 / g,
        "mean_fitness": 2.0,
        "best_pred": 3,
        "top1_label": 3,
        "top1_prob": 0.9,
        "top2_label": 5,
        "top2_prob": 0.05,
        "step": 0.01,
        "evaluations": 25 * g,
        "elapsed_s": 0.1 * g,
        "image": [None, f"g{g}.png"][:n],
    }


def test_schema_version_and_duckdb_major_are_recorded(store: Store):
    info = maintenance.schema_info(store)
    assert info["schema_version"] == str(SCHEMA_VERSION)
    assert info["duckdb_major"] == duckdb.__version__.split(".")[0] == "2"


def test_empty_store_queries(store: Store):
    assert sc.list_campaigns(store).empty
    assert sc.campaign(store, "nope") is None
    assert sc.summary(store, "nope")["viable"] == 0


def test_write_is_all_or_nothing(store: Store):
    with pytest.raises(RuntimeError), store.write() as con:
        con.execute("INSERT INTO meta VALUES ('x', 'y')")
        raise RuntimeError("boom")
    assert "x" not in maintenance.schema_info(store)


def test_writer_batches_and_finish(store: Store):
    create_campaign(store, campaign_row())
    w = CampaignWriter(store, "c1", flush_seconds=3600)
    w.append("seeds", **seed_rows("c1", 2))
    for g in (1, 2, 3):
        w.append("generations", **gen_rows("c1", g, 2))
        w.maybe_flush()  # an hour has not passed: nothing is written yet
    assert sc.generations(store, "c1").empty
    w.update_seeds(
        seed_idx=[0], status=["misclassified"], misclassified=[True], iterations=3, final_pred=[5]
    )
    w.finish("interrupted", {"wall_seconds": 1.5, "evaluations": 150})
    assert w.flushes == 0  # the rows went in with the final status, in one transaction
    gens = sc.generations(store, "c1")
    assert len(gens) == 6 and gens["generation"].max() == 3
    assert gens["image"].isna().tolist() == [True] * 3 + [False] * 3
    assert gens["image"].dropna().tolist() == ["g1.png", "g2.png", "g3.png"]
    seeds = sc.seeds(store, "c1").set_index("seed_idx")
    assert seeds.loc[0, "status"] == "misclassified" and seeds.loc[0, "iterations"] == 3
    assert seeds.loc[1, "status"] == "interrupted"  # was still searching
    c = sc.campaign(store, "c1")
    assert c["status"] == "interrupted" and c["finished_at"] is not None
    assert c["config"] == {"seeds": 2}
    s = sc.summary(store, "c1")
    assert (s["viable"], s["misclassified"], s["misclassified_pct"]) == (2, 1, 50.0)
    # The seed interrupted while searching has no iterations: it is in neither mean.
    assert s["iterations_to_failure"] == s["iterations_icst"] == 3.0


class Clock:
    """store.writer's clock, moved by the test alone: each reading of the store's time
    (perf_counter) moves it 10 ms, so every flush costs exactly 10 ms, whatever the load."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        self.now += 0.01
        return self.now


def test_flushes_are_spaced_to_keep_the_store_under_its_share(store: Store, monkeypatch):
    """The rule, not a timing: after a flush, the next waits until the writer's time so
    far, the next flush counted at the last one's cost, is STORE_SHARE of the time
    elapsed, never less than flush_seconds and never more than MAX_SPACING of them. On
    the machine's clock a loaded machine's slow flush or late start moved the numbers
    (the share rule then decided where the test expected the bound, or the reverse)."""
    create_campaign(store, campaign_row())
    clock = Clock()
    monkeypatch.setattr("store.writer.time", clock)
    w = CampaignWriter(store, "c1", flush_seconds=2.0, background=False)
    w.append("generations", **gen_rows("c1", 1, 2))
    w.flush()
    assert w.last_flush_seconds == pytest.approx(0.01)
    assert w._interval == 2.0  # a quiet flush of milliseconds: the usual cadence
    clock.now += 1.0  # a second of search
    w.seconds = 0.1  # as if the store had already taken 100 ms (a loaded machine)
    w.append("generations", **gen_rows("c1", 2, 2))
    w.flush()
    elapsed, spent = w._last - w._started, w.last_flush_seconds
    assert 0 < spent < w.seconds
    assert 2.0 < w._interval < MAX_SPACING * 2.0, "the share rule, not a bound, decides here"
    assert w._interval == pytest.approx((w.seconds + spent) / STORE_SHARE - elapsed)
    # Once the next flush has cost as much as this one, the share is STORE_SHARE.
    assert (w.seconds + spent) / (elapsed + w._interval) == pytest.approx(STORE_SHARE)
    w.seconds = 1.0  # a whole second: the share rule would wait about 40 s
    w.append("generations", **gen_rows("c1", 3, 2))
    w.flush()
    assert w._interval == MAX_SPACING * 2.0  # a live view is at most 10 s old
    w.append("generations", **gen_rows("c1", 4, 2))
    clock.now += 9.0  # not due for 10 s: stays pending
    w.maybe_flush()
    assert w.flushes == 3
    clock.now += 1.0  # due now
    w.maybe_flush()
    assert w.flushes == 4
    w.finish("finished")
    assert len(sc.generations(store, "c1")) == 8


def test_the_first_generation_after_the_seed_rows_goes_to_the_store_at_once(
    store: Store, monkeypatch
):
    """A campaign's seed rows come in a batch of their own before its first generation:
    paced, their flush (10 ms, a moment into the campaign) put the next one MAX_SPACING
    periods away, and a 6 s campaign showed no generation to a reader until its end."""
    create_campaign(store, campaign_row())
    clock = Clock()
    monkeypatch.setattr("store.writer.time", clock)
    w = CampaignWriter(store, "c1", flush_seconds=2.0, background=False)
    with w.batch():
        w.append("seeds", **seed_rows("c1", 2))
    w.maybe_flush()  # the first batch: at once
    assert w.flushes == 1
    assert w._interval == 2.0  # the usual period, not 10 s
    w._wake.clear()
    clock.now += 0.3
    with w.batch():
        w.append("generations", **gen_rows("c1", 1, 2))
    assert w._wake.is_set()  # the writer's thread flushes the first generation now
    w.flush(block=False)
    assert len(sc.generations(store, "c1")) == 2
    assert w._interval == 2.0  # still unpaced: the first generation's flush comes early
    w._wake.clear()
    with w.batch():
        w.append("generations", **gen_rows("c1", 2, 2))
    assert not w._wake.is_set()  # later generations keep the period
    w.finish("finished")


def test_list_campaigns_joins_summary(store: Store):
    create_campaign(store, campaign_row("a"))
    create_campaign(store, campaign_row("b"))
    w = CampaignWriter(store, "a")
    w.append("seeds", **seed_rows("a", 2))
    w.finish("finished")
    df = sc.list_campaigns(store).set_index("id")
    assert df.loc["a", "viable"] == 2 and df.loc["b", "viable"] == 0
    assert df.loc["a", "status"] == "finished" and df.loc["b", "status"] == "running"


def test_newer_schema_is_refused(tmp_path: Path):
    path = tmp_path / "s.duckdb"
    Store(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="schema version 999"):
        Store(path)


def test_writer_keeps_what_it_was_given_not_what_the_array_became(store: Store):
    create_campaign(store, campaign_row())
    w = CampaignWriter(store, "c1", flush_seconds=3600)
    counts = np.array([25, 25])
    w.append("seeds", **seed_rows("c1", 2))
    w.append("generations", **{**gen_rows("c1", 1, 2), "evaluations": counts})
    counts += 15  # the runner's counters move on before the flush
    w.finish("finished")
    assert sc.generations(store, "c1")["evaluations"].tolist() == [25, 25]


def test_a_version_1_store_is_migrated(tmp_path: Path):
    path = old_store(
        tmp_path / "old.duckdb",
        1,
        "CREATE TABLE campaigns (id VARCHAR NOT NULL, status VARCHAR NOT NULL)",
        "INSERT INTO campaigns VALUES ('old', 'finished')",
    )
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    df = store.query("SELECT id, status, study FROM campaigns")
    assert df.to_dict("records") == [{"id": "old", "status": "finished", "study": None}]


def test_the_summary_names_the_failure_criterion_before_any_seed_row(store: Store):
    """A differential campaign's status bar said "misclassified 0" during its start-up: the
    criterion came with the seed rows."""
    create_campaign(store, {**campaign_row("d1"), "config": {"criterion": "disagree"}})
    assert sc.summary(store, "d1")["criterion"] == "disagree"
    assert failed_as(sc.summary(store, "d1")["criterion"]) == "A and B disagree"
    assert sc.summary(store, "nope")["criterion"] is None
    create_campaign(store, campaign_row("m1"))
    listed = sc.list_campaigns(store).set_index("id")["criterion"]
    assert listed["d1"] == "disagree" and listed.isna()["m1"]
