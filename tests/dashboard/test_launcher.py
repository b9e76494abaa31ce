"""The warm launcher (engine/warm.py, dashboard/launcher.py): a launched campaign is
forked from a process with the engine imported, in a session of its own, exactly once; the
launcher ends with its dashboard, and a launch it cannot take goes the plain way."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dashboard import launch, launcher
from engine.campaign.config import parse_config
from store import Store, liveness
from store import campaigns as sc


@pytest.fixture
def warm(monkeypatch):
    monkeypatch.setenv(launcher.ENV, "1")  # the suite turns it off (tests/conftest.py)
    proc = launcher._ensure()
    assert proc is not None and proc.poll() is None
    yield proc
    launcher._forget(proc)


def until(check, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not so within {seconds} s: {check.__doc__}"
        time.sleep(0.1)


def gone(pid: int) -> bool:
    """(the process has ended)"""
    return not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text()


def test_a_launch_is_forked_from_the_launcher_and_outlives_it(warm, home: Path):
    params = {"generations": 100_000, "stop_at_failure": False}  # runs until it is stopped
    cfg = parse_config({"seeds": 1, "seed": 1, "strategy_params": params})
    cid = launch.launch(cfg, home)
    until(lambda: liveness.alive(home, cid))
    pid, _ = liveness.holder_of(liveness.lock_path(home, cid))
    try:
        # Forked, not a new interpreter: its command line is the launcher's. Its session is
        # its own (a Ctrl-C or kill of the dashboard's group is not its), its parent not us.
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert argv[1:3] == [b"-m", b"engine.warm"], argv
        assert os.getsid(pid) == pid and os.getppid() != pid
        assert not launch.log_path(home, cid).with_suffix(".claim").exists()  # taken
        # The dashboard goes (its pipe closes): the launcher ends, the campaign runs on.
        warm.stdin.close()
        assert warm.wait(timeout=30) == 0
        assert liveness.alive(home, cid)
        # Stop, as the page's button does: a clean stop, said in its log.
        assert launch.stop(home, cid)
        until(lambda: gone(pid))
    finally:
        if not gone(pid):
            os.kill(pid, 9)
    assert sc.campaign(Store(home / "latentfuzz.duckdb"), cid)["status"] == "interrupted"
    assert f"campaign {cid} interrupted" in launch.launch_log(home, cid)


def test_a_launch_taken_back_runs_nothing(warm, home: Path):
    log = home / "launch" / "x.log"
    log.parent.mkdir(parents=True)
    log.write_text("")
    # No claim file: the dashboard took the launch back (it started it itself).
    ask = {"argv": ["run", "--seeds", "1", "--home", str(home)], "log": str(log)}
    warm.stdin.write(json.dumps({**ask, "claim": str(log.with_suffix(".claim"))}) + "\n")
    warm.stdin.flush()
    pid = launcher._answer(warm, 30)["pid"]
    until(lambda: gone(pid), 30)
    assert log.read_text() == ""
    assert not (home / "latentfuzz.duckdb").exists()


def test_a_launcher_gone_or_out_of_date_sends_the_launch_the_plain_way(
    warm, home: Path, monkeypatch
):
    log = home / "x.log"
    warm.kill()
    warm.wait(timeout=30)
    assert launcher.run(["--version"], log) is None
    assert not log.with_suffix(".claim").exists()  # it can never run it now
    until(lambda: launcher._PROC is not None and launcher._PROC.poll() is None)  # a new one
    fresh = launcher._PROC
    assert fresh.pid != warm.pid
    try:
        # A changed environment: the next command must see it, as a new process would.
        monkeypatch.setenv("LATENTFUZZ_SOMETHING", "new")
        assert launcher.run(["--version"], log) is None
        until(lambda: launcher._PROC is not None and launcher._PROC.pid != fresh.pid)
        assert fresh.poll() is not None
    finally:
        launcher._forget(fresh)
        if launcher._PROC is not None:
            launcher._forget(launcher._PROC)


def test_it_is_off_when_asked(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(launcher.ENV, "0")
    assert launcher.run(["--version"], tmp_path / "x.log") is None
    assert not (tmp_path / "x.claim").exists()


def test_a_launch_while_the_launcher_starts_goes_the_plain_way_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv(launcher.ENV, "1")
    monkeypatch.setattr(launcher, "start", lambda: None)  # (no launcher of its own here)
    with launcher._LOCK:  # as `_ensure` holds it while a launcher imports
        assert launcher.run(["--version"], tmp_path / "x.log") is None
    assert not (tmp_path / "x.claim").exists()


def test_a_resume_is_forked_too_and_finishes_the_campaign(warm, home: Path):
    params = {"generations": 1000, "stop_at_failure": False}  # seconds, even forked warm
    cfg = parse_config({"seeds": 1, "seed": 1, "strategy_params": params})
    cid = launch.launch(cfg, home)
    until(lambda: liveness.alive(home, cid))
    store = Store(home / "latentfuzz.duckdb")
    until(lambda: sc.has_generation(store, cid))
    assert launch.stop(home, cid)
    until(lambda: not liveness.alive(home, cid))
    assert sc.campaign(store, cid)["status"] == "interrupted"
    launch.resume(home, cid)
    until(lambda: liveness.alive(home, cid))  # (hundreds of generations left: seconds)
    pid, _ = liveness.holder_of(liveness.lock_path(home, cid))
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert argv[1:3] == [b"-m", b"engine.warm"], argv  # forked from the launcher
    until(lambda: sc.campaign(store, cid)["status"] == "finished")
    assert "resum" in launch.launch_log(home, cid).lower()
