"""AppTest of the Campaigns page (pages/campaigns.py): search, filters and sort kept in the
URL, ticked runs opened in Compare, its columns, and both classifiers of a differential
campaign named."""

from __future__ import annotations

import json

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
    assert shown["tags"].tolist() == ["ablation"]
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


def widget(at, label: str):
    return next(w for w in [*at.selectbox, *at.multiselect] if w.label == label)


def test_sort_and_filters_round_trip_through_the_url(two, monkeypatch):
    """A header click sorted the grid only: a refresh, a bookmark or a shared link lost it."""
    home, _ = two
    opened = page_opener(home, monkeypatch)
    at = opened("campaigns.py", sort="name", order="desc", strategy="ga", status="finished")
    assert not at.exception, at.exception
    assert widget(at, "Sort by").value == "name" and widget(at, "Order").value == "desc"
    assert widget(at, "Strategy").value == ["ga"] and widget(at, "Status").value == ["finished"]
    assert at.dataframe[0].value["name"].tolist() == ["second", "first"]
    widget(at, "Order").set_value("asc").run()
    assert at.query_params["order"] in ("asc", ["asc"])
    assert at.dataframe[0].value["name"].tolist() == ["first", "second"]
    # The URL the page wrote opens the same view in a new session (a bookmark).
    link = {k: at.query_params[k] for k in ("sort", "order", "strategy", "status")}
    again = opened("campaigns.py", **link)
    assert widget(again, "Sort by").value == "name" and widget(again, "Order").value == "asc"
    assert again.dataframe[0].value["name"].tolist() == ["first", "second"]
    # A sort the user picks starts in its own direction: fewest iterations first.
    widget(again, "Sort by").set_value("iterations").run()
    assert widget(again, "Order").value == "asc" and again.query_params["sort"] in (
        "iterations",
        ["iterations"],
    )


def test_the_columns_that_tell_runs_apart_come_first_and_empty_cells_are_blank(two, monkeypatch):
    home, _ = two
    at = page_opener(home, monkeypatch)("campaigns.py")
    assert not at.exception, at.exception
    table = at.dataframe[0]
    shown = [c for c in table.value.columns if c != "id"]
    assert shown[:4] == ["open", "name", "misclassified_pct", "iterations_icst"]
    assert table.proto.placeholder == ""  # a missing figure is blank, not "None"
    assert "–" not in table.value["preset"].tolist()


def ticks(at, rows: list[int]):
    """Tick `rows` of the Campaigns table, as a click on their boxes does."""
    key = f"runs:{at.session_state['runs:version']}"
    at.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    return at.run()


def test_ticking_two_runs_opens_compare_with_those_two(two, monkeypatch):
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("campaigns.py", sort="name", order="asc")
    button = next(b for b in at.button if b.label.startswith("Compare"))
    assert button.disabled  # one or none ticked: nothing to compare
    ticks(at, [0, 1])
    button = next(b for b in at.button if b.label.startswith("Compare"))
    assert button.label == "Compare 2 ticked" and not button.disabled
    button.click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Compare"
    assert sorted(at.query_params["id"]) == sorted([first, second])
    assert sorted(at.multiselect[0].value) == sorted([first, second])


def test_ticks_stay_with_their_campaigns_when_the_rows_move(two, monkeypatch):
    """The grid's selection is row positions: another sort (or a campaign that started
    meanwhile) moved the rows, and the ticks fell on other campaigns."""
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("campaigns.py", sort="name", order="asc")
    ticks(at, [0])  # "first"
    widget(at, "Order").set_value("desc").run()  # "first" is now the second row
    assert at.dataframe[0].value["name"].tolist() == ["second", "first"]
    assert at.session_state["runs:ticked"] == [first]
    at.run()  # the table drawn afresh ticks "first" on its new row, and keeps it
    assert at.session_state["runs:ticked"] == [first]
    drawn = json.loads(at.dataframe[0].proto.selection_default)
    assert drawn["selection"]["rows"] == [1]  # the box on "first"'s new row is ticked
    button = next(b for b in at.button if b.label.startswith("Compare"))
    assert button.label == "Compare 1 ticked" and button.disabled  # one, on its new row


def test_delete_names_what_it_deletes_then_says_what_went(tmp_path, monkeypatch):
    """Delete jumped to another campaign without a word: nothing said what went."""
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import campaigns as sc

    home = tmp_path / "home"
    cfg = {"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}}
    kept = run_campaign(parse_config({**cfg, "name": "kept"}), home).campaign_id
    cid = run_campaign(parse_config({**cfg, "name": "doomed"}), home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    rows = sc.footprint(store, cid)["rows"]
    files = [f for f in (home / "campaigns" / cid).rglob("*") if f.is_file()]
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.label == "Delete"]  # not before it is asked
    next(b for b in at.button if b.label == "Delete this campaign…").click().run()
    said = " ".join(w.value for w in at.warning)
    assert f"Delete campaign **doomed \\({cid}\\)**?" in said.replace("\\-", "-"), said
    assert f"its 2 seeds ({rows:,} rows of the store)" in said
    assert f"its folder of {len(files)} files" in said and "cannot be undone" in said
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert sc.campaign(store, cid) is not None and not at.warning  # Cancel keeps it
    next(b for b in at.button if b.label == "Delete this campaign…").click().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert not at.exception, at.exception
    assert sc.campaign(store, cid) is None and not (home / "campaigns" / cid).exists()
    # The Campaigns page, saying what went, with the campaign kept.
    assert at.title[0].value == "Campaigns"
    message = at.success[0].value
    assert message.startswith(f"Deleted campaign doomed ({cid}): {rows:,} rows of the store")
    assert f"and {len(files)} files (" in message and message.endswith(" removed.")
    assert at.dataframe[0].value["id"].tolist() == [kept]
    at.run()  # said once
    assert not at.success


def test_delete_of_a_campaign_a_study_shows_is_refused_before_it_is_confirmed(study, monkeypatch):
    """The confirmation offered Delete, and only the click said the campaign was kept
    (a label study shows its images), leaving Delete on offer."""
    from store import campaigns as sc

    home, cid, sid = study
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    next(b for b in at.button if b.label == "Delete this campaign…").click().run()
    assert not at.exception, at.exception
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert f"cannot be deleted: validity study {sid} shows its images" in said, said
    assert not [b for b in at.button if b.label == "Delete"]  # nothing to confirm
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert not at.warning and sc.campaign(Store(home / "latentfuzz.duckdb"), cid) is not None


def test_saving_tags_draws_them_without_running_the_page_again(two, monkeypatch):
    """Save reran the whole app after writing (st.rerun): the Campaign page's charts,
    gallery and metrics again, 2.2 s for a line of tags. Counted, not timed: no rerun."""
    import streamlit as st

    home, (first, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=first)
    reruns = []
    real = st.rerun
    monkeypatch.setattr(st, "rerun", lambda *a, **k: (reruns.append(k), real(*a, **k))[1])
    at.text_input(key=f"tags-{first}").input("quick, saved")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception, at.exception
    assert reruns == []
    assert "**Tags:** quick · saved" in [m.value for m in at.markdown]
    assert an.get(Store(home / "latentfuzz.duckdb"), "campaign", first)["tags"] == [
        "quick",
        "saved",
    ]
    # A refused save says why in the form, and keeps what was stored.
    at.text_input(key=f"tags-{first}").input("x" * 500)
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception and at.error, at.error
    assert an.get(Store(home / "latentfuzz.duckdb"), "campaign", first)["tags"] == [
        "quick",
        "saved",
    ]
