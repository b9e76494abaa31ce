"""A grid's workers take floor(cores / workers) torch threads each and wait passively: what
each cell's campaign recorded, in real spawned workers (a count, not a time). The choice's
arithmetic for many core and worker counts: tests/engine/core/test_threads.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from engine.core import threads
from engine.studies.grid import run_grid
from engine.studies.spec import parse_grid
from store import Store
from store import campaigns as sc
from tests.helpers import start_cli

GRID = {
    "name": "threads",
    "base": {"seeds": 1, "strategy_params": {"generations": 1}},
    "axes": {"seed": [1, 2]},
}


def recorded(home: Path, ids: list[str]) -> list[dict]:
    store = Store(home / "latentfuzz.duckdb")
    return [sc.campaign(store, cid)["environment"] for cid in ids]


@pytest.mark.parametrize("workers, one_core", [(2, False), (1, True)])
def test_grid_workers_take_their_share_of_this_processes_cores_and_wait_passively(
    home: Path, monkeypatch, workers: int, one_core: bool
):
    # As a user's shell: no thread settings (the suite pins OMP_NUM_THREADS=1).
    for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "LATENTFUZZ_THREADS"):
        monkeypatch.delenv(name, raising=False)
    mask = os.sched_getaffinity(0)
    if one_core:  # as taskset or a container's share: the machine has more than we may use
        os.sched_setaffinity(0, {min(mask)})  # the spawned workers inherit it
    try:
        n = threads.cores()[0]
        run = run_grid(parse_grid(GRID), home, workers=workers)
    finally:
        os.sched_setaffinity(0, mask)
    assert set(run.status.values()) == {"done"}
    envs = recorded(home, run.campaign_ids())
    assert [e["torch_threads"] for e in envs] == [max(1, n // workers)] * 2
    assert all(workers * e["torch_threads"] <= n for e in envs) or n < workers
    assert [e["cores"] for e in envs] == [n] * 2
    assert [e["omp_wait_policy"] for e in envs] == ["PASSIVE"] * 2
    assert [e["interop_threads"] for e in envs] == [threads.INTEROP_THREADS] * 2


def test_grid_threads_and_more_workers_than_cores_from_the_cli(
    home: Path, tmp_path: Path, env: dict[str, str]
):
    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump(GRID))
    n = threads.cores()[0]
    env = {**env, "OMP_WAIT_POLICY": "ACTIVE"}
    env.pop("OMP_NUM_THREADS")
    p = start_cli(
        ["grid", str(spec), "--workers", str(n + 1), "--threads", "1", "-q", "--home", str(home)],
        env,
    )
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    envs = recorded(home, _ids(home))
    assert [e["torch_threads"] for e in envs] == [1, 1]  # --threads
    assert [e["omp_wait_policy"] for e in envs] == ["ACTIVE"] * 2  # the user's, kept
    # --threads given: the user chose, so no note; without it, more workers than cores say so.
    assert "workers on" not in err
    q = start_cli(["grid", str(spec), "--workers", str(n + 1), "-q", "--home", str(home)], env)
    _, err = q.communicate(timeout=300)
    assert q.returncode == 0, err
    assert f"{n + 1} workers on {n} cores: 1 torch thread each" in err


def _ids(home: Path) -> list[str]:
    rows = Store(home / "latentfuzz.duckdb").query(
        "SELECT campaign_id FROM grid_cells WHERE grid = 'threads' ORDER BY cell"
    )
    return list(rows["campaign_id"])


@pytest.mark.parametrize("value", ["0", "x"])
def test_a_bad_threads_value_is_refused_before_any_cell_runs(
    home: Path, tmp_path: Path, env: dict[str, str], value: str
):
    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump(GRID))
    p = start_cli(["grid", str(spec), "--home", str(home)], {**env, "LATENTFUZZ_THREADS": value})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2
    assert err.strip().splitlines() == [
        f"error: $LATENTFUZZ_THREADS is {value!r}, expected a whole number of threads from 1 "
        "to 4096; give e.g. LATENTFUZZ_THREADS=1, or leave it out for the cores' share"
    ]
    assert not (home / "grids" / "threads").exists()


def test_a_grids_cells_reuse_the_main_homes_test_set_reference(home: Path, monkeypatch):
    # Deferred (the campaign modules: only this test runs a campaign in-process).
    from engine.campaign import metrics
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign

    made = []
    real = metrics._test_reference
    monkeypatch.setattr(metrics, "_test_reference", lambda *a: made.append(1) or real(*a))
    monkeypatch.setattr(metrics, "_REFERENCE", {})
    run_campaign(parse_config({**GRID["base"], "seed": 9}), home)
    assert len(made) == 1 and any((home / "cache" / "test_reference").iterdir())
    monkeypatch.setattr(metrics, "_REFERENCE", {})  # as a fresh worker process
    run = run_grid(parse_grid(GRID), home, workers=0)
    assert set(run.status.values()) == {"done"}
    assert len(made) == 1  # the cells read the main home's file, copied into theirs
