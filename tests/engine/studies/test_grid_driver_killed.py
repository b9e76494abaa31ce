"""A grid driver killed with kill -9 takes its pool with it (engine/studies/cell.py,
die_with): its two workers and the pool's resource tracker had lived on for minutes,
ignoring SIGTERM (4 of 4)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import yaml

from engine.studies.grid import load_state
from engine.studies.spec import load_grid
from tests.helpers import alive, command_line, descendants, spawn, start_cli

#: The kernel ends the workers at once (prctl); without it, a thread looks every 0.5 s.
#: Bound for a load average of 8, with room.
GONE_WITHIN_S = 30


def test_a_driver_killed_with_kill_9_leaves_no_worker_behind(home: Path, tmp_path: Path, env):
    spec = tmp_path / "long.yaml"
    # Two cells that search for minutes (no seed stops at a failure), one per worker.
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "long",
                "base": {"seeds": 2, "seed": 1, "strategy_params": {"stop_at_failure": False}},
                "axes": {"strategy_params.generations": [100000, 100001]},
            }
        )
    )
    p = start_cli(["grid", str(spec), "--workers", "2", "-q", "--home", str(home)], env)
    folder, cells = home / "grids" / "long", load_grid(spec).cells()
    deadline = time.monotonic() + 180
    while not all((folder / "work" / c.id / "campaigns").is_dir() for c in cells):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the cells never started their campaigns"
        time.sleep(0.2)
    assert [load_state(folder)["cells"][c.id]["status"] for c in cells] == ["running"] * 2
    family = descendants(p.pid)
    assert len(family) >= 2, {q: command_line(q) for q in family}  # the workers (and tracker)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    deadline = time.monotonic() + GONE_WITHIN_S
    while (left := [q for q, start in family.items() if alive(q, start)]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert not left, {q: command_line(q) for q in left}


def test_without_prctl_a_worker_sees_its_driver_go(tmp_path: Path, env):
    """The fallback where the kernel cannot be asked (not Linux): the watching thread."""
    worker = (
        "import os, time; from engine.studies import cell; "
        "cell.PR_SET_PDEATHSIG = -1; "  # an option prctl refuses: the thread alone
        "cell.die_with(os.getppid()); time.sleep(600)"
    )
    driver = (
        "import subprocess, sys, time; "
        f"w = subprocess.Popen([sys.executable, '-c', {worker!r}]); "
        "print(w.pid, flush=True); time.sleep(600)"
    )
    p = spawn([sys.executable, "-c", driver], env=env)
    pid = int(p.stdout.readline())
    (start,) = descendants(p.pid).values()
    time.sleep(1)  # the worker's thread is watching
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    deadline = time.monotonic() + GONE_WITHIN_S
    while alive(pid, start) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid, start), command_line(pid)
