"""AppTest of the Campaign page (pages/campaign.py): status, charts, tabs and links, names
as text, tags and notes, the Manage panel, the metrics and class-escape panels, and a
campaign whose images or dataset are gone."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import engine.api
from dashboard.palette import OKABE_ITO
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io.export import zip_bytes
from store import Store
from store import annotations as an
from store import campaigns as sc
from tests.helpers import page_opener, record_deferred
from tests.pages.charts import specs

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def test_campaign_page_shows_status_chart_gallery_and_table(app, seeded):
    home, cid = seeded
    at = app("campaign.py", id=cid)
    assert not at.exception
    assert at.title[0].value.startswith("Campaign")
    labels = [m.label for m in at.metric]
    assert labels == ["viable seeds", "misclassified", "iterations (ICST)", "iterations to failure"]
    assert at.metric[0].value.endswith("of 4")
    assert at.radio(key="x_axis").options == ["generation", "evaluations", "seconds"]
    assert len(at.get("vega_lite_chart")) == 1  # convergence (the gap histogram: Metrics)
    assert any("expected" in c.value for c in at.caption)  # gallery captions
    assert len(at.get("download_button")) == 2
    # A card's seed and result are one image (two in nested columns were most of the page's
    # elements): one image per card, a seed's own on the left.
    cards = [c.value for c in at.caption if c.value.startswith("seed ") and "expected" in c.value]
    pairs = [i.proto.imgs[0].caption for i in at.image]
    assert len(pairs) == len(cards) > 0
    assert set(pairs) <= {"seed · result", "seed"} and "seed · result" in pairs


def test_a_finished_campaigns_downloads_are_made_on_the_click(seeded, monkeypatch):
    # Both were made at the page's first run (the zip reads and deflates every image).
    home, cid = seeded
    made = record_deferred(monkeypatch)
    zips = []
    monkeypatch.setattr(
        engine.api, "zip_bytes", lambda *a, **k: zips.append(1) or zip_bytes(*a, **k), raising=False
    )
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    buttons = at.get("download_button")
    assert [b.proto.label for b in buttons] == ["Download CSV", "Download zip"]
    assert all(b.proto.deferred_file_id for b in buttons)
    assert zips == []  # none made by the page run
    csv = pd.read_csv(io.BytesIO(made[f"{cid}-seeds.csv"]()))
    stored = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    assert sorted(csv["seed_idx"]) == sorted(stored["seed_idx"])
    z = zipfile.ZipFile(io.BytesIO(made[f"{cid}.zip"]()))
    assert zips == [1]
    table = pd.read_csv(z.open("seeds.csv"))
    searched = table["result_image"].dropna()
    assert len(searched) == stored["result_image"].notna().sum() > 0
    assert set(searched) <= set(z.namelist())


@pytest.mark.parametrize("axis", ["evaluations", "seconds"])
def test_convergence_x_axis_switches(app, seeded, axis):
    _, cid = seeded
    at = app("campaign.py", id=cid)
    at.radio(key="x_axis").set_value(axis).run()
    assert not at.exception
    spec = at.get("vega_lite_chart")[0].proto.spec
    field = {"evaluations": "evaluations", "seconds": "elapsed_s"}[axis]
    assert f'"field":"{field}"' in spec.replace(" ", "")


def test_campaign_page_with_an_empty_id_offers_the_campaigns(app, seeded):
    # It said "No campaign with id ." and waited for one.
    at = app("campaign.py", id="")
    assert not at.exception and not at.warning
    assert at.selectbox[0].label == "Campaign"


def test_a_campaign_whose_images_are_gone_still_shows_its_page(home: Path, monkeypatch):
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    for png in (home / "campaigns" / cid).rglob("seed.png"):
        png.unlink()
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert any(w.value.startswith("No zip:") and "doctor" in w.value for w in at.warning)
    assert len(at.get("download_button")) == 1  # the CSV still


def test_the_page_of_an_interrupted_campaign_opens(stopped_app, stopped):
    _, cid = stopped
    at = stopped_app("campaign.py", id=cid, tab="Seed detail")
    assert not at.exception, at.exception
    assert any(
        "final prediction **–**, – iterations, status interrupted" in m.value for m in at.markdown
    )
    assert len(at.get("download_button")) == 2  # results and downloads stay reachable


def test_names_are_text_on_the_campaign_page(stopped, monkeypatch):
    home, _ = stopped
    name = "a|b *c* <script>alert(1)</script> $x$"
    cfg = {"seeds": 2, "seed": 1, "name": name, "strategy_params": {"generations": 2}}
    cid = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    title = at.title[0].value
    assert "<script>" not in title and "&lt;script&gt;" in title
    for raw in ("|", "*", "$"):
        assert f"\\{raw}" in title and title.count(raw) == title.count(f"\\{raw}")


def test_a_link_naming_two_campaigns_says_which_it_shows(stopped, monkeypatch):
    home, cid = stopped
    cfg = {"seeds": 2, "seed": 2, "name": "second", "strategy_params": {"generations": 2}}
    other = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("campaign.py", id=[cid, other])
    assert not at.exception, at.exception
    assert cid in at.caption[0].value  # the first, as the warning says
    assert any("names 2 campaigns" in w.value and "Compare" in w.value for w in at.warning)


def test_a_stopped_campaign_says_its_unfinished_seeds_are_not_counted(stopped_app, stopped):
    """'misclassified 0' above a chart of seeds far past the failure line read as "found
    nothing": seeds stopped mid-search (with stop_at_failure off, after failing) have no
    outcome, and the page and the CLI now say so."""
    from engine.cli.common import status_line
    from store import campaigns as sc

    home, cid = stopped
    s = sc.summary(Store(home / "latentfuzz.duckdb"), cid)
    n = s["interrupted"]
    assert n == s["viable"] > 0
    seeds = f"{n} viable seed{'s' if n != 1 else ''}"
    line = status_line(s)
    assert f"; {seeds} stopped before finishing: not counted, nor any failure" in line
    assert f"(`latentfuzz resume {cid}` finishes them)" in line
    at = stopped_app("campaign.py", id=cid)
    assert any(
        c.value.startswith(f"{seeds} stopped before finishing")
        and c.value.endswith("Resume finishes them.")
        for c in at.caption
    )
    # A failed campaign's seeds were stopped too, and resume refuses it: no such advice.
    failed = {**s, "status": "failed"}
    assert "nor any failure" in status_line(failed) and "resume" not in status_line(failed)


def test_top2_chart_names_the_class_of_each_line(two_ab, monkeypatch):
    home, (cid, _) = two_ab
    at = page_opener(home, monkeypatch)("campaign.py", id=cid, tab="Seed detail")
    assert not at.exception, at.exception
    top2 = [s for s in specs(at) if s.get("encoding", {}).get("color", {}).get("title") == "class"]
    assert len(top2) == 1
    assert top2[0]["encoding"]["color"]["scale"]["range"] == OKABE_ITO


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


def test_campaign_tab_is_in_the_url_and_only_it_renders(two, monkeypatch):
    home, (first, _) = two
    open_page = page_opener(home, monkeypatch)
    at = open_page("campaign.py", id=first)  # the gallery by default
    assert not at.exception, at.exception
    assert not [s for s in at.selectbox if s.label == "Seed"]  # closed tabs cost nothing
    at = open_page("campaign.py", id=first, tab="Per-seed table")
    assert not at.exception, at.exception
    assert not [s for s in at.selectbox if s.label == "Seed"]
    assert any(
        "seed" in d.value.columns and "seed_idx" not in d.value.columns for d in at.dataframe
    )
    at = open_page("campaign.py", id=first, tab="Seed detail")
    assert [s for s in at.selectbox if s.label == "Seed"]


def test_a_link_to_a_seed_opens_its_tab(two, monkeypatch):
    home, (first, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=first, seed="0")
    assert not at.exception, at.exception
    assert [s for s in at.selectbox if s.label == "Seed"]


def test_rename_then_delete_from_the_campaign_page(tmp_path: Path, monkeypatch):
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/campaign.py")
    at.query_params["id"] = cid
    at.run()
    store = Store(home / "latentfuzz.duckdb")
    for bad, said in (("   ", "not only spaces"), ("x" * 300, "not 300 characters")):
        at.text_input(key="rename").input(bad).run()
        next(b for b in at.button if b.label == "Rename").click().run()
        assert not at.exception, at.exception  # was a StoreError traceback
        assert at.error[0].value.startswith("Not renamed: a campaign name needs 1 to 200")
        assert said in at.error[0].value
        assert sc.campaign(store, cid)["name"] != bad.strip()
    at.text_input(key="rename").input("renamed here").run()
    next(b for b in at.button if b.label == "Rename").click().run()
    assert sc.campaign(store, cid)["name"] == "renamed here"
    # (The confirmation and the message: tests/pages/test_campaigns.py.)
    next(b for b in at.button if b.label == "Delete this campaign…").click().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert sc.campaign(store, cid) is None
    assert not (home / "campaigns" / cid).exists()


def test_campaign_page_shows_metrics_and_the_gap_histogram(strategy_app, strategy_study):
    _, (ga, sinvad) = strategy_study
    at = strategy_app("campaign.py", id=sinvad)
    assert not at.exception
    # A tab of their own: the gallery opens under the chart, no metric built or sent.
    assert [t.label for t in at.tabs] == ["Gallery", "Metrics", "Seed detail", "Per-seed table"]
    assert not any("error rate" in m.value for m in at.markdown)
    assert len(at.get("vega_lite_chart")) == 1  # convergence
    at = strategy_app("campaign.py", id=sinvad, tab="Metrics")
    assert not at.exception
    table = next(m.value for m in at.markdown if "error rate" in m.value)
    assert "SSIM result vs seed" in table and "median top-2 gap, test images" in table
    assert any("SSIM: Gaussian window 11x11, sigma 1.5" in c.value for c in at.caption)
    assert len(at.get("vega_lite_chart")) == 2  # convergence, gap histogram
    assert [m.label for m in at.metric][:2] == ["viable seeds", "misclassified"]


def test_campaign_page_shows_the_escape_matrix_beside_the_confusion(escaped_app, escaped):
    home, cid = escaped
    at = escaped_app("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert "Class escape" in [h.value for h in at.subheader]
    charts = at.get("vega_lite_chart")
    specs = [c.proto.spec for c in charts]
    assert any("escape success rate" in s for s in specs)
    assert any("test-set confusion rate" in s for s in specs)
    # Both heatmaps share one 0..1 colour scale.
    assert sum('"domain": [0, 1]' in s or '"domain":[0,1]' in s for s in specs) >= 2
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download escape matrix (CSV)" in labels


def test_an_ordinary_campaign_has_no_escape_panel(escaped_app, escaped):
    home, _ = escaped
    cid = run_campaign(
        parse_config({"seeds": 2, "strategy_params": {"generations": 2}}), home
    ).campaign_id
    at = escaped_app("campaign.py", id=cid)
    assert not at.exception
    assert "Class escape" not in [h.value for h in at.subheader]


def test_campaign_page_of_a_removed_dataset_says_why(pets_app, tmp_path: Path):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from engine.datasets.specs import remove_spec

    cfg = {
        "dataset": "pets",
        "classifier": "pets-convnet",
        "seeds": 1,
        "target_class": 0,
        "strategy_params": {"generations": 1, "population": 4, "best_left": 2},
    }
    cid = run_campaign(parse_config(cfg), tmp_path / "home").campaign_id
    remove_spec("pets")
    at = pets_app("campaign.py", id=cid)
    assert not at.exception
    assert "unknown dataset 'pets'" in at.error[0].value and "data add" in at.error[0].value
