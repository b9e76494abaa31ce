"""The final write never gives up: a campaign whose store is held by another process for
longer than the store's timeout still closes with all its rows; interrupted while it
waits, it leaves a recovery file that the next command writes. A full disk ends the
campaign `failed` in one line and keeps what was written."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import LatentfuzzError
from store import campaigns as sc
from store import recovery
from tests.helpers import db, start_cli, wait_for_campaign
from tests.reliability.conftest import cli

TIMEOUT = 1.0  # the store's timeout in these tests; the holder keeps it 3 times as long


def start(home: Path, env, tmp_path: Path) -> subprocess.Popen:
    """A small campaign that writes nothing between its first and its last write
    (flush_seconds 600), with a short store timeout."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "seeds: 3\nseed: 2\nflush_seconds: 600\nstrategy_params:\n  generations: 40\n"
        "  population: 6\n  best_left: 2\n  perturbation: low\n"
    )
    env = {**env, "LATENTFUZZ_STORE_TIMEOUT": str(TIMEOUT)}
    return start_cli(["run", "--config", str(cfg), "--quiet"], env)


def hold_until_waiting(home: Path, proc: subprocess.Popen) -> tuple[str, str]:
    """Take the store as a writer once the campaign exists, keep it until the campaign
    says it waits, and then for three of its timeouts more; returns (id, that line)."""
    store = db(home)
    cid = wait_for_campaign(store, proc)
    with store.write():
        line = proc.stderr.readline()  # blocks until the campaign reaches its last write
        time.sleep(3 * TIMEOUT)  # hold well past the timeout that used to end the campaign
    return cid, line


def all_rows_landed(home: Path, cid: str) -> None:
    store = db(home)
    c = sc.campaign(store, cid)
    seeds = sc.seeds(store, cid)
    gens = sc.generations(store, cid)
    assert c["status"] == "finished" and c["error"] is None
    assert (seeds[seeds.viable]["status"].isin(["misclassified", "survived"])).all()
    assert len(gens) == int(seeds[seeds.viable]["iterations"].sum()) > 0


def test_the_last_write_waits_for_a_store_held_past_the_timeout(home: Path, env, tmp_path):
    proc = start(home, env, tmp_path)
    cid, line = hold_until_waiting(home, proc)
    out, rest = proc.communicate(timeout=120)
    assert proc.returncode == 0, rest
    assert f"waiting for the store (held by pid {os.getpid()})" in line
    assert "Traceback" not in rest and "the store is free again" in rest
    all_rows_landed(home, cid)


def test_interrupted_while_waiting_the_rows_go_to_a_recovery_file(home: Path, env, tmp_path):
    proc = start(home, env, tmp_path)
    store = db(home)
    cid = wait_for_campaign(store, proc)
    with store.write():
        assert "waiting for the store" in proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in rest, rest
    assert "recovery" in rest
    assert len(recovery.pending(home)) == 1
    assert sc.campaign(store, cid)["status"] == "running"  # not written yet
    cli(["campaigns"], env)  # the next command writes them
    assert recovery.pending(home) == []
    all_rows_landed(home, cid)


def test_a_full_disk_ends_the_campaign_failed_and_keeps_what_was_written(home: Path, monkeypatch):
    from engine.core.images import ImageSink

    calls = {"n": 0}

    def full_after_a_while(real):
        # Every file the sink writes counts: PNGs, and the strips' frame sidecars, which
        # since strips are assembled once at the end are most of a search's writes.
        def write(self, rel, *args):
            calls["n"] += 1
            if calls["n"] > 6:
                first = rel[0] if isinstance(rel, list) else rel
                raise OSError(errno.ENOSPC, "No space left on device", str(self.home / first))
            return real(self, rel, *args)

        return write

    monkeypatch.setattr(ImageSink, "_write", full_after_a_while(ImageSink._write))
    monkeypatch.setattr(ImageSink, "_append", full_after_a_while(ImageSink._append))
    cfg = parse_config(
        {
            "seeds": 3,
            "seed": 2,
            "flush_seconds": 0.05,
            "strategy_params": {
                "generations": 40,
                "population": 6,
                "best_left": 2,
                "perturbation": "low",
            },
        }
    )
    with pytest.raises(LatentfuzzError) as e:
        run_campaign(cfg, home)
    msg = str(e.value)
    assert "\n" not in msg and "no space left on device" in msg and "latentfuzz resume" in msg
    store = db(home)
    (cid,) = sc.list_campaigns(store)["id"]
    c = sc.campaign(store, cid)
    assert c["status"] == "failed" and c["error"].startswith("no space left on device")
    gens = sc.generations(store, cid)
    assert len(gens) > 0  # what was searched before the disk filled is kept
