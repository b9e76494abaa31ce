"""dashboard/progress.py: a running campaign's progress and time left, from its first
start or from a resume."""

from __future__ import annotations


def test_progress_is_the_generation_budget_done_with_an_upper_bound_eta():
    from datetime import datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 100}}}
    frac, text = campaign_progress(
        c, {"generation": 25, "seeds_done": 1, "n_seeds": 10}, start + timedelta(seconds=60)
    )
    assert frac == 0.25
    assert (
        text == "generation 25 of 100 · 1 of 10 seeds done · 60 s elapsed, at most about 3 min left"
    )
    # Seeds the classifier got wrong are never searched: said so, and not counted as
    # seeds done ("3 of 30 seeds done" at generation 4 puzzled).
    _, text = campaign_progress(
        c, {"generation": 4, "seeds_done": 3, "non_viable": 3, "n_seeds": 30}, start
    )
    assert text.startswith(
        "generation 4 of 100 · 0 of 27 viable seeds done (3 not viable, never searched)"
    )
    p = {"generation": 3, "seeds_done": 5, "n_seeds": 10}
    frac, _ = campaign_progress({**c, "config": {}}, p, start + timedelta(seconds=9))
    assert frac == 0.5  # no generation budget: the share of seeds done
    # Half the seeds done at generation 10 of 100: the bar shows the seeds, but the time
    # left is the generations', as the other half may search to the end.
    frac, text = campaign_progress(c, {**p, "generation": 10}, start + timedelta(seconds=10))
    assert frac == 0.5 and text.endswith("10 s elapsed, at most about 2 min left")


def test_the_time_left_falls_between_saves_and_says_how_old_the_rows_are():
    from datetime import datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 100}}}
    # Generation 25 was saved 10 s into the campaign; the page asks 2, 10 and 20 s later.
    # (elapsed / frac would say 36, 60 and 90 s: rising while nothing new is saved.)
    p = {"generation": 25, "seeds_done": 0, "n_seeds": 10, "saved_s": 10.0}
    texts = [campaign_progress(c, p, start + timedelta(seconds=10 + d))[1] for d in (2, 10, 20)]
    assert [t.split("at most about ")[1] for t in texts] == [
        "28 s left",
        "20 s left · saved 10 s ago",
        "10 s left · saved 20 s ago",
    ]


def test_a_resumed_campaigns_clock_starts_at_the_resume_and_follows_its_replay():
    from datetime import UTC, datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 100}}}
    p = {"generation": 40, "seeds_done": 2, "n_seeds": 10, "saved_s": 30.0}
    resumed = start + timedelta(hours=20)  # crashed at generation 40, resumed next day
    epoch = resumed.replace(tzinfo=UTC).timestamp()
    # 10 s after the resume the replay is at generation 20 of the 40 stored: 80 to go at
    # 2 generations a second.
    _, text = campaign_progress(c, p, resumed + timedelta(seconds=10), replay=(epoch, 20, 40))
    assert text == (
        "generation 40 of 100 · 2 of 10 seeds done · replaying stored generation 20 of 40 · "
        "10 s since the resume, at most about 40 s left"
    )
    # Past the replay, the store's generation is the process's.
    p = {**p, "generation": 50}
    _, text = campaign_progress(c, p, resumed + timedelta(seconds=25), replay=(epoch, 40, 40))
    assert text.endswith("· 25 s since the resume, at most about 25 s left")
    # A report older than the campaign is a deleted namesake's: the first start counts.
    old = (start - timedelta(days=1)).replace(tzinfo=UTC).timestamp()
    _, text = campaign_progress(c, p, start + timedelta(seconds=50), replay=(old, 40, 40))
    assert "50 s elapsed" in text and "resume" not in text


def test_a_seed_never_searched_is_not_done_and_no_time_is_left_once_all_are():
    """Walk of issue 36: "10 of 10 seeds done (1 not viable, never searched) · at most
    about 25 s left", where 9 searches were over and only the close was left."""
    from datetime import datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 250}}}
    p = {"generation": 16, "seeds_done": 10, "non_viable": 1, "n_seeds": 10, "saved_s": 2.0}
    frac, text = campaign_progress(c, {**p, "generation_rows": 80}, start + timedelta(seconds=2))
    assert frac == 1.0
    assert text == (
        "generation 16 of 250 · 9 of 9 viable seeds done (1 not viable, never searched) · "
        "2 s elapsed · writing the results…"
    )
    assert "left" not in text
    _, text = campaign_progress(c, {**p, "seeds_done": 5}, start + timedelta(seconds=2))
    assert "4 of 9 viable seeds done" in text and "left" in text


def test_the_time_left_counts_the_seeds_still_searching():
    """A 200-seed campaign that stops at failure said "at most about 26 min left" at its
    first generations: each generation left was costed as one of the first, when all 190
    viable seeds were searched; 25 searching now cost an eighth of that."""
    from datetime import datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 250}}}
    # 8 generations in 40 s: 190 searched in each of the first, 25 still searching.
    p = {"generation": 8, "seeds_done": 175, "non_viable": 10, "n_seeds": 200}
    now = start + timedelta(seconds=40)
    _, before = campaign_progress(c, p, now)  # rows unknown: every generation as dear
    assert before.endswith("at most about 20 min left")
    _, text = campaign_progress(c, {**p, "generation_rows": 8 * 190}, now)
    # 40 s / 1,520 seed-generations x 25 seeds x 242 generations: about 159 s.
    assert text == (
        "generation 8 of 250 · 165 of 190 viable seeds done (10 not viable, never searched)"
        " · 40 s elapsed, at most about 3 min left"
    )
    # Every seed still searching (stop at failure off): the same as before.
    p = {"generation": 8, "seeds_done": 0, "n_seeds": 10, "generation_rows": 80}
    _, text = campaign_progress(c, p, now)
    assert text.endswith("at most about 20 min left")
