"""A link whose value matches nothing here says so in one line: what it gave, why it
cannot be shown, what is shown instead (issue 36, found by a new user's walk:
`?seed=999` and `?seed=abc` opened seed 0, `/studies?study=nope` another study, with no
word where anyone looked)."""

from __future__ import annotations

import pandas as pd

from dashboard.timeline import unknown_seed
from tests.helpers import page_opener


def said(at) -> list[str]:
    return [w.value.replace("\\", "") for w in at.warning]


def test_a_link_to_a_seed_the_campaign_does_not_have_says_which_seeds_it_has(app, seeded):
    at = app("campaign.py", id=seeded[1], seed="999")
    assert not at.exception, at.exception
    tab = next(t for t in at.tabs if t.label == "Seed detail")
    (warning,) = tab.warning  # in the tab it concerns, beside the seed picker
    assert warning.value.replace("\\", "") == (
        "The link asks for seed 999, but this campaign's seeds are 0 to 3; showing seed 0."
    )
    assert at.selectbox(key="url:seed").value == 0
    assert not [c for c in at.caption if "The link gives" in c.value]  # said once


def test_a_link_whose_seed_is_no_number_says_so(app, seeded):
    at = app("campaign.py", id=seeded[1], seed="abc")
    assert not at.exception, at.exception
    assert "The link asks for seed abc, which is not a seed number; showing seed 0." in said(at)


def test_a_link_to_a_seed_that_was_not_searched_says_why():
    seeds = pd.DataFrame({"seed_idx": [0, 1, 2], "viable": [True, False, True]})
    assert unknown_seed("1", seeds, 0) == (
        "The link asks for seed 1, which is not viable (the classifier mislabels its image "
        "already), so it was not searched; showing seed 0."
    )
    # The link is someone's text: no Markdown of its own, cut short.
    line = unknown_seed("[x](http://evil)" + "a" * 100, seeds, 2)
    assert "](http://" not in line and len(line) < 160


def test_a_link_to_a_study_this_store_does_not_hold_says_so_at_the_top(study, monkeypatch):
    home, _, sid = study
    at = page_opener(home, monkeypatch)("studies.py", study="nope")
    assert not at.exception, at.exception
    stats = next(t for t in at.tabs if t.label == "Statistics")
    # First in the tab shown: below it, nobody saw it.
    first = stats.children[0]
    assert first.type == "warning", first
    assert first.value.replace("\\", "") == (
        "The link names study nope, which this store does not hold (deleted, or from another "
        f"home?); showing {sid}."
    )
