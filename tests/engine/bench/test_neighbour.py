"""`latentfuzz bench --neighbour N`: busy neighbour processes that always end, and a
report with quiet and loaded figures side by side."""

from __future__ import annotations

import os
import sys
import time

import pytest
from rich.console import Console

from engine.bench import neighbour as nb
from engine.bench.loaded import FIGURES, bench_loaded
from tests import helpers


def neighbour_pids() -> list[int]:
    """This process's live children running the neighbour's loop."""
    return [p for p in helpers.descendants(os.getpid()) if "200_000" in helpers.command_line(p)]


def wait_until(ready, timeout: float = 60) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return True
        time.sleep(0.05)
    return ready()


def gone(pid: int) -> bool:
    f = helpers._stat(pid)
    return f is None or f[0] == "Z"


def test_neighbours_are_busy_processes_that_end_with_the_block():
    with nb.neighbours(2) as procs:
        pids = [p.pid for p in procs]
        assert sorted(neighbour_pids()) == sorted(pids)
        # CPU-bound: each keeps using CPU time (a sleeping process would stay near 0).
        assert wait_until(lambda: all(nb.cpu_seconds(p) >= 0.3 for p in pids))
    assert all(p.poll() is not None for p in procs)
    assert neighbour_pids() == []


@pytest.mark.parametrize("stop", [RuntimeError, KeyboardInterrupt])
def test_neighbours_end_on_an_error_and_on_ctrl_c(stop):
    with pytest.raises(stop), nb.neighbours(1) as procs:
        raise stop("mid-measurement")
    assert procs[0].poll() is not None and neighbour_pids() == []


def test_a_neighbour_whose_bench_was_killed_ends_itself(tmp_path):
    """SIGKILL runs no `finally`: the neighbour sees its parent change and exits."""
    code = (
        "import time\n"
        "from engine.bench.neighbour import start\n"
        "print(start(1)[0].pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    bench = helpers.spawn([sys.executable, "-c", code], env=env)
    pid = int(bench.stdout.readline())
    assert not gone(pid)
    helpers.end_group(bench)  # the bench's own group only: the neighbour has its session
    assert wait_until(lambda: gone(pid)), "the neighbour outlived its bench"


def fake_measure(calls: list[int]):
    def measure(one_seed: bool = False, **kw) -> dict:
        busy = len(neighbour_pids())
        calls.append(busy)
        slow = 1 + busy  # the loaded half: half the throughput
        row = {
            "seeds": 10,
            "campaign_evals_per_s": 1000.0 / slow,
            "limit": 2000.0 / slow,
            "limit_batch": 256,
            "efficiency": 0.5,
            "shape_bound": 0.9,
            "startup_s": 1.0 * slow,
            "batch_size": 256,
        }
        env = {"torch_threads": 1, "omp_wait_policy": "PASSIVE"}
        return {"sizes": [row], "one_seed_s": 2.0 * slow, "environment": env}

    return measure


def test_the_report_has_a_quiet_and_a_loaded_column(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr("engine.bench.scale.measure", fake_measure(calls))
    console = Console(record=True, width=300)
    out = bench_loaded(1, console)
    assert calls == [0, 1]  # the quiet half alone, the loaded half beside one neighbour
    assert out["ratios"] == {10: pytest.approx(0.5)}
    assert len(out["neighbour_cpu_s"]) == 1
    text = " ".join(console.export_text().split())  # the title wraps
    assert "quiet" in text and "beside 1 neighbour" in text and "loaded / quiet" in text
    for label, *_ in FIGURES:
        assert label in text
    assert "1 generation, command to exit (s)" in text
    assert "OMP_WAIT_POLICY" in text and "torch threads" in text and "cores" in text
    assert "campaign processes: OMP_WAIT_POLICY PASSIVE, torch threads 1" in text
    assert "10 seeds 0.500" in text and "2.00 s quiet, 4.00 s loaded" in text
    assert neighbour_pids() == []


def test_the_neighbours_end_when_the_loaded_half_fails(monkeypatch):
    def measure(one_seed: bool = False, **kw) -> dict:
        if neighbour_pids():
            raise RuntimeError("a campaign failed")
        return fake_measure([])()

    monkeypatch.setattr("engine.bench.scale.measure", measure)
    with pytest.raises(RuntimeError, match="a campaign failed"):
        bench_loaded(2, Console(record=True))
    assert neighbour_pids() == []


@pytest.mark.slow  # a real bench run (23 s): `make test-slow`
def test_bench_loaded_measures_both_halves_for_real():
    console = Console(record=True, width=300)
    out = bench_loaded(
        1,
        console,
        sizes=(2,),
        generations=1,
        large_generations=1,
        limit_budget_s=0.5,
        sustain_s=0.1,
        min_campaign_s=0.0,
        max_runs=1,
    )
    for half in ("quiet", "loaded"):
        (row,) = out[half]["sizes"]
        assert row["seeds"] == 2 and row["campaign_evals_per_s"] > 0 and row["limit"] > 0
        assert out[half]["one_seed_s"] > 0
    assert out["neighbour_cpu_s"][0] > 0
    assert "beside 1 neighbour" in console.export_text()
    assert neighbour_pids() == []


def test_the_option_routes_to_the_loaded_bench_and_its_absence_does_not(monkeypatch):
    from typer.testing import CliRunner

    from engine.cli.main import app

    calls = []
    monkeypatch.setattr(
        "engine.bench.loaded.bench_loaded", lambda n, console, **kw: calls.append(("loaded", n, kw))
    )
    monkeypatch.setattr("engine.bench.scale.bench_scale", lambda *a, **kw: calls.append(("quiet",)))
    base = ["bench", "--sizes", "10,100", "--strategies", "", "--no-nsga2", "--device", "cpu"]
    assert CliRunner().invoke(app, [*base, "--neighbour", "2"]).exit_code == 0
    assert CliRunner().invoke(app, base).exit_code == 0
    (kind, n, kw), quiet = calls
    assert (kind, n, kw["sizes"], kw["device"]) == ("loaded", 2, (10, 100), "cpu")
    assert quiet == ("quiet",)
