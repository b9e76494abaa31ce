"""One grid cell, as a worker runs it: a campaign in a private home, written as a bundle.

A worker never opens the main store: DuckDB's file locks hold on one machine only, and a
Ray worker may be another machine. It runs the cell's campaign into a home of its own,
exports the campaign as a bundle and removes that home; the grid's driver ingests the
bundle. The result is a plain dict (picklable for a process pool, small for Ray) and
carries a failure as one line, so one bad cell never stops the others.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from engine.core.home import db_path, resolve_home
from engine.core.threads import apply as apply_threads
from engine.core.threads import choose as choose_threads
from engine.core.threads import set_wait_policy

#: Test hook: comma-separated cell ids that fail on purpose (a failing cell's path).
FAIL_ENV = "LATENTFUZZ_GRID_FAIL_CELLS"


#: prctl(2)'s option: the signal the kernel sends this process when its parent ends.
PR_SET_PDEATHSIG = 1
#: How often a worker without prctl looks whether its driver is still its parent.
WATCH_S = 0.5


def init_worker(threads: int, driver: int | None = None) -> None:
    """A pool worker's start: it dies with `driver` (the pid of the grid's driver), and
    takes `threads` torch threads, its share of the cores (engine/studies/grid.py's
    worker_threads), so N workers do not oversubscribe."""
    if driver is not None:
        die_with(driver)  # first: torch's import below takes seconds
    # A spawned worker inherits the driver's environment, and with it the entry point's
    # wait policy; a grid started from Python (a test, a notebook) gets it here, before
    # this process loads torch and its OpenMP.
    set_wait_policy()
    apply_threads(threads)
    # A terminal's Ctrl-C reaches every process of its group: the driver decides, and stops
    # its workers with SIGTERM (engine/studies/grid.py). An idle worker, waiting on its queue, had
    # printed a traceback; one that only the driver's signal would reach ran on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_stop)


def die_with(driver: int) -> None:
    """End this process as soon as `driver`, its parent, ends, however it ends (kill -9
    too): a killed driver's two workers and the pool's resource tracker had run on for
    minutes, ignoring SIGTERM. Nothing of a cell is worth finishing then: it runs in a
    private home that the grid's next run starts again. On Linux the kernel sends SIGKILL
    at once (prctl PR_SET_PDEATHSIG); elsewhere, and if the driver was gone before that,
    a thread sees the parent change within WATCH_S."""
    with contextlib.suppress(AttributeError, OSError):  # no prctl: not Linux
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    threading.Thread(target=_watch, args=(driver,), name="driver-watch", daemon=True).start()


def _watch(driver: int) -> None:
    while os.getppid() == driver:
        time.sleep(WATCH_S)
    os.kill(os.getpid(), signal.SIGKILL)  # not SIGTERM: this worker's handler passes it


_busy = [False]  # this worker is running a cell


def _on_stop(signum: int, frame: object) -> None:
    # Idle, it lets the signal pass: it waits on the pool's queue, whose lock it may hold,
    # and leaves at the shutdown's sentinel (an exit here left the lock held, and the next
    # worker blocked on it for good).
    if _busy[0]:
        raise KeyboardInterrupt  # the cell's campaign stops, interrupted


def run_cell(task: dict[str, Any]) -> dict[str, Any]:
    """Run `task` (engine/studies/grid.py builds it); returns {ok, cell, seconds, error?}.

    task: cell, campaign_id, grid, raw (config), work (the private home), bundle (where
    the bundle goes), main_home (for the user's models and the batch-size cache),
    models_root."""
    t0 = time.perf_counter()
    work, bundle = Path(task["work"]), Path(task["bundle"])
    _busy[0] = True
    try:
        if task["cell"] in os.environ.get(FAIL_ENV, "").split(","):
            raise RuntimeError(f"cell {task['cell']} failed on purpose (${FAIL_ENV})")
        _run(task, work, bundle)
    except Exception as e:
        # Deferred (start-up time: loads torch, duckdb, pyarrow).
        from engine.campaign.runner import describe

        return {
            "ok": False,
            "cell": task["cell"],
            "error": describe(e),
            "seconds": time.perf_counter() - t0,
        }
    finally:
        _busy[0] = False
        shutil.rmtree(work, ignore_errors=True)
    return {"ok": True, "cell": task["cell"], "seconds": time.perf_counter() - t0}


def _run(task: dict[str, Any], work: Path, bundle: Path) -> None:
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.campaign.config import parse_config
    from engine.campaign.runner import StoppedAfterClose, run_in_series

    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.io.bundle import export_bundle
    from store import Store

    shutil.rmtree(work, ignore_errors=True)  # what a killed earlier try left
    work.mkdir(parents=True)
    main = Path(task["main_home"]) if task.get("main_home") else None
    if main is not None and main.is_dir():
        resolve_home(main)  # the user's models live under the main home
        cache = main / "cache" / "batch_sizes.json"
        (work / "cache").mkdir()
        if cache.is_file():  # measured batch sizes: no sweep per cell
            shutil.copy(cache, work / "cache" / cache.name)
        refs = main / "cache" / "test_reference"
        if refs.is_dir():  # the classifiers' test-set figures: none classified again per cell
            shutil.copytree(refs, work / "cache" / refs.name)
    root = Path(task["models_root"]) if task.get("models_root") else None
    stopped = False
    try:  # an interrupted campaign stops the grid: it is not a cell's failure
        res = run_in_series(
            parse_config(task["raw"]),
            work,
            models_root=root,
            campaign_id=task["campaign_id"],
            study=task["grid"],
        )
    except StoppedAfterClose as e:  # Ctrl-C while it closed: a finished cell is kept
        if e.result.status != "finished":
            raise
        res, stopped = e.result, True
    if res.status != "finished":
        raise RuntimeError(f"campaign {res.campaign_id} ended {res.status}")
    export_bundle(Store(db_path(work)), work, res.campaign_id, bundle)
    if stopped:
        raise KeyboardInterrupt


def run_ray_cell(task: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: the cell on whatever node Ray chose, with the device Ray gave it (cuda
    when it was given a GPU). The bundle comes back as bytes, since the node's disk is
    not the driver's."""
    # Deferred (ray: an optional extra).
    import ray

    device = "cuda" if ray.get_gpu_ids() else "cpu"
    # Ray sets $OMP_NUM_THREADS to the task's CPUs (unless the user set it), which caps
    # the choice: the node's share, not the driver's machine's.
    apply_threads(choose_threads(option=task.get("threads")).threads)
    tmp = Path(tempfile.mkdtemp(prefix="latentfuzz-cell-"))
    try:
        raw = {**task["raw"], "device": device}
        # main_home stays: on the driver's own machine it holds the user's models and the
        # batch-size cache; elsewhere it does not exist and run_cell does without.
        local = {**task, "raw": raw, "work": str(tmp / "home"), "bundle": str(tmp / "cell.lfz")}
        res = run_cell(local)
        res["device"] = device
        if res["ok"]:
            res["data"] = (tmp / "cell.lfz").read_bytes()
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
