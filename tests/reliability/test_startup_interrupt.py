"""Ctrl-C in a campaign's start-up (store/interrupts.py): deferred to checkpoints where
nothing is half done, so it never ends in a traceback (raised inside an import or a DuckDB
query it did), and never leaves a campaign row `running` while the command says the search
had not begun: before the row it stops with no row, after it the campaign ends
`interrupted`."""

from __future__ import annotations

import os
import signal
import time

import pytest

from engine.campaign import batching, runner
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import campaigns as sc
from store import interrupts
from tests.helpers import db

SMALL = {
    "seeds": 2,
    "seed": 3,
    "strategy_params": {"generations": 4, "population": 6, "best_left": 2},
}


@pytest.fixture
def deferred():
    """The CLI's start-up: handlers that raise KeyboardInterrupt, deferred."""
    old = {s: signal.signal(s, signal.default_int_handler) for s in interrupts.SIGNALS}
    with interrupts.start_up_deferred():
        yield
    for s, h in old.items():
        signal.signal(s, h)


def before(monkeypatch, owner, name: str, sigs: int = 1) -> None:
    """Send SIGINT `sigs` times to this process when owner.name is called, then run it."""
    real = getattr(owner, name)

    def wrapper(*a, **k):
        for _ in range(sigs):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.02)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapper)


def test_a_ctrl_c_while_the_models_load_stops_before_the_row(home, monkeypatch, deferred):
    before(monkeypatch, runner, "resolve")
    with pytest.raises(KeyboardInterrupt):
        run_campaign(parse_config(SMALL), home, campaign_id="c")
    assert sc.campaign(db(home), "c") is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_while_the_row_is_written_ends_the_campaign_interrupted(
    home, monkeypatch, deferred
):
    # After the last checkpoint: the row is written whole and the search stops at once.
    before(monkeypatch, runner, "create_campaign")
    res = run_campaign(parse_config(SMALL), home, campaign_id="c")
    assert res.status == "interrupted"
    assert sc.campaign(db(home), "c")["status"] == "interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_in_the_start_up_raises_at_once(deferred):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.02)  # noted, deferred
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(60)
    assert time.monotonic() - t < 30  # the sleep was cut short; generous under load
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_batch_sweep_stops_at_a_deferred_ctrl_c(deferred):
    calls = []

    def fn(n: int) -> None:
        calls.append(n)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.02)

    with pytest.raises(KeyboardInterrupt):
        batching.sweep(fn, 1 << 30, budget_s=60, candidates=(16, 32, 64, 128, 256), reps=2)
    assert len(calls) <= 5  # stopped at the next size, not at the end of a 60 s budget


# The CLI's start-up, end to end (a process, at several moments, under load, SIGINT
# inherited ignored): tests/reliability/test_signals_under_load.py.


def test_a_ctrl_c_while_a_resume_loads_its_models_leaves_the_campaign_as_it_was(
    home, monkeypatch, deferred
):
    # It was deferred to the search: the row went to running and closed with 0 evaluations.
    from engine.campaign import loop as search_loop
    from engine.campaign import resume

    calls = []
    real = search_loop.Campaign.evaluate_generation

    def stop_in_generation_2(self, g, *a, **k):
        calls.append(g)
        if g == 2:
            raise KeyboardInterrupt
        return real(self, g, *a, **k)

    monkeypatch.setattr(search_loop.Campaign, "evaluate_generation", stop_in_generation_2)
    assert run_campaign(parse_config(SMALL), home, campaign_id="c").status == "interrupted"
    before_row = sc.campaign(db(home), "c")
    monkeypatch.setattr(search_loop.Campaign, "evaluate_generation", real)
    before(monkeypatch, resume, "resolve")
    interrupts.defer_start_up()  # the first campaign's search ended the fixture's
    with pytest.raises(KeyboardInterrupt):
        resume.resume_campaign(home, "c")
    row = sc.campaign(db(home), "c")
    assert row["status"] == "interrupted"
    assert (row["evaluations"], row["wall_seconds"]) == (
        before_row["evaluations"],
        before_row["wall_seconds"],
    )
