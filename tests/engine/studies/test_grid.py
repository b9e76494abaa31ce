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

from engine.core.errors import ConfigError
from engine.studies.cell import FAIL_ENV
from engine.studies.grid import KILL_ENV, load_state, run_grid
from engine.studies.spec import GridSpec, load_grid, parse_grid
from store import Store
from tests.helpers import start_cli

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


@pytest.mark.parametrize(
    "change, msg",
    [
        ({"axes": {"colour": [1]}}, "axis 'colour' is not a config field"),
        ({"axes": {"seed": 3}}, "axis 'seed' is 3, expected a non-empty list"),
        ({"name": "../x"}, "grid name '../x' is not allowed"),
        ({"workers": 2}, r"grid keys \['workers'\] unknown"),
        ({"axes": {"seeds": [0]}}, r"cell \w+ \(seeds=0\): config.seeds: Input should be greater"),
        ({"resources": {"gpu": True}}, r"grid resources.gpu is True, expected a number >= 0"),
        ({"axes": {"seeds": [True]}}, r"\(seeds=true\): config: seeds is true, expected a number"),
        (
            {"axes": {"validators": [{"ssim-nearest": True}]}},
            r"config: validators.ssim-nearest is true, expected a number",
        ),
    ],
)
def test_bad_grids_are_refused_in_one_line(change, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_grid({**GRID, **change}).cells()


def test_a_grid_is_bounded_by_its_cell_count_before_any_cell_is_built():
    axes = {f"strategy_params.k{i}": list(range(10)) for i in range(5)}
    with pytest.raises(ConfigError, match=r"100,000 cells \(10 x 10 x 10 x 10 x 10 values"):
        parse_grid({**GRID, "axes": axes})
    assert len(parse_grid({**GRID, "axes": dict(list(axes.items())[:4])}).axes) == 4
    # A grid built in code (diff-study's, study's) is bounded as well.
    with pytest.raises(ConfigError, match=r"grid big has 20,000 cells \(200 x 100 values"):
        GridSpec("big", {}, {"seed": list(range(200)), "seeds": list(range(1, 101))})


def test_a_2x2_grid_on_a_process_pool_records_a_failure_and_resumes(
    home: Path, tmp_path: Path, monkeypatch
):
    spec = parse_grid(GRID)
    cells = spec.cells()
    monkeypatch.setenv(FAIL_ENV, cells[2].id)
    seen = []
    run = run_grid(spec, home, workers=2, on_status=lambda c, s, r: seen.append((c.id, s)))
    assert sorted(run.ran) == sorted(c.id for c in cells)
    assert run.failed == {
        cells[2].id: f"RuntimeError: cell {cells[2].id} failed on purpose (${FAIL_ENV})"
    }
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
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "grid",
            str(spec_file),
            "--workers",
            "1",
            "-q",
            "--home",
            str(home),
        ],
        env={**env, KILL_ENV: "1"},
        start_new_session=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
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

    from engine.studies import cell as grid_cell

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
    devices = db(home).query(
        "SELECT DISTINCT json_extract_string(config, '$.device') AS d FROM campaigns"
    )
    assert devices["d"].tolist() == ["cpu"]  # no GPU given: the cells ran on the CPU


@pytest.fixture
def ctrl_c():
    """SIGINT and SIGTERM raise KeyboardInterrupt, as `latentfuzz grid` sets them."""
    old = {s: signal.signal(s, signal.default_int_handler) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in old.items():
        signal.signal(s, h)


@pytest.mark.parametrize("where", ["search", "close"])
def test_ctrl_c_stops_a_grid_run_in_this_process_and_the_rest_runs_next_time(
    home: Path, monkeypatch, ctrl_c, where
):
    # Before, the interrupted cell was recorded failed and the grid ran on to its end.
    from engine.campaign import loop as search_loop
    from engine.core.images import ImageSink

    owner, name = (search_loop.Campaign, "run") if where == "search" else (ImageSink, "close")
    real, calls = getattr(owner, name), []

    def second_cell_interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, second_cell_interrupted)
    spec = parse_grid(GRID)
    cells = spec.cells()
    run = run_grid(spec, home, workers=0)
    # In the search, the second cell stops and runs again; in its close, it is kept.
    kept = 1 if where == "search" else 2
    assert run.stopped and run.failed == {} and len(run.ran) == kept  # stopped: not run
    assert [run.status[c.id] for c in cells] == ["done"] * kept + ["queued"] * (4 - kept)
    assert load_state(run.folder)["cells"][cells[1].id]["status"] == run.status[cells[1].id]
    assert len(grid_rows(home, "tiny")) == kept
    assert os.listdir(run.folder / "work") == []
    monkeypatch.setattr(owner, name, real)
    again = run_grid(spec, home, workers=0)
    assert not again.stopped and sorted(again.ran) == sorted(c.id for c in cells[kept:])
    assert len(grid_rows(home, "tiny")) == 4


@pytest.mark.parametrize(
    "workers, to_group",
    [(1, True), (2, True), (1, False)],
    ids=["terminal", "terminal-idle-worker", "driver-only"],
)
def test_ctrl_c_or_stop_stops_a_grid_on_a_process_pool(
    home: Path, tmp_path: Path, env, workers, to_group
):
    import time

    spec_file = tmp_path / "stop.yaml"
    # The second cell searches for minutes (its seeds never stop at a failure).
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "stop",
                "base": {"seeds": 2, "seed": 1, "strategy_params": {"stop_at_failure": False}},
                "axes": {"strategy_params.generations": [3, 100000, 4]},
            }
        )
    )
    p = start_cli(
        ["grid", str(spec_file), "--workers", str(workers), "-q", "--home", str(home)], env
    )
    folder, cells = home / "grids" / "stop", load_grid(spec_file).cells()
    # Two workers: the short cells finish beside the long one, and a worker waits idle.
    short_done = ["done", "queued", "done"] if workers == 2 else ["done", "queued", "queued"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = load_state(folder) if (folder / "state.json").is_file() else {"cells": {}}
        now = [state["cells"].get(c.id, {}).get("status") for c in cells]
        if now[1] == "running" and [s for i, s in enumerate(now) if i != 1] == [
            s for i, s in enumerate(short_done) if i != 1
        ]:
            break
        time.sleep(0.2)
    time.sleep(2)  # the worker is in the long cell's search
    if to_group:
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches driver and workers
    else:
        p.send_signal(signal.SIGTERM)  # `kill`, `timeout`: the driver alone; it had waited
    out, errs = p.communicate(timeout=60)  # for the long cell's whole campaign
    assert p.returncode == 130 and "Traceback" not in errs, errs
    done = short_done.count("done")
    assert f"grid stop stopped: {done} of 3 cells done ({done} run now," in " ".join(out.split())
    assert f"runs the {3 - done} cells not run" in " ".join(errs.split())
    statuses = [load_state(folder)["cells"][c.id]["status"] for c in cells]
    assert statuses == short_done


def test_a_grid_with_nothing_to_run_draws_no_progress_bar():
    """A rerun of a finished grid changes no cell: it drew an empty "0/?" bar."""
    from types import SimpleNamespace

    from engine.cli.bundle import GridView

    with GridView(quiet=False) as view:
        pass
    assert view.live is None
    cell = SimpleNamespace(id="c1", label=lambda: "seed=1")
    run = SimpleNamespace(cells=[cell], status={"c1": "running"})
    with GridView(quiet=False) as view:
        view.update(cell, "running", run)
        assert view.live is not None and view.bar.tasks[0].total == 1


def test_a_grid_rerun_with_other_settings_is_refused_not_reused(home: Path):
    """It said "4 of 4 cells done" and kept campaigns of 3 seeds where the file asked for 5
    (a walkthrough's finding): a cell is known by its axis values alone. Each done cell is
    checked against its stored campaign, so a base changed while only new cells ran is
    caught too; a default written out or a run-time knob changed is no change."""
    from engine.core.errors import LatentfuzzError

    def grid(base: dict, seeds: list[int]) -> dict:
        return {"name": "rebased", "base": base, "axes": {"seed": seeds}}

    base = {"seeds": 1, "strategy_params": {"generations": 2}}
    run_grid(parse_grid(grid(base, [1])), home, workers=0)
    same = {**base, "seed": 0, "device": "cpu", "flush_seconds": 5, "strategy": "ga"}
    assert run_grid(parse_grid(grid(same, [1])), home, workers=0).skipped == [
        parse_grid(grid(base, [1])).cells()[0].id
    ]
    refused = {
        "seeds: 1 -> 2": {"seeds": 2, "strategy_params": {"generations": 2}},
        "strategy_params.generations: 2 -> 250": {"seeds": 1},
        "strategy_params.perturbation: strong -> low": {
            **base,
            "strategy_params": {"generations": 2, "perturbation": "low"},
        },
    }
    for change, other in refused.items():
        says = rf"grid rebased has 1 done cell run with other settings \({change}\); give the"
        with pytest.raises(LatentfuzzError, match=says):
            run_grid(parse_grid(grid(other, [1])), home, workers=0)
    # New cells only, then all: the first run's cell is still caught.
    run_grid(parse_grid(grid(refused["seeds: 1 -> 2"], [2])), home, workers=0)
    with pytest.raises(LatentfuzzError, match=r"\(seeds: 1 -> 2\)"):
        run_grid(parse_grid(grid(refused["seeds: 1 -> 2"], [1, 2])), home, workers=0)
