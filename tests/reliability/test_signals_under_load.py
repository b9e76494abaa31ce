"""Ctrl-C and SIGTERM at any moment of a campaign's start-up, on a loaded machine, to a CLI
whose parent ignores SIGINT (a shell's background job, a pytest-xdist worker): with other
work running, such a Ctrl-C landed before the command had set its handlers and was lost,
and the campaign ran on for 20 to 27 minutes. Now the entry point takes both signals from
its first instruction (engine/entry.py, store/interrupts.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store import campaigns as sc
from tests.helpers import CLI, db, end_group, spawn, wait_for_campaign, wait_for_files

#: Busy processes beside the test: with the suite's two workers and the CLI itself, a load
#: average of about 6 to 8 on the 2-core CI machine.
LOAD = 2
#: A stop before the campaign's row ends the process at once: 5 s whatever the load is the
#: promise, and this bound holds at a load average of 8 with room to spare.
BEFORE_ROW_S = 15
#: Once the row exists the campaign closes `interrupted` first.
AFTER_ROW_S = 90
#: A shell that ignores SIGINT, then becomes the CLI: what `latentfuzz run ... &` does.
IGNORING_CTRL_C = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"]


@pytest.fixture
def load():
    procs = [
        spawn(
            [sys.executable, "-c", "while True: pass"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(LOAD)
    ]
    yield
    for p in procs:
        end_group(p)


def stop_during_start_up(home: Path, env: dict[str, str], cfg: Path, sig: int, when):
    """Start a long campaign, send `sig` after `when` seconds, or once the campaign's folder
    (`"folder"`: its lock, then its row, come next) or its row (`"row"`) exists; returns
    (returncode, stdout, stderr, the seconds it took to end after the signal, the row or
    None)."""
    # The batch sweep runs here too (the suite pins the size elsewhere): more start-up.
    env = {k: v for k, v in env.items() if k != "LATENTFUZZ_BATCH_SIZE"}
    p = spawn([*IGNORING_CTRL_C, *CLI, "run", "--config", str(cfg), "--id", "c", "-q"], env=env)
    if when == "folder":
        wait_for_files((home / "campaigns" / "c").is_dir, p, timeout=AFTER_ROW_S)
    elif when == "row":
        wait_for_campaign(db(home), p, timeout=AFTER_ROW_S)
    else:
        time.sleep(when)
    assert p.poll() is None, p.communicate()
    sent = time.monotonic()
    p.send_signal(sig)
    try:
        out, errs = p.communicate(timeout=AFTER_ROW_S)
    except subprocess.TimeoutExpired:
        end_group(p)
        pytest.fail(f"still running {AFTER_ROW_S} s after signal {sig} at {when}")
    took = time.monotonic() - sent
    row = sc.campaign(db(home), "c") if (home / "latentfuzz.duckdb").exists() else None
    return p.returncode, out, errs, took, row


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "stop"])
# From 0.3 s: Python's own start-up (tens of milliseconds; more under load) comes before
# the entry point's first instruction, out of latentfuzz's reach.
@pytest.mark.parametrize("when", [0.3, 0.8, 1.5, 3.0, "folder", "row"])
def test_a_signal_in_the_start_up_ends_the_run_at_once_in_one_line_under_load(
    home, env, tmp_path: Path, load, sig, when
):
    cfg = tmp_path / "long.yaml"  # searches for minutes: no seed stops at a failure
    cfg.write_text("seeds: 3\nstrategy_params: {generations: 5000, stop_at_failure: false}\n")
    code, out, errs, took, row = stop_during_start_up(home, env, cfg, sig, when)
    assert code == 130 and "Traceback" not in errs, (code, errs)
    if row is None:  # stopped before the row: nothing to close, so at once
        assert errs.splitlines() in (["interrupted"], ["interrupted before the search began"]), errs
        assert took < BEFORE_ROW_S, took
        assert not (home / "campaigns" / "c").exists()  # nor a folder without its campaign
    else:  # stopped after: the campaign closed `interrupted`, never left `running`
        assert row["status"] == "interrupted" and "campaign c interrupted" in out, (row, out)
