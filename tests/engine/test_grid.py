"""`latentfuzz grid`: cells in a stable order with stable ids, run as separate processes
(a local pool, or Ray), imported by the driver alone; failures recorded, resume by cell."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.errors import ConfigError
from engine.grid import KILL_ENV, load_state, run_grid
from engine.grid_cell import FAIL_ENV
from engine.grid_spec import load_grid, parse_grid
from store import Store

GRID = {
    "name": "tiny",
    "base": {"seeds": 2, "strategy_params": {"generations": 3}},
    "axes": {"seed": [1, 2], "strategy_params.perturbation": ["low", "high"]},
}


def db(home: Path) -> Store:
    return Store(home / "latentfuzz.duckdb")


def grid_rows(home: Path, grid: str):
    return db(home).query(
        "SELECT g.cell, g.axes, c.study, c.status, c.n_seeds FROM grid_cells g "
        "JOIN campaigns c ON c.id = g.campaign_id WHERE g.grid = ? ORDER BY g.cell",
        [grid],
    )


def test_cells_come_in_a_stable_order_with_ids_from_their_values():
    cells = parse_grid(GRID).cells()
    assert [c.values for c in cells] == [
        {"seed": 1, "strategy_params.perturbation": "low"},
        {"seed": 1, "strategy_params.perturbation": "high"},
        {"seed": 2, "strategy_params.perturbation": "low"},
        {"seed": 2, "strategy_params.perturbation": "high"},
    ]
    assert cells[1].raw["strategy_params"] == {"generations": 3, "perturbation": "high"}
    assert len({c.id for c in cells}) == 4
    # A value added to an axis: the old cells keep their ids (resume relies on it).
    more = parse_grid({**GRID, "axes": {**GRID["axes"], "seed": [1, 2, 3]}}).cells()
    assert {c.id for c in cells} < {c.id for c in more}


@pytest.mark.parametrize("change, msg", [
    ({"axes": {"colour": [1]}}, "axis 'colour' is not a config field"),
    ({"axes": {"seed": 3}}, "axis seed is 3, expected a non-empty list"),
    ({"name": "../x"}, "grid name '../x' is not allowed"),
    ({"workers": 2}, r"grid keys \['workers'\] unknown"),
    ({"axes": {"seeds": [0]}}, r"cell \w+ \(seeds=0\): config.seeds: Input should be greater"),
])  # fmt: skip
def test_bad_grids_are_refused_in_one_line(change, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_grid({**GRID, **change}).cells()


def test_a_2x2_grid_on_a_process_pool_records_a_failure_and_resumes(
    home: Path, tmp_path: Path, monkeypatch
):
    spec = parse_grid(GRID)
    cells = spec.cells()
    monkeypatch.setenv(FAIL_ENV, cells[2].id)
    seen = []
    run = run_grid(spec, home, workers=2, on_status=lambda c, s, r: seen.append((c.id, s)))
    assert sorted(run.ran) == sorted(c.id for c in cells)
    assert run.failed == {cells[2].id: f"RuntimeError: cell {cells[2].id} failed on purpose "
                                       f"(${FAIL_ENV})"}  # fmt: skip
    assert [s for c, s in seen if c == cells[0].id] == ["running", "done"]
    state = load_state(run.folder)["cells"]
    assert state[cells[2].id]["status"] == "failed" and "on purpose" in state[cells[2].id]["error"]
    rows = grid_rows(home, "tiny")
    assert (
        len(rows) == 3 and (rows["study"] == "tiny").all() and (rows["status"] == "finished").all()
    )
    assert not any((run.folder / "work").iterdir())  # private homes removed
    # Again, without the failure: only the failed cell runs (in this process: quicker).
    monkeypatch.delenv(FAIL_ENV)
    again = run_grid(spec, home, workers=0)
    assert again.ran == [cells[2].id] and sorted(again.skipped) == sorted(
        c.id for c in cells if c is not cells[2]
    )
    assert set(again.status.values()) == {"done"} and len(grid_rows(home, "tiny")) == 4


def test_a_killed_grid_reruns_only_the_missing_cells(home: Path, tmp_path: Path, env):
    spec_file = tmp_path / "tiny.yaml"
    spec_file.write_text(yaml.safe_dump(GRID))
    # The driver kills itself and its worker (SIGKILL to its process group) right after
    # the first import, while the worker runs the second cell.
    p = subprocess.run(
        [sys.executable, "-m", "engine.cli", "grid", str(spec_file), "--workers", "1", "-q",
         "--home", str(home)], env={**env, KILL_ENV: "1"}, start_new_session=True,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == -signal.SIGKILL, p.stderr
    spec = load_grid(spec_file)
    cells = spec.cells()
    assert len(grid_rows(home, "tiny")) == 1
    folder = home / "grids" / "tiny"
    # A cell that finished while the driver was dying left its bundle: imported, not rerun.
    left = {p.stem for p in (folder / "bundles").glob("*.lfz")} - {cells[0].id}
    again = run_grid(spec, home, workers=0)
    assert again.skipped == [cells[0].id]
    assert sorted(again.imported) == sorted(c.id for c in cells[1:])
    assert sorted(again.ran) == sorted(c.id for c in cells[1:] if c.id not in left)
    assert len(again.ran) == 3 - len(left) >= 2
    assert len(grid_rows(home, "tiny")) == 4 and os.listdir(folder / "work") == []


@pytest.mark.parametrize("gpus, device", [([], "cpu"), ([0], "cuda")])
def test_a_ray_cell_runs_on_the_device_ray_gave_it(monkeypatch, gpus, device):
    import types

    from engine import grid_cell

    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(get_gpu_ids=lambda: gpus))
    got = {}

    def fake_run_cell(task):
        got.update(task)
        Path(task["bundle"]).write_bytes(b"bundle")
        return {"ok": True, "cell": task["cell"]}

    monkeypatch.setattr(grid_cell, "run_cell", fake_run_cell)
    task = {"cell": "c", "raw": {"seeds": 2}, "main_home": "/nowhere", "work": "x", "bundle": "y"}
    res = grid_cell.run_ray_cell(task)
    assert got["raw"] == {"seeds": 2, "device": device} and res["device"] == device
    assert res["data"] == b"bundle" and not Path(got["work"]).exists()  # its temp home gone


@pytest.mark.slow
@pytest.mark.ray
def test_the_same_grid_on_a_local_ray_instance(home: Path):
    import ray  # the dev extra installs it

    ray.init(num_cpus=2, include_dashboard=False)
    try:
        run = run_grid(parse_grid(GRID), home, ray="auto")
    finally:
        ray.shutdown()
    assert set(run.status.values()) == {"done"}, run.errors
    rows = grid_rows(home, "tiny")
    assert len(rows) == 4 and (rows["status"] == "finished").all()
    devices = db(home).query("SELECT DISTINCT json_extract_string(config, '$.device') AS d "
                             "FROM campaigns")  # fmt: skip
    assert devices["d"].tolist() == ["cpu"]  # no GPU given: the cells ran on the CPU
