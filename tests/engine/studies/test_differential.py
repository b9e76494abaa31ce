"""`latentfuzz diff-study` (engine/studies/differential.py): its pairs, and Ctrl-C on the
grid runner."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_diff_study_pairs_must_be_pairs():
    from engine.cli.differential import parse_pairs
    from engine.core.errors import LatentfuzzError

    assert parse_pairs("a:b, c:d") == [["a", "b"], ["c", "d"]]
    with pytest.raises(LatentfuzzError, match="'convnet' is not a classifier pair"):
        parse_pairs("convnet")


def interrupted_study(monkeypatch, owner, name: str, nth: int, repetitions: int) -> str:
    """Run a tiny diff-study with SIGINT sent at the `nth` call of owner.name (Ctrl-C raises
    KeyboardInterrupt, as in the CLI); the StudyStopped message it ends with."""
    import os
    import signal

    from engine.studies.differential import StudyStopped, run_diff_study

    real, calls = getattr(owner, name), []

    def wrapper(*a, **k):
        calls.append(1)
        if len(calls) == nth:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapper)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(StudyStopped) as e:
            run_diff_study(
                [["mnist-convnet", "mnist-lenet5"]],
                generator="vae",
                seeds=1,
                evaluations=40,
                population=8,
                repetitions=repetitions,
                name="s",
                home=Path(os.environ["LATENTFUZZ_HOME"]),
            )
    finally:
        signal.signal(signal.SIGINT, old)
    assert len(calls) == nth  # nothing ran after it
    return str(e.value)


def test_ctrl_c_stops_a_diff_study_and_says_how_far_it_got(home, monkeypatch):
    # Before, the interrupted campaign was counted and the study ran its other campaigns.
    from engine.campaign import loop as search_loop

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    said = interrupted_study(monkeypatch, search_loop.Campaign, "run", 2, repetitions=2)
    assert "stopped by Ctrl-C after 1 of its 4 campaigns" in said


def test_ctrl_c_while_a_diff_study_checks_its_campaigns_says_so_too(home, monkeypatch):
    from engine.studies import grid  # the grid runner checks every cell before any runs

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    said = interrupted_study(monkeypatch, grid, "resolve", 1, repetitions=1)
    assert "after 0 of its 2 campaigns" in said
