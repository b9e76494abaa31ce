"""The concurrency contract (store/CONTRACT.md) with two real processes."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from store import campaigns as sc
from tests.helpers import db, start_cli, wait_for_campaign, wait_for_generation

LONG_RUN = [
    "run",
    "--seeds",
    "10",
    "--generations",
    "120",
    "--perturbation",
    "low",
    "--seed",
    "3",
    "--quiet",
]


def test_reader_follows_a_running_campaign_without_errors(home: Path, env):
    store = db(home)
    proc = start_cli(LONG_RUN, env)
    cid = wait_for_campaign(store, proc)
    seen, latencies = [], []
    # Poll far harder than the dashboard does (every 50 ms instead of every 1-2 s).
    while proc.poll() is None:
        t = time.perf_counter()
        p = sc.progress(store, cid)  # must never raise a lock error
        sc.generations(store, cid)
        latencies.append(time.perf_counter() - t)
        seen.append(int(p["generation_rows"]))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert seen == sorted(seen), "progress went backwards"
    assert len(set(seen)) >= 3, f"progress was not live: {sorted(set(seen))}"
    c = sc.campaign(store, cid)
    assert c["status"] == "finished"
    # The writer never waits on readers for long: its time in the store stays small.
    assert c["store_seconds"] / c["wall_seconds"] < 0.25, c
    seeds = sc.seeds(store, cid)
    gens = sc.generations(store, cid)
    viable = seeds[seeds.viable]
    assert len(gens) == int(viable["iterations"].sum())  # every generation row landed
    assert max(latencies) < 5.0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interruption_leaves_a_consistent_store(home: Path, env, sig):
    store = db(home)
    proc = start_cli(LONG_RUN, env)
    cid = wait_for_campaign(store, proc)
    wait_for_generation(store, cid, 5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    c = sc.campaign(store, cid)
    assert c["status"] == "interrupted" and c["finished_at"] is not None
    seeds = sc.seeds(store, cid)
    assert set(seeds["status"]) <= {"non-viable", "misclassified", "survived", "interrupted"}
    assert "interrupted" in set(seeds["status"])
    gens = sc.generations(store, cid)
    for row in seeds[seeds.viable].itertuples():
        g = gens[gens.seed_idx == row.seed_idx]["generation"].tolist()
        assert g == list(range(1, len(g) + 1)), "generation rows must be contiguous"
        if row.status in ("misclassified", "survived"):
            assert g[-1] == row.iterations
    # The store stays writable and readable for the next campaign.
    assert sc.list_campaigns(store).shape[0] == 1
