"""`latentfuzz bench grid`: the same grid with 1 and 2 workers, in turns, in one run."""

from __future__ import annotations

from rich.console import Console

from engine.bench.grid import bench_grid, spec
from engine.studies.spec import GridSpec


def test_the_grid_has_four_vae_cells_that_differ_in_their_seed():
    g = spec(4, 10, 250, "cpu")
    cells = GridSpec(g["name"], g["base"], g["axes"]).cells()
    assert len(cells) == 4
    assert {c.raw["generator"] for c in cells} == {"vae"}
    assert sorted(c.raw["seed"] for c in cells) == [1, 2, 3, 4]


def test_both_worker_counts_run_in_turns(monkeypatch):
    order = []
    monkeypatch.setattr("engine.bench.grid.grid_seconds", lambda g, w: order.append(w) or w * 10.0)
    console = Console(record=True, width=200)
    out = bench_grid(repeats=2, console=console)
    assert order == [1, 2, 1, 2]
    assert out["median"] == {1: 10.0, 2: 20.0}
    text = console.export_text()
    assert "1 worker: 10.0 s" in text and "2 workers: 20.0 s" in text and "0.50x" in text


def test_a_tiny_grid_runs_with_each_worker_count():
    out = bench_grid(cells=2, seeds=1, generations=1, console=Console(quiet=True))
    assert set(out["times"]) == {1, 2} and all(t[0] > 0 for t in out["times"].values())
