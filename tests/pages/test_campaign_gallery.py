"""AppTest of the Campaign page's gallery: it counts every seed by status, shows non-viable
seeds on request, filters by status and class, pages through 12 seeds at a time, and
keeps its filters and the seed shown in the URL (issue 11: "non-viable seeds vanish",
"a 300-seed gallery is one 9,675 px page")."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 40, "seed": 2, "strategy_params": {"generations": 15}})
    return home, run_campaign(cfg, home).campaign_id


def url(at, key: str) -> list[str]:
    v = at.query_params[key]
    return [v] if isinstance(v, str) else list(v)


def gallery_captions(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("seed ")]


def test_gallery_counts_filters_pages_and_keeps_its_state_in_the_url(campaign, monkeypatch):
    home, cid = campaign
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    counts = seeds["status"].value_counts()
    assert counts.get("non-viable", 0) >= 1, counts  # the fixture needs one of each
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    count_line = next(c.value for c in at.caption if "non-viable" in c.value)
    for status, n in counts.items():
        assert f"{n} {status}" in count_line
    searched = int((seeds["status"] != "non-viable").sum())
    assert len(gallery_captions(at)) == min(12, searched)  # one page, searched seeds
    pager = next(s for s in at.selectbox if s.label.startswith("Page"))
    assert pager.options == [str(p) for p in range(1, (searched - 1) // 12 + 2)]
    pager.set_value(2).run()
    assert url(at, "gallery_page") == ["2"]

    show = next(m for m in at.multiselect if m.label == "Show")
    show.set_value(["non-viable"]).run()
    captions = gallery_captions(at)
    assert len(captions) == counts["non-viable"]
    assert all("non-viable, not searched" in c for c in captions)
    assert url(at, "gallery_status") == ["non-viable"]

    # A shared link opens the same view: misclassified 7s only.
    at = page_opener(home, monkeypatch)(
        "campaign.py", id=cid, gallery_status="misclassified", gallery_class="7"
    )
    want = seeds[(seeds["status"] == "misclassified") & (seeds["seed_label"] == 7)]
    captions = gallery_captions(at)
    assert len(captions) == min(12, len(want))
    assert all("expected **7**" in c and "(misclassified)" in c for c in captions)


def test_a_gallery_filter_whose_statuses_all_went_falls_back_to_the_default(tmp_path, monkeypatch):
    """A crashed campaign's gallery showed its `interrupted` seeds; resumed in place and
    finished, it has none, and the remembered filter showed nothing at all."""
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 6, "seed": 2, "strategy_params": {"generations": 15}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    with store.write() as con:
        con.execute(
            "UPDATE seeds SET status = 'interrupted', iterations = NULL "
            "WHERE campaign_id = ? AND viable",
            [cid],
        )
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    show = next(m for m in at.multiselect if m.label == "Show")
    assert show.value == ["interrupted"]
    assert not [n for n in at.number_input if n.label == "At most iterations"]  # none known
    with store.write() as con:  # as the resumed run leaves it
        con.execute(
            "UPDATE seeds SET status = 'survived', iterations = 15 "
            "WHERE campaign_id = ? AND viable",
            [cid],
        )
    at.run()
    assert not at.exception, at.exception
    assert next(m for m in at.multiselect if m.label == "Show").value == ["survived"]
    assert gallery_captions(at)
    # A link (a bookmark of the crashed campaign's view) whose statuses are all gone:
    # the default too, said in a line (it showed no seed while saying "showing all").
    at = page_opener(home, monkeypatch)("campaign.py", id=cid, gallery_status="interrupted")
    assert next(m for m in at.multiselect if m.label == "Show").value == ["survived"]
    assert gallery_captions(at)
    assert [c.value for c in at.caption if c.value.startswith("⚠")] == [
        "⚠ The link gives Show = interrupted, which matches nothing here; showing survived."
    ]


def test_the_seed_detail_is_in_the_url(campaign, monkeypatch):
    home, cid = campaign
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    third = int(seeds[seeds["viable"]]["seed_idx"].iloc[2])
    at = page_opener(home, monkeypatch)("campaign.py", id=cid, seed=str(third))
    assert not at.exception, at.exception
    assert next(s for s in at.selectbox if s.label == "Seed").value == third
    assert not [c for c in at.caption if c.value.startswith("⚠")]
    # A seed the campaign does not have is said, not silently replaced by the first.
    at = page_opener(home, monkeypatch)("campaign.py", id=cid, seed="999")
    first = next(s for s in at.selectbox if s.label == "Seed").value
    # (in a warning, where it is seen: tests/pages/test_url_links.py has its words)
    assert any(
        w.value.startswith("The link asks for seed 999") and w.value.endswith(f"seed {first}.")
        for w in at.warning
    ), [w.value for w in at.warning]


def test_every_gallery_filter_and_the_sort_round_trip_through_the_url(campaign, monkeypatch):
    """The class filter was in the URL, the iterations filter was not: a shared link lost
    it. Now every filter and the sort are, and a link opens the same view."""
    home, cid = campaign
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    searched = seeds[seeds["status"] != "non-viable"]
    top = int(searched["iterations"].max())
    cut = int(searched["iterations"].median())
    assert 0 < cut < top
    open_page = page_opener(home, monkeypatch)
    at = open_page("campaign.py", id=cid)
    next(m for m in at.multiselect if m.label == "Expected class").set_value(
        sorted({str(v) for v in searched["seed_label"]})[:5]
    ).run()
    at.number_input(key="gallery_iterations").set_value(cut).run()
    at.selectbox(key="url:gallery_sort").set_value("-iterations").run()
    assert not at.exception, at.exception
    assert url(at, "gallery_iterations") == [str(cut)]
    assert url(at, "gallery_sort") == ["-iterations"]
    classes = url(at, "gallery_class")
    want = searched[
        searched["seed_label"].astype(str).isin(classes) & (searched["iterations"] <= cut)
    ].sort_values(["iterations", "seed_idx"], ascending=[False, True])
    expected = [f"seed {s}" for s in want["seed_idx"].iloc[:12]]
    assert [c.split(":")[0] for c in gallery_captions(at)] == expected
    # The link opens the same view in a new session.
    link = {k: at.query_params[k] for k in at.query_params}
    again = open_page("campaign.py", **link)
    assert not again.exception, again.exception
    assert again.number_input(key="gallery_iterations").value == cut
    assert again.selectbox(key="url:gallery_sort").value == "-iterations"
    assert next(m for m in again.multiselect if m.label == "Expected class").value == classes
    assert [c.split(":")[0] for c in gallery_captions(again)] == expected
    # Predicted class too; at the campaign's maximum the iterations box filters nothing
    # and leaves the URL.
    pred = str(int(want["final_pred"].iloc[0]))
    next(m for m in again.multiselect if m.label == "Predicted class").set_value([pred]).run()
    assert url(again, "gallery_pred") == [pred]
    assert all(f"predicted **{pred}**" in c for c in gallery_captions(again))
    again.number_input(key="gallery_iterations").set_value(top).run()
    assert "gallery_iterations" not in again.query_params
