"""Liveness: a killed campaign is reported `crashed` by every reader, and Stop signals only
the campaign's own process."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from store import campaigns as sc
from store import liveness
from store.liveness import CampaignLock, lock_path
from tests.helpers import db, spawn, start_cli, wait_for_campaign, wait_for_generation
from tests.reliability.conftest import cli

# Stopped or killed early; long enough that its first flush (2 s) comes well before its end:
# its seeds search all 5,000 generations (about 10 s here), where stopping at their first
# failure (about 700 generations) ended it in 1.5 s once the classifier ran as a graph.
LONG_CONFIG = """seeds: 2
seed: 1
strategy_params: {generations: 5000, population: 6, best_left: 2, perturbation: low,
                  stop_at_failure: false}
"""


def long_run(home: Path) -> list[str]:
    cfg = home.parent / "long.yaml"
    cfg.write_text(LONG_CONFIG)
    return ["run", "--config", str(cfg), "--quiet"]


def kill9_after(home: Path, env, generation: int) -> str:
    store = db(home)
    proc = start_cli(long_run(home), env)
    cid = wait_for_campaign(store, proc)
    wait_for_generation(store, cid, generation)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return cid


def test_a_killed_campaign_is_crashed_for_every_reader(home: Path, env, tmp_path: Path):
    cid = kill9_after(home, env, 2)
    store = db(home)
    assert sc.campaign(store, cid)["status"] == "running"  # nobody has looked yet
    wide = {**env, "COLUMNS": "200"}
    listing = cli(["campaigns"], wide).stdout
    assert "crashed" in listing and "running" not in listing
    c = sc.campaign(store, cid)
    assert c["status"] == "crashed" and f"latentfuzz resume {cid}" in c["error"]
    seeds = sc.seeds(store, cid)
    assert "searching" not in set(seeds["status"])
    shown = cli(["show", cid], wide).stdout
    assert f"{cid} crashed" in " ".join(shown.split()) and "resume" in shown
    p = cli(["export", cid, "--zip", str(tmp_path / "x.zip")], wide)
    assert f"campaign {cid} crashed" in p.stderr
    p = cli(["labels", "create", "--campaign", cid], wide, ok=False)
    assert f"campaign {cid} crashed" in p.stderr


HOLDER = """
import sys, time
from pathlib import Path
from store.liveness import CampaignLock
CampaignLock(Path(sys.argv[1]), sys.argv[2]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_stop_signals_the_campaign_process_and_never_a_stranger(home: Path):
    # The campaign's own process: holds the lock, stop reaches it.
    owner = spawn([sys.executable, "-c", HOLDER, str(home), "c1"], stderr=None)
    assert owner.stdout.readline().strip() == "held"
    assert liveness.alive(home, "c1")
    assert liveness.stop(home, "c1")
    assert owner.wait(timeout=30) == -signal.SIGTERM
    assert not liveness.alive(home, "c1")
    # The process is gone and its pid now belongs to a stranger: nobody holds the lock.
    stranger = spawn([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        lock_path(home, "c1").write_text(f"{stranger.pid} {liveness.process_start(stranger.pid)}")
        assert not liveness.stop(home, "c1")
        # A live lock whose recorded start time is not the pid's: refused too.
        lock = CampaignLock(home, "c2").acquire()
        os.pwrite(lock.fd, f"{stranger.pid} 12345 ".encode(), 0)
        assert liveness.alive(home, "c2") and not liveness.stop(home, "c2")
        lock.release()
        assert stranger.poll() is None  # never signalled
    finally:
        stranger.kill()
        stranger.wait()


def test_a_reader_never_marks_a_live_campaign(home: Path, env):
    store = db(home)
    proc = start_cli(long_run(home), env)
    try:
        cid = wait_for_campaign(store, proc)
        wait_for_generation(store, cid, 1)
        assert sc.reap(store) == []
        assert sc.campaign(store, cid)["status"] == "running"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert sc.campaign(store, cid)["status"] == "interrupted"
