"""`latentfuzz bench grid`: a grid of VAE cells with 1 worker and with 2, in one run.

Each grid runs as a user runs it, `latentfuzz grid SPEC --workers W` in its own process
with a fresh temporary home (a second run of a grid in one home would skip its done
cells), so its wall time covers every worker's start-up, the cells' campaigns and the
driver's imports. The two worker counts take turns (1, 2, 1, 2, ...), so a change in the
machine's speed falls on both; the median of each is compared.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console

from engine.bench.neighbour import describe, neighbours
from engine.bench.scale import run_cli


def spec(cells: int, seeds: int, generations: int, device: str) -> dict:
    """A grid of `cells` VAE campaigns that differ in their campaign seed only."""
    return {
        "name": "bench-grid",
        "base": {
            "generator": "vae",
            "seeds": seeds,
            "device": device,
            "strategy_params": {"generations": generations, "perturbation": "high"},
        },
        "axes": {"seed": list(range(1, cells + 1))},
    }


def grid_seconds(grid: dict, workers: int) -> float:
    """Seconds of `latentfuzz grid` with `workers` workers, command to exit, in a new home."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grid.yaml"
        path.write_text(json.dumps(grid))  # JSON is YAML
        args = ["grid", str(path), "--workers", str(workers), "--quiet", "--home", tmp]
        return run_cli(args, dict(os.environ))[0]


def bench_grid(
    cells: int = 4,
    seeds: int = 10,
    generations: int = 250,
    workers: tuple[int, ...] = (1, 2),
    repeats: int = 1,
    neighbour: int = 0,
    device: str = "cpu",
    console: Console | None = None,
) -> dict:
    """Wall seconds of the grid at each worker count, in turns, `repeats` times each."""
    console = console or Console()
    grid = spec(cells, seeds, generations, device)
    times: dict[int, list[float]] = {w: [] for w in workers}
    with neighbours(neighbour):
        for _ in range(repeats):
            for w in workers:
                times[w].append(grid_seconds(grid, w))
    med = {w: float(np.median(v)) for w, v in times.items()}
    first = workers[0]
    console.print(
        f"latentfuzz bench grid: {cells} VAE cells of {seeds} seeds, {generations} "
        f"generations, {device}"
        + (f", beside {neighbour} neighbours" if neighbour else "")
        + f"; this process: {describe()}"
    )
    for w in workers:
        console.print(
            f"  {w} worker{'s' * (w != 1)}: {med[w]:.1f} s (runs "
            + ", ".join(f"{t:.1f}" for t in times[w])
            + ")"
            + ("" if w == first else f"; {med[first] / med[w]:.2f}x the {first}-worker speed")
        )
    return {"times": times, "median": med}
