"""A Ctrl-C (or the dashboard's stop) that lands while a campaign closes is held back: the
campaign closes with the status its search reached instead of being left `running` (then
crashed) for want of its last write, and the interrupt is raised once it is closed, so a
loop of campaigns still stops. A second one stops at once. A store briefly held by another
process does not turn a held interrupt into a stop; a long wait in the final write gives
way to it (the rows go to a recovery file).

The signals are sent to this process from inside the close, so they land exactly there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.campaign import loop as search_loop
from engine.campaign import runner
from engine.campaign.config import parse_config
from engine.campaign.runner import CampaignResult, StoppedAfterClose, run_campaign
from engine.core.images import ImageSink
from store import CampaignWriter, interrupts, recovery
from store import campaigns as sc
from store import metrics as sm
from tests.helpers import db, spawn
from tests.reliability.conftest import cli

SMALL = {
    "seeds": 2,
    "seed": 3,
    "strategy_params": {"generations": 4, "population": 6, "best_left": 2},
}
#: Another process holding the store as a writer for argv[2] seconds.
HOLDER = """
import sys, time
from store import Store
with Store(sys.argv[1]).write():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def ctrl_c():
    """SIGINT and SIGTERM raise KeyboardInterrupt, as the CLI sets them (engine/cli/main.py);
    the test's handlers come back after it, whatever happened."""
    old = {s: signal.signal(s, signal.default_int_handler) for s in interrupts.SIGNALS}
    yield
    for s, h in old.items():
        signal.signal(s, h)


def before(monkeypatch, owner, name: str, act) -> None:
    """Run act() when owner.name is called, then the real one."""
    real = getattr(owner, name)

    def wrapper(*a, **k):
        act()
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapper)


def signals(*sigs: int):
    def send() -> None:
        for s in sigs:
            os.kill(os.getpid(), s)
            time.sleep(0.02)  # each handled before the next is sent

    return send


def hold_store(home: Path, seconds: float, procs: list) -> None:
    """Another process takes the store for `seconds`; returns once it holds it."""
    p = spawn(
        [sys.executable, "-c", HOLDER, str(home / "latentfuzz.duckdb"), str(seconds)],
        stderr=None,
    )
    procs.append(p)
    assert p.stdout.readline().strip() == "held"


def stopped_after_close(home: Path) -> CampaignResult:
    try:
        run_campaign(parse_config(SMALL), home, campaign_id="c")
    except StoppedAfterClose as e:
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        return e.result
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped the campaign's close")
    pytest.fail("the held interrupt was dropped: a loop of campaigns would go on")


def closed_whole(home: Path, status: str = "finished") -> None:
    c = sc.campaign(db(home), "c")
    assert c["status"] == status and c["error"] is None
    seeds = sc.seeds(db(home), "c")
    assert "searching" not in set(seeds["status"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "stop"])
def test_an_interrupt_while_the_images_are_written_lets_the_campaign_close(
    home, monkeypatch, capsys, ctrl_c, sig
):
    before(monkeypatch, ImageSink, "close", signals(sig))
    assert stopped_after_close(home).status == "finished"
    closed_whole(home)
    assert sm.metrics(db(home), "c") is not None
    assert "press Ctrl-C again to stop now" in capsys.readouterr().err


def test_a_store_held_briefly_by_another_process_does_not_stop_the_close(home, monkeypatch, ctrl_c):
    procs: list = []

    def interrupt_then_contend() -> None:
        signals(signal.SIGINT)()
        hold_store(home, 0.5, procs)  # the final write waits for it, under a second

    before(monkeypatch, ImageSink, "close", interrupt_then_contend)
    assert stopped_after_close(home).status == "finished"
    closed_whole(home)
    assert recovery.pending(home) == []


def test_a_held_interrupt_keeps_the_metrics_however_long_the_store_is_held(
    home, monkeypatch, ctrl_c
):
    procs: list = []

    def interrupt_then_contend() -> None:
        signals(signal.SIGINT)()
        hold_store(home, 2 * interrupts.GIVE_WAY_AFTER, procs)

    before(monkeypatch, runner, "test_reference", interrupt_then_contend)
    # The metrics are committed with the status in the closing write (one transaction),
    # which gives way to the held interrupt: both go to the recovery folder together.
    with pytest.raises(KeyboardInterrupt):
        run_campaign(parse_config(SMALL), home, campaign_id="c")
    procs[0].wait()
    assert len(recovery.pending(home)) == 1
    recovery.ingest(db(home))  # as the next command does
    closed_whole(home)
    assert sm.metrics(db(home), "c") is not None


def test_a_long_wait_in_the_final_write_gives_way_to_a_held_interrupt(home, monkeypatch, ctrl_c):
    procs: list = []

    def interrupt_then_hold() -> None:
        signals(signal.SIGINT)()
        hold_store(home, 20, procs)

    before(monkeypatch, ImageSink, "close", interrupt_then_hold)
    t = time.monotonic()
    try:
        run_campaign(parse_config(SMALL), home, campaign_id="c")
    except StoppedAfterClose:
        pytest.fail("the final write did not give way")
    except KeyboardInterrupt:
        pass
    assert time.monotonic() - t < 10  # about GIVE_WAY_AFTER, not the store's 20 s
    procs[0].kill()
    procs[0].wait()
    assert len(recovery.pending(home)) == 1
    recovery.ingest(db(home))  # as the next command does
    closed_whole(home)


def test_an_interrupted_search_closes_interrupted_through_a_second_ctrl_c(
    home, monkeypatch, ctrl_c
):
    # The user's first Ctrl-C stops the search; the second, often pressed at once, lands
    # in the close, which still ends with the campaign marked interrupted (resumable).
    before(monkeypatch, search_loop.Campaign, "evaluate_generation", signals(signal.SIGINT))
    before(monkeypatch, ImageSink, "close", signals(signal.SIGINT))
    assert stopped_after_close(home).status == "interrupted"
    closed_whole(home, "interrupted")


SECOND_CTRL_C = """
import os, signal, sys, time
from engine.core.images import ImageSink
from engine.cli.main import main
real = ImageSink.close
def close(self):
    for _ in range(2):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    return real(self)
ImageSink.close = close
sys.argv = ["latentfuzz", *sys.argv[1:]]
main()
"""


def test_a_second_interrupt_during_the_close_stops_at_once_and_the_campaign_resumes(
    home, env, tmp_path
):
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(SMALL))
    p = subprocess.run(
        [sys.executable, "-c", SECOND_CTRL_C, "run", "--config", str(cfg), "--id", "c", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr
    assert "stopped while campaign c was closing" in " ".join(p.stderr.split())
    assert "crashed" in cli(["campaigns"], {**env, "COLUMNS": "200"}).stdout
    done = cli(["resume", "c"], env)
    assert "c finished" in " ".join(done.stdout.split())
    assert "gen " not in done.stderr  # progress is for a terminal, not for a pipe
    closed_whole(home)


def test_a_second_interrupt_inside_a_query_still_saves_the_last_rows(home, monkeypatch, ctrl_c):
    # DuckDB turns an interrupt inside a query into an error of its own.
    run_campaign(parse_config(SMALL), home, campaign_id="c0")
    w = CampaignWriter(db(home), "c0", background=False)

    def interrupted_query(block) -> None:
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(w, "_write_until_it_lands", interrupted_query)
    with interrupts.held(lambda m: None, "c0"):
        signals(signal.SIGINT)()
        with pytest.raises(KeyboardInterrupt):
            signals(signal.SIGINT)()
        assert interrupts.forced() == "c0"
        with pytest.raises(KeyboardInterrupt):
            w.finish("finished")
    assert len(recovery.pending(home)) == 1


def test_held_interrupts_end_a_pause_only_where_the_close_gives_way(ctrl_c):
    said = []
    with interrupts.held(said.append) as hold:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.02)
        assert hold.noted and len(said) == 1
        interrupts.pause(0.1)  # not giving way: an ordinary sleep
        t = time.monotonic()
        with interrupts.giving_way(), pytest.raises(KeyboardInterrupt):
            interrupts.pause(60)
        assert time.monotonic() - t < 30  # ended by the interrupt; generous under load
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupts.honour()  # outside a hold: nothing to raise
    # A handler of the caller's own is left alone.
    mine = []
    signal.signal(signal.SIGINT, lambda *a: mine.append(1))
    with interrupts.held(said.append) as hold:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.02)
        assert not hold.noted
    assert mine == [1]
