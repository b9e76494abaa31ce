"""kill -9 at seeded moments of a campaign process that writes checkpoints as it goes: the
checkpoint is never ahead of the store, `resume` takes it up (evaluating no generation at
or before it), and the campaign ends with the rows and the image files, byte for byte, of
an uninterrupted run."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import torch

from engine.campaign.config import parse_config
from engine.campaign.resume import resume_campaign
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store.admin import checkpoint_path
from tests.helpers import start_cli, wait_for_files
from tests.reliability.test_kill_resume import generations, outcomes

# Flushes, and so checkpoints, every 0.1 s: many of them in a few seconds of search.
SETTINGS = {
    "seeds": 3,
    "seed": 11,
    "flush_seconds": 0.1,
    "strategy_params": {
        "generations": 80,
        "population": 6,
        "elites": 2,
        "perturbation": "custom",
        "step": 0.02,
        "stop_at_failure": False,
    },
}


def image_files(home: Path, cid: str) -> dict[str, bytes]:
    root = home / "campaigns" / cid
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("checkpoint")
    }


def test_kill_9_then_resume_from_the_checkpoint(home: Path, env, tmp_path: Path):
    import yaml

    env = {**env, "OMP_NUM_THREADS": "1"}
    torch.set_num_threads(1)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(SETTINGS))
    ref = run_campaign(parse_config(SETTINGS), home, campaign_id="reference")
    assert ref.status == "finished"
    store = Store(home / "latentfuzz.duckdb")
    expected_files = image_files(home, "reference")
    rng = random.Random(20261127)
    taken_up = 0
    for attempt in range(4):
        cid = f"kill{attempt}"
        proc = start_cli(
            ["run", "--config", str(cfg), "--id", cid, "--quiet"],
            env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_files((home / "campaigns" / cid).exists, proc)
            # From its first stored generation on: the search, not the start-up.
            while not len(sc.generations(store, cid)):
                assert proc.poll() is None, f"{cid} exited before its first generation"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.1, 0.8) * ref.wall_seconds)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        store = Store(home / "latentfuzz.duckdb")
        if sc.campaign(store, cid)["status"] == "finished":
            continue  # it finished before the kill: nothing to resume
        last = int(sc.generations(store, cid)["generation"].max())
        path = checkpoint_path(home, cid)
        saved = torch.load(path, weights_only=True)["generation"] if path.exists() else None
        assert saved is None or 1 <= saved <= last, (saved, last)  # never ahead
        seen: list[int] = []
        res = resume_campaign(home, cid, progress=lambda p, seen=seen: seen.append(p.generation))
        assert res.status == "finished", cid
        if saved is not None:
            assert seen[0] == saved + 1  # nothing at or before it evaluated again
            taken_up += 1
        pd.testing.assert_frame_equal(
            outcomes(store, cid), outcomes(store, "reference"), check_dtype=False
        )
        got, want = generations(store, cid), generations(store, "reference")
        want["image"] = want["image"].str.replace("reference", cid)
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
        files = image_files(home, cid)
        assert sorted(files) == sorted(expected_files)
        assert [n for n in files if files[n] != expected_files[n]] == []
    assert taken_up >= 1
