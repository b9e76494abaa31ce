"""engine/campaign/startup.py: the start-up steps a launched campaign reports, and the
replay report a resume writes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from engine.campaign import startup
from tests.helpers import CLI


def test_the_cli_reports_its_start_up_steps_for_a_launched_campaign(home: Path, env):
    cid = "startup-test"
    subprocess.run(
        [*CLI, "run", "--id", cid, "--seeds", "1", "--generations", "1", "--quiet"],
        env=env,
        check=True,
        capture_output=True,
    )
    steps = startup.read(home, cid)
    assert [s for _, s in steps] == list(startup.STEPS)
    assert steps[0][0] <= steps[1][0]


def test_the_replay_report_is_written_at_its_start_and_end_and_twice_a_second_between(
    home: Path, monkeypatch
):
    clock = [1000.0]
    monkeypatch.setattr(startup.time, "time", lambda: clock[0])
    report = startup.ReplayReport(home, "r", last=40)
    assert startup.read_replay(home, "r") == (1000.0, 0, 40, 0)
    for g, t in ((1, 1000.1), (2, 1000.4), (3, 1000.6), (4, 1000.7)):
        clock[0] = t
        report.at(g)
    assert startup.read_replay(home, "r") == (1000.0, 3, 40, 0)  # 0.6 s after the last write
    clock[0] = 1000.8
    report.at(40)  # the end of the replay is written at once...
    assert startup.read_replay(home, "r") == (1000.0, 40, 40, 0)
    clock[0] = 1002.0
    report.at(41)  # ...and nothing after it: the store's generations say the rest
    assert startup.read_replay(home, "r") == (1000.0, 40, 40, 0)
    # A report of three fields (a resume before checkpoints) started from generation 0.
    startup.replay_path(home, "r").write_text("1000.0 5 40\n")
    assert startup.read_replay(home, "r") == (1000.0, 5, 40, 0)
    startup.replay_path(home, "r").write_text("half a li")
    assert startup.read_replay(home, "r") is None
