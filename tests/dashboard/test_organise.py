"""Issue 11, organisation: tags and notes on campaigns and studies (store, CLI, pages) and
the Campaigns page's filters kept in the URL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app as cli
from store import Store, StoreError
from store import annotations as an
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 2, "seed": 1, "strategy_params": {"generations": 5}}
    return home, [run_campaign(parse_config({**cfg, "name": n}), home).campaign_id
                  for n in ("first", "second")]  # fmt: skip


def test_tags_and_notes_are_stored_and_checked():
    store = Store()
    assert an.get(store, "campaign", "c") == {"tags": [], "notes": ""}
    an.annotate(store, "campaign", "c", tags=[" paper ", "low", "paper", ""])
    an.annotate(store, "campaign", "c", notes="rerun with seed 2")
    assert an.get(store, "campaign", "c") == {"tags": ["paper", "low"],
                                              "notes": "rerun with seed 2"}  # fmt: skip
    assert an.table(store, "campaign")["tags"].tolist() == [["paper", "low"]]
    with pytest.raises(StoreError, match="without a comma"):
        an.annotate(store, "campaign", "c", tags=["x" * 41])
    with pytest.raises(StoreError, match="expected one of campaign, study"):
        an.get(store, "run", "c")


def test_cli_tags_and_notes_a_campaign(two, monkeypatch):
    home, (cid, _) = two
    run = CliRunner().invoke
    r = run(cli, ["tag", cid, "paper", "mnist-low", "--home", str(home)])
    assert r.exit_code == 0, r.output
    assert f"{cid}: tags paper, mnist-low" in r.output
    r = run(cli, ["tag", cid, "--remove", "mnist-low", "--home", str(home)])
    assert "tags paper" in r.output
    r = run(cli, ["note", cid, "the baseline", "--home", str(home)])
    assert r.exit_code == 0, r.output
    got = an.get(Store(home / "latentfuzz.duckdb"), "campaign", cid)
    assert got == {"tags": ["paper"], "notes": "the baseline"}
    r = run(cli, ["tag", "no-such-id", "x", "--home", str(home)])
    assert r.exit_code != 0 and "no campaign 'no-such-id'" in str(r.exception)
    # A study's id without --study: the hint, not "no campaign".
    from store import labels as ls

    sid = "study-x"
    ls.create_validity_study(Store(home / "latentfuzz.duckdb"), {
        "id": sid, "name": "x", "created_at": datetime.now(), "dataset": "mnist",
        "source": "campaigns", "k": 2, "rule": "icst", "seed": 0, "resamples": 1000,
        "config": {},
    }, pd.DataFrame(columns=["item_id", "kind"]))  # fmt: skip
    r = run(cli, ["tag", sid, "x", "--home", str(home)])
    assert r.exit_code != 0 and "is a label study, not a campaign; add --study" in str(r.exception)


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


def test_campaign_page_edits_tags_and_notes(two, monkeypatch):
    home, (first, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=first)
    at.text_input(key=f"tags-{first}").input("icst, vae, a_b*c*, `tick`")
    at.text_area(key=f"notes-{first}").input("as in Table III")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception, at.exception
    got = an.get(Store(home / "latentfuzz.duckdb"), "campaign", first)
    assert got == {"tags": ["icst", "vae", "a_b*c*", "`tick`"], "notes": "as in Table III"}
    # Escaped as text, not in code spans (where the escapes showed: "a\\_b\\*c\\*").
    line = "**Tags:** icst · vae · a\\_b\\*c\\* · \\`tick\\`"
    assert any(m.value == line for m in at.markdown), [m.value for m in at.markdown]


def test_compare_selection_is_in_the_url(two, monkeypatch):
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("compare.py", id=[first, second])
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [first, second]
    at.multiselect[0].set_value([second, first]).run()
    assert list(at.query_params["id"]) == [second, first]


def test_compare_says_which_linked_campaigns_it_does_not_hold(two, monkeypatch):
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("compare.py", id=[first, "gone", second])
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [first, second]
    assert [w.value for w in at.warning] == [
        "The link names 1 campaign this store does not hold, left out: gone. Deleted, or "
        "from another home?"
    ]
    at.run()  # still said on the next run, as long as the selection is the link's
    assert len(at.warning) == 1
    at.multiselect[0].set_value([second, first]).run()  # chosen since: no longer said
    assert not at.warning


def test_campaign_tab_is_in_the_url_and_only_it_renders(two, monkeypatch):
    home, (first, _) = two
    open_page = page_opener(home, monkeypatch)
    at = open_page("campaign.py", id=first)  # the gallery by default
    assert not at.exception, at.exception
    assert not [s for s in at.selectbox if s.label == "Seed"]  # closed tabs cost nothing
    at = open_page("campaign.py", id=first, tab="Per-seed table")
    assert not at.exception, at.exception
    assert not [s for s in at.selectbox if s.label == "Seed"]
    assert any("seed_idx" in d.value.columns for d in at.dataframe)
    at = open_page("campaign.py", id=first, tab="Seed detail")
    assert [s for s in at.selectbox if s.label == "Seed"]


def test_a_link_to_a_seed_opens_its_tab(two, monkeypatch):
    home, (first, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=first, seed="0")
    assert not at.exception, at.exception
    assert [s for s in at.selectbox if s.label == "Seed"]
