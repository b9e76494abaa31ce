"""A Ctrl-C (or the dashboard's stop) that lands while a campaign closes is held back: the
campaign closes with the status its search reached instead of being left `running` (then
crashed) for want of its last write. A second one stops at once. Waiting for another
process's store lock still gives way to it (test_final_write.py checks the recovery file).

The signals are sent to this process from inside the close, so they land exactly there."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from engine import runner
from engine.config import parse_config
from engine.images import ImageSink
from engine.runner import run_campaign
from store import interrupts, queries
from tests.helpers import db

SMALL = {"seeds": 2, "seed": 3, "strategy_params": {"generations": 4, "population": 6,
                                                     "best_left": 2}}  # fmt: skip


@pytest.fixture
def ctrl_c():
    """SIGINT and SIGTERM raise KeyboardInterrupt, as the CLI sets them (engine/cli.py);
    the test's handlers come back after it, whatever happened."""
    old = {s: signal.signal(s, signal.default_int_handler) for s in interrupts.SIGNALS}
    yield
    for s, h in old.items():
        signal.signal(s, h)


def send_during(monkeypatch, owner, name: str, signals: list[int]) -> None:
    """Send `signals` to this process when owner.name is called, then run it."""
    real = getattr(owner, name)

    def wrapper(*a, **k):
        for s in signals:
            os.kill(os.getpid(), s)
            time.sleep(0.01)  # each handled before the next is sent
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapper)


def run(home: Path):
    try:
        return run_campaign(parse_config(SMALL), home, campaign_id="c")
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped the campaign's close")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "stop"])
def test_an_interrupt_while_the_images_are_written_lets_the_campaign_close(
    home, monkeypatch, capsys, ctrl_c, sig
):
    send_during(monkeypatch, ImageSink, "close", [sig])
    res = run(home)
    assert res.status == "finished"
    c = queries.campaign(db(home), "c")
    assert c["status"] == "finished" and c["error"] is None
    seeds = queries.seeds(db(home), "c")
    assert not set(seeds["status"]) & {"searching", "interrupted"}
    assert "press Ctrl-C again to stop now" in capsys.readouterr().err
    # The hold ended with the close: the CLI's handlers are back.
    assert signal.getsignal(sig) is signal.default_int_handler


def test_an_interrupt_while_the_metrics_are_computed_keeps_them(home, monkeypatch, ctrl_c):
    send_during(monkeypatch, runner, "test_reference", [signal.SIGINT])
    res = run(home)
    assert res.status == "finished"
    assert queries.metrics(db(home), "c") is not None


def test_an_interrupted_search_closes_interrupted_through_a_second_ctrl_c(
    home, monkeypatch, ctrl_c
):
    # The user's first Ctrl-C stops the search; the second, often pressed at once, lands
    # in the close, which still ends with the campaign marked interrupted (resumable).
    from engine import search_loop

    send_during(monkeypatch, search_loop.Campaign, "evaluate_generation", [signal.SIGINT])
    send_during(monkeypatch, ImageSink, "close", [signal.SIGINT])
    res = run(home)
    assert res.status == "interrupted"
    assert queries.campaign(db(home), "c")["status"] == "interrupted"


def test_a_second_interrupt_during_the_close_stops_at_once(home, monkeypatch, ctrl_c):
    send_during(monkeypatch, ImageSink, "close", [signal.SIGINT, signal.SIGINT])
    with pytest.raises(KeyboardInterrupt):
        run_campaign(parse_config(SMALL), home, campaign_id="c")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_interrupts_end_a_pause_and_nothing_else(ctrl_c):
    said = []
    with interrupts.held(said.append):
        interrupts.pause(0.01)  # nothing held: an ordinary sleep
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        assert interrupts.noted() and len(said) == 1
        t = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            interrupts.pause(30)
        assert time.monotonic() - t < 1
    assert not interrupts.noted()
    interrupts.honour()  # outside a hold: nothing to raise
    # A handler of the caller's own is left alone.
    mine = []
    signal.signal(signal.SIGINT, lambda *a: mine.append(1))
    with interrupts.held(said.append):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        assert not interrupts.noted()
    assert mine == [1]
