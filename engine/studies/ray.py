"""Grid cells as Ray tasks (`latentfuzz grid --ray auto|ADDRESS`; `pip install
latentfuzz[ray]`).

Each cell is a task asking for one CPU and the grid's ``resources`` (``gpu: 1`` becomes
``num_gpus=1``); Ray places it on any node with room, and the cell runs on the device it
was given (engine/studies/cell.py). Bundles come back as bytes and are written into the
grid's folder by the driver, which imports them as they arrive, as with the local pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.core.errors import LatentfuzzError
from engine.studies.cell import run_ray_cell


def connect(address: str) -> None:
    """Join the cluster at `address` ('auto': the one `ray start` began on this machine,
    else a new local instance), unless this process is connected already."""
    try:
        # Deferred (ray: an optional extra).
        import ray
    except ImportError:
        raise LatentfuzzError(
            "--ray needs Ray: pip install 'latentfuzz[ray]' (or pip install ray)"
        ) from None
    if ray.is_initialized():
        return
    try:
        ray.init(address=None if address == "auto" else address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LatentfuzzError(
            f"cannot reach a Ray cluster at {address!r} ({first}); start one with "
            "`ray start --head` and pass its HOST:6379, or --ray auto"
        ) from None


def execute_ray(
    tasks: list[dict[str, Any]],
    address: str,
    resources: dict[str, float],
    workers: int,
    started: Callable[[dict[str, Any]], None],
    bundle_of: Callable,
    by_id: dict,
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(task, result) as cells finish. At most `workers` cells are in flight (0: as many
    as the cluster has CPUs), so that a cell marked running is running or about to."""
    connect(address)
    # Deferred (ray: an optional extra).
    import ray

    remote = ray.remote(run_ray_cell).options(
        num_cpus=resources.get("cpu", 1), num_gpus=resources.get("gpu", 0), max_retries=0
    )
    limit = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    queue = iter(tasks)
    pending: dict[Any, dict[str, Any]] = {}
    try:
        yield from _in_flight(ray, remote, queue, pending, limit, started, bundle_of, by_id)
    except (KeyboardInterrupt, GeneratorExit):
        # The grid stops: its cells in flight stop too, or on a lasting cluster they ran
        # on beside the same cells started again by the next run.
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def _in_flight(ray, remote, queue, pending, limit, started, bundle_of, by_id):
    """execute_ray's loop; `pending` (ref -> task) is the caller's, to cancel on a stop."""
    while True:
        while len(pending) < limit and (t := next(queue, None)) is not None:
            started(t)
            pending[remote.remote(t)] = t
        if not pending:
            return
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            t = pending.pop(ref)
            try:
                res = ray.get(ref)
            except Exception as e:  # the task's node died, or Ray could not run it
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                res = {"ok": False, "cell": t["cell"], "error": f"ray: {first}"}
            if res.get("ok"):
                path: Path = bundle_of(by_id[t["cell"]])
                part = path.with_name(f".{path.name}.part")
                part.write_bytes(res.pop("data"))
                part.replace(path)
            yield t, res
