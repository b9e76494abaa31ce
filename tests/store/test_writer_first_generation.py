"""The first generation goes to the store at once, not a flush period later (issue 36: a
campaign launched from the dashboard shows its first generation within seconds)."""

from __future__ import annotations

import threading
from pathlib import Path

from store import CampaignWriter, Store, create_campaign
from store import campaigns as sc
from tests.store.test_contract import campaign_row, gen_rows, seed_rows


def test_the_background_writer_commits_the_first_generation_without_waiting(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    create_campaign(store, campaign_row())
    w = CampaignWriter(store, "c1", flush_seconds=3600)  # a period no test waits out
    landed = threading.Event()
    w.on_commit.append(lambda upto: landed.set())
    try:
        w.append("seeds", **seed_rows("c1", 2))
        with w.batch():
            w.append("generations", **gen_rows("c1", 1, 2))
        assert landed.wait(60), "the first generation waited for the flush period"
        assert w.flushes == 1 and len(sc.generations(store, "c1")) == 2
        with w.batch():  # the second waits for the period, as every later one does
            w.append("generations", **gen_rows("c1", 2, 2))
        assert w.flushes == 1 and len(sc.generations(store, "c1")) == 2
    finally:
        w.finish("finished")
    assert len(sc.generations(store, "c1")) == 4


def test_without_a_thread_the_first_generation_is_flushed_at_the_next_call(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    create_campaign(store, campaign_row())
    w = CampaignWriter(store, "c1", flush_seconds=3600, background=False)
    w.append("seeds", **seed_rows("c1", 2))
    w.maybe_flush()  # nothing closed yet: not due
    assert w.flushes == 0
    with w.batch():
        w.append("generations", **gen_rows("c1", 1, 2))
    w.maybe_flush()
    assert w.flushes == 1
    with w.batch():
        w.append("generations", **gen_rows("c1", 2, 2))
    w.maybe_flush()  # later generations wait for the period
    assert w.flushes == 1
    w.finish("finished")
    assert len(sc.generations(store, "c1")) == 4
