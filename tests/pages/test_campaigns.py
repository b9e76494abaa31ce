"""AppTest of the Campaigns page (pages/campaigns.py): search, filters kept in the URL, and
both classifiers of a differential campaign named."""

from __future__ import annotations

import pytest

from store import Store
from store import annotations as an
from tests.helpers import page_opener


@pytest.mark.parametrize("text", ["(", "[", "paren (test) [x]", "*"])
def test_campaign_search_takes_any_text(stopped_app, text):
    at = stopped_app("campaigns.py")
    at.text_input[0].set_value(text).run()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    assert len(shown) == (1 if text in "paren (test) [x]" else 0)


def test_campaigns_page_filters_by_tag_from_the_url(two, monkeypatch):
    home, (first, second) = two
    an.annotate(Store(home / "latentfuzz.duckdb"), "campaign", second, tags=["ablation"])
    at = page_opener(home, monkeypatch)("campaigns.py", tag="ablation")
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    assert shown["name"].tolist() == ["second"]
    assert shown["tags"].tolist() == [["ablation"]]
    status = next(m for m in at.multiselect if m.label == "Status")
    status.set_value(["finished"]).run()
    assert at.query_params["status"] in ("finished", ["finished"])


def test_campaigns_page_name_filter_is_in_the_url(two, monkeypatch):
    home, _ = two
    at = page_opener(home, monkeypatch)("campaigns.py", q="sec")
    assert not at.exception, at.exception
    box = next(t for t in at.text_input if t.label == "Name or id contains")
    assert box.value == "sec" and at.dataframe[0].value["name"].tolist() == ["second"]
    box.set_value("fir").run()
    assert at.query_params["q"] in ("fir", ["fir"])
    assert at.dataframe[0].value["name"].tolist() == ["first"]
    next(t for t in at.text_input if t.label == "Name or id contains").set_value("").run()
    assert "q" not in at.query_params and len(at.dataframe[0].value) == 2


def test_a_links_filter_values_that_match_nothing_are_said(two, monkeypatch):
    home, _ = two
    at = page_opener(home, monkeypatch)("campaigns.py", status=["bogus", "finished"])
    assert not at.exception, at.exception
    said = [c.value for c in at.caption if c.value.startswith("⚠")]
    assert said == [
        "⚠ The link gives Status = bogus, which matches nothing here; showing finished."
    ]
    assert len(at.dataframe[0].value) == 2


def test_lists_name_both_classifiers_of_a_differential_campaign(diffed_app, diffed):
    """The Campaigns page, `campaigns` and `show` said only A ("mnist-convnet"), so a
    differential campaign read as a plain one of A; and "misclassified 2" counted what
    were disagreements."""
    import subprocess

    from tests.helpers import CLI

    home, cid = diffed
    at = diffed_app("campaigns.py")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    mine = table["open"].str.endswith(cid)
    assert list(table.loc[mine, "classifier"]) == ["mnist-convnet vs mnist-lenet5"]
    env = {"LATENTFUZZ_HOME": str(home), "PATH": "/usr/bin:/bin"}
    for args in (["campaigns"], ["show", cid]):
        out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=True)
        assert "mnist-convnet vs mnist-lenet5" in out.stdout, out.stdout
        # Written to a pipe: as wide as its content, nothing cut to 80 columns with "…".
        assert "…" not in out.stdout and max(map(len, out.stdout.splitlines())) > 80
    # Its failing seeds are inputs A and B label differently, not A's misclassifications.
    shown = " ".join(out.stdout.split())
    assert "A and B disagree" in shown and "misclassified" not in shown, shown
    assert "final pred (A / B)" in shown  # `show`'s seeds give both answers
    page = diffed_app("campaign.py", id=cid)
    assert "A and B disagree" in [m.label for m in page.metric]
