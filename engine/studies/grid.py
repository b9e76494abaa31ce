"""`latentfuzz grid`: every cell of a grid (engine/studies/spec.py) as its own process, on a
local process pool or on Ray, with one driver that alone writes the main store.

Each cell runs its campaign in a private home and writes a bundle into the grid's folder
(engine/studies/cell.py); the driver imports each bundle as it arrives, recording the cell in
`grid_cells` in the same transaction. So a cell is done exactly when its campaign is in
the store, and re-running the grid skips done cells, imports bundles that arrived after
a driver was killed, and re-runs the rest (a cell killed mid-way left no bundle). A
failing cell is recorded with its error and the others go on.

The grid's folder (``<home>/grids/<name>`` unless ``--out``) holds ``grid.json`` (the
spec), ``state.json`` (every cell's status and error, rewritten atomically), ``bundles/``
and ``work/`` (private homes of running cells, removed as they finish).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.campaign.resolve import resolve
from engine.campaign.runner import CampaignResult
from engine.core import threads as threads_
from engine.core.errors import LatentfuzzError
from engine.core.home import db_path
from engine.io.bundle import import_bundle
from engine.studies.cell import init_worker, run_cell
from engine.studies.ray import execute_ray
from engine.studies.spec import Cell, GridSpec, parse_config
from store import Store, recovery
from store import campaigns as sc
from store import studies as ss
from store.maintenance import require_sound

STATUSES = ("queued", "running", "done", "failed")
#: Test hook: the driver kills itself (and its workers) after this many imports.
KILL_ENV = "LATENTFUZZ_GRID_KILL_AFTER"


@dataclass
class GridRun:
    """What one `run_grid` call did."""

    grid: str
    folder: Path
    cells: list[Cell]
    status: dict[str, str] = field(default_factory=dict)  # cell id -> status
    errors: dict[str, str] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)  # cells run by this call
    imported: list[str] = field(default_factory=list)  # bundles this call imported
    skipped: list[str] = field(default_factory=list)  # done before this call
    #: Ctrl-C (or SIGTERM) stopped this call; the cells not done run on the next one.
    stopped: bool = False

    @property
    def failed(self) -> dict[str, str]:
        return {c: self.errors.get(c, "") for c, s in self.status.items() if s == "failed"}

    def campaign_ids(self) -> list[str]:
        return [c.campaign_id(self.grid) for c in self.cells if self.status[c.id] == "done"]


def check_cells(cells: list[Cell], models_root: Path | None) -> None:
    """Resolve every distinct cell config before any runs, so that a typo in the last
    cell does not waste the first hours (the seed and name change nothing resolve checks)."""
    seen = set()
    for cell in cells:
        key = json.dumps(
            {k: v for k, v in cell.raw.items() if k not in ("seed", "name")},
            sort_keys=True,
            default=str,
        )
        if key not in seen:
            seen.add(key)
            resolve(parse_config(cell.raw), models_root)


def run_grid(
    spec: GridSpec,
    home: Path,
    workers: int | None = None,
    ray: str | None = None,
    out: Path | None = None,
    models_root: Path | None = None,
    on_status: Callable[[Cell, str, GridRun], None] | None = None,
    on_done: Callable[[Cell, Any], None] | None = None,
    threads: int | None = None,
) -> GridRun:
    """Run the grid's missing cells; returns what happened. `workers`: processes in the
    local pool (0: in this process, one after another; default 1), or with Ray the cells
    in flight at once (default: the cluster's CPUs); `ray`: 'auto' or a cluster address
    instead of the pool. `on_status(cell, status, run)` follows every change;
    `on_done(cell, result)` gets each imported campaign's CampaignResult. `threads`: torch
    threads per cell (default: `worker_threads`)."""
    workers = (0 if ray else 1) if workers is None else workers
    if workers < 0:
        raise LatentfuzzError(f"--workers {workers}; expected 0 (this process) or more")
    share = worker_threads(workers, threads, ray=ray is not None)  # a bad value: refused first
    cells = spec.cells()
    check_cells(cells, models_root)
    store = Store(db_path(home))
    store.require_writable()
    require_sound(store)
    recovery.ingest(store)
    folder = Path(out) if out else Path(home) / "grids" / spec.name
    stored = sc.campaigns_by_id(store, [c.campaign_id(spec.name) for c in cells])
    have = set(stored["id"])
    _refuse_changed_cells(spec, cells, dict(zip(stored["id"], stored["config"], strict=True)))
    for sub in ("bundles", "work"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for part in (folder / "bundles").glob(".*"):  # a bundle half-written by a killed cell
        shutil.rmtree(part, ignore_errors=True) if part.is_dir() else part.unlink()
    _write_json(folder / "grid.json", spec.to_dict())
    run = GridRun(spec.name, folder, cells)
    todo: list[Cell] = []
    for cell in cells:
        run.status[cell.id] = "done" if cell.campaign_id(spec.name) in have else "queued"
        if run.status[cell.id] == "done":
            run.skipped.append(cell.id)
    _save_state(run)
    by_id = {c.id: c for c in cells}

    def set_status(cell: Cell, status: str, error: str | None = None) -> None:
        run.status[cell.id] = status
        if error is not None:
            run.errors[cell.id] = error
        _save_state(run)
        if on_status:
            on_status(cell, status, run)

    def bundle(cell: Cell) -> Path:
        return folder / "bundles" / f"{cell.id}.lfz"

    def ingest(cell: Cell) -> None:
        try:
            _import_cell(store, home, spec.name, cell, bundle(cell))
        except LatentfuzzError as e:
            set_status(cell, "failed", f"import: {e}")
            return
        run.imported.append(cell.id)
        set_status(cell, "done")
        if on_done:
            on_done(cell, _result(store, cell.campaign_id(spec.name)))
        if (kill := os.environ.get(KILL_ENV)) and len(run.imported) >= int(kill):
            os.killpg(os.getpgid(0), signal.SIGKILL)  # a crash of driver and workers at once

    for cell in cells:
        if run.status[cell.id] != "queued":
            continue
        if bundle(cell).is_file():  # finished while an earlier driver was gone
            ingest(cell)
        else:
            todo.append(cell)

    def task(cell: Cell) -> dict[str, Any]:
        return {
            "cell": cell.id,
            "campaign_id": cell.campaign_id(spec.name),
            "grid": spec.name,
            "raw": cell.raw,
            "work": str(folder / "work" / cell.id),
            "bundle": str(bundle(cell)),
            "main_home": str(home),
            "models_root": str(models_root) if models_root else None,
            "threads": threads,  # --threads: a Ray cell takes it (cell.run_ray_cell)
        }

    def started(t: dict[str, Any]) -> None:
        run.ran.append(t["cell"])
        set_status(by_id[t["cell"]], "running")

    tasks = [task(c) for c in todo]
    if ray is not None:
        results = execute_ray(
            tasks, ray, spec.resources, workers, started, bundle_of=bundle, by_id=by_id
        )
    else:
        if workers == 0:
            threads_.apply(share.threads)  # the cells run in this process
        results = _execute(tasks, workers, started, share.threads)
    try:
        for t, res in results:
            cell = by_id[t["cell"]]
            if res["ok"]:
                ingest(cell)
            else:
                set_status(cell, "failed", res["error"])
    except KeyboardInterrupt:
        # The user stopped the grid: its workers stop first (closing `results` does), then a
        # cell that closed in time is imported and the others run again.
        run.stopped = True
        with contextlib.suppress(KeyboardInterrupt):
            results.close()
        for cell in cells:
            if run.status[cell.id] == "running":
                if bundle(cell).is_file():
                    ingest(cell)
                else:
                    set_status(cell, "queued")
                    run.ran.remove(cell.id)  # started, not run: the summary counts runs
    return run


def worker_threads(workers: int, threads: int | None = None, ray: bool = False):
    """The torch threads each of `workers` local processes takes (engine/core/threads.py):
    `threads` (--threads) when given, else $LATENTFUZZ_THREADS, else floor(cores / workers)
    of the cores this process may use, at least 1, capped by $OMP_NUM_THREADS. So workers
    x threads never exceed the cores, unless there are more workers than cores (1 each)
    or the user said so. With Ray the cells run elsewhere: each takes its own node's
    share."""
    return threads_.choose(1 if ray else max(1, workers), threads)


def _execute(
    tasks: list[dict[str, Any]],
    workers: int,
    started: Callable[[dict[str, Any]], None],
    threads: int = 1,
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(task, result) as cells finish: at most `workers` at a time, so that a cell marked
    running is running. A pool broken by a killed worker is replaced; its cells failed.
    Each worker takes `threads` torch threads."""
    if workers == 0:
        for t in tasks:
            started(t)
            yield t, run_cell(t)
        return
    queue: Iterable[dict[str, Any]] = iter(tasks)
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds torch
    pending: dict[Any, dict[str, Any]] = {}
    init = (threads, os.getpid())  # the workers die with this driver (cell.die_with)
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker, initargs=init)
    try:
        while True:
            while len(pending) < workers and (t := next(queue, None)) is not None:
                started(t)
                pending[pool.submit(run_cell, t)] = t
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            finished = []
            for f in done:
                t = pending.pop(f)
                try:
                    finished.append((t, f.result()))
                except BrokenProcessPool:
                    finished.append(
                        (
                            t,
                            {
                                "ok": False,
                                "cell": t["cell"],
                                "error": "the worker process died (killed or out of memory)",
                            },
                        )
                    )
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = ProcessPoolExecutor(
                        workers, mp_context=ctx, initializer=init_worker, initargs=init
                    )
            # The next cells start before this driver imports the finished ones.
            while len(pending) < workers and (t := next(queue, None)) is not None:
                started(t)
                pending[pool.submit(run_cell, t)] = t
            yield from finished
    except (KeyboardInterrupt, GeneratorExit):
        # The grid stops (here, or in the driver between two results): the workers' cells
        # stop too. A terminal's Ctrl-C reaches them as well, but they leave it to the
        # driver (engine/grid_cell.init_worker); a signal to the driver alone would have
        # left them running, and this shutdown waiting for their whole campaigns.
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            with contextlib.suppress(OSError, ValueError):
                proc.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _import_cell(store: Store, home: Path, grid: str, cell: Cell, path: Path) -> None:
    def record(con, cid: str) -> None:
        ss.record_grid_cell(con, cid, grid, cell.id, cell.values)

    try:
        import_bundle(store, home, path, in_transaction=record)
    except LatentfuzzError as e:
        if "already in" not in str(e):
            raise
        # Its campaign is in (an earlier import, a grid_cells row lost with nothing else):
        # the cell is done, as the store says.


def _result(store: Store, cid: str):

    c = sc.campaign(store, cid)
    return CampaignResult(
        cid,
        c["status"],
        sc.summary(store, cid),
        int(c["evaluations"] or 0),
        float(c["wall_seconds"] or 0.0),
        float(c["store_seconds"] or 0.0),
    )


def _refuse_changed_cells(spec: GridSpec, cells: list[Cell], stored: dict[str, Any]) -> None:
    """A cell is known by its axis values alone, so a grid re-run with another base kept
    its done cells' campaigns (3 seeds, say, where the file now asked for 5) and said
    "done before": the grid's table then mixed two settings under one name."""
    changed = {
        c.id: d
        for c in cells
        if (cfg := stored.get(c.campaign_id(spec.name))) and (d := c.differs_from(cfg))
    }
    if changed:
        n, what = len(changed), dict.fromkeys(x for d in changed.values() for x in d)
        raise LatentfuzzError(
            f"grid {spec.name} has {n} done cell{'s' if n != 1 else ''} run with other "
            f"settings ({', '.join(what)}); give the changed grid another name (name: in "
            "its file), or `latentfuzz delete` those cells' campaigns to run them again"
        )


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def _save_state(run: GridRun) -> None:
    cells = {
        c.id: {
            "campaign": c.campaign_id(run.grid),
            "values": c.values,
            "status": run.status[c.id],
            "error": run.errors.get(c.id),
        }
        for c in run.cells
    }
    _write_json(run.folder / "state.json", {"grid": run.grid, "cells": cells})


def load_state(folder: Path) -> dict[str, Any]:
    """The grid folder's state file (status and error of every cell)."""
    p = Path(folder) / "state.json"
    return json.loads(p.read_text()) if p.is_file() else {"cells": {}}
