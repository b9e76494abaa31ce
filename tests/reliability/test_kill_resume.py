"""kill -9 at seeded random moments of a real campaign process; after each, the store opens,
`doctor` finds nothing but the crashed campaign, and `resume` completes it with the same
per-seed outcomes as an uninterrupted run: no duplicate key, no committed generation lost."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from engine.campaign.config import parse_config
from engine.campaign.resume import resume_campaign
from engine.campaign.runner import run_campaign
from engine.io import doctor
from store import Store
from store import campaigns as sc
from tests.helpers import start_cli, wait_for_files
from tests.reliability.conftest import cli

# Small: a few seconds of search on a loaded 2-core machine, so ten kills and resumes
# stay quick. One thread in the campaign processes and here: the same arithmetic, and
# faster than two on a busy machine.
SETTINGS = {
    "seeds": 3,
    "seed": 7,
    "flush_seconds": 0.1,
    "strategy_params": {"generations": 30, "population": 6, "best_left": 2, "perturbation": "high"},
}
OUTCOME = [
    "seed_idx",
    "viable",
    "status",
    "misclassified",
    "iterations",
    "evaluations",
    "final_pred",
    "final_fitness",
    "latent_distance",
]


def outcomes(store: Store, cid: str) -> pd.DataFrame:
    return sc.seeds(store, cid)[OUTCOME].reset_index(drop=True)


def generations(store: Store, cid: str) -> pd.DataFrame:
    cols = [
        "seed_idx",
        "generation",
        "best_fitness",
        "mean_fitness",
        "best_pred",
        "step",
        "evaluations",
        "image",
        "image_frame",
    ]
    return sc.generations(store, cid)[cols].reset_index(drop=True)


def kill_and_resume(n: int, home: Path, env, tmp_path: Path) -> None:
    env = {**env, "OMP_NUM_THREADS": "1"}
    torch.set_num_threads(1)
    cfg = tmp_path / "c.yaml"
    import yaml

    cfg.write_text(yaml.safe_dump(SETTINGS))
    store = Store(home / "latentfuzz.duckdb")
    ref = run_campaign(parse_config(SETTINGS), home, campaign_id="reference")
    assert ref.status == "finished"
    expected = outcomes(store, "reference")
    assert expected["viable"].sum() >= 2
    rng = random.Random(20261122)
    kills = 0
    for attempt in range(3 * n):
        if kills == n:
            break
        cid = f"kill{attempt:02d}"
        proc = start_cli(
            ["run", "--config", str(cfg), "--id", cid, "--quiet"],
            env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_files((home / "campaigns" / cid).exists, proc)
        while sc.campaign(store, cid) is None:
            assert proc.poll() is None, f"{cid} exited before its row appeared"
            time.sleep(0.01)
        # A seeded moment of the search (the store lags the search by up to a flush, so
        # the moment is taken in time, from the reference run's length).
        time.sleep(rng.uniform(0, ref.wall_seconds))
        if proc.poll() is not None:  # it finished first: a clean campaign, not a kill
            assert proc.returncode == 0
            pd.testing.assert_frame_equal(outcomes(store, cid), expected, check_dtype=False)
            continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        store = Store(home / "latentfuzz.duckdb")  # the store opens
        if sc.campaign(store, cid)["status"] == "finished":
            # Killed after its last write, on its way out: whole, and nothing to resume.
            assert doctor.check(store, home) == []
            pd.testing.assert_frame_equal(outcomes(store, cid), expected, check_dtype=False)
            continue
        kills += 1
        before = generations(store, cid)
        found = doctor.check(store, home)
        assert [(f.kind, f.campaign) for f in found] == [("crashed", cid)], found
        res = resume_campaign(home, cid)
        assert res.status == "finished", cid
        got = outcomes(store, cid)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        after = generations(store, cid)
        # Every generation committed before the kill is still there, unchanged.
        kept = before.merge(after, how="left", indicator=True, on=list(before.columns))
        assert (kept["_merge"] == "both").all(), cid
        ref_g = generations(store, "reference")
        pd.testing.assert_frame_equal(
            after.drop(columns="image"), ref_g.drop(columns="image"), check_dtype=False
        )
        assert doctor.check(store, home) == []  # nothing left: no duplicate, no missing file
    assert kills == n
    p = cli(["doctor"], env)
    assert "no anomaly" in p.stdout


def test_kill_9_at_ten_seeded_moments_then_resume(home: Path, env, tmp_path: Path):
    kill_and_resume(10, home, env, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # forty kills and resumes outlast the suite's 600 s per test
def test_kill_9_at_forty_seeded_moments_then_resume(home: Path, env, tmp_path: Path):
    kill_and_resume(40, home, env, tmp_path)
