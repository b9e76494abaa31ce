"""AppTest of the Validity studies page (pages/studies.py): statistics and adjudication, a
study created from its form, a differential study's sides, and a study file uploaded in
the browser and imported."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.csv_io import to_csv_bytes
from engine.labelling.agreement import INVALID
from engine.labelling.exchange import wide_export
from engine.labelling.statistics import report
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import campaigns as sc
from store import labels as ls
from tests.helpers import markdown_tables, page_opener


def test_studies_page_shows_statistics_and_settles_the_queue(page, study, monkeypatch):
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    # A study of its own, finished by two labellers.
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2, seed=5))
    items = ls.items(store, sid).set_index("item_id")
    for who in ("sta", "stb"):
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            disagree = who == "stb" and i == items.index[0]
            value = INVALID if disagree else int(items.loc[i, "expected"])
            judging.answer(store, sid, i, who, value, datetime.now())
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["study"] = sid
    at.run()
    assert not at.exception
    assert at.title[0].value == "Validity studies"
    assert [m.label for m in at.metric][:4] == ["images", "answers", "labellers", "undecided"]
    # Markdown tables (the grid's code was loaded for a few rows, and cut their headers).
    assert not at.dataframe
    tables = markdown_tables(at)
    assert len(tables) >= 3  # by generator x perturbation, by campaign, labellers
    by_campaign = tables[1]
    assert by_campaign["campaign"].tolist() == [cid]
    assert by_campaign["name"].tolist() == [sc.campaign(store, cid)["name"]]
    assert {"Cohen's kappa", "Fleiss' kappa", "Krippendorff's alpha"} <= {
        m.label for m in at.metric
    }
    queue_before = int(at.metric[3].value)
    assert queue_before == 1  # stb called the first image invalid, sta named its class
    # Only the open tab runs: the adjudication queue is not built on the Statistics tab.
    assert not any(c.value.startswith("Type your name as reviewer") for c in at.caption)
    at.session_state["tab"] = "Adjudication"
    at.run()
    assert any(c.value.startswith("Type your name as reviewer") for c in at.caption)
    at.text_input(key="reviewer").input("   ").run()  # it was stored as the reviewer
    assert at.error[0].value.startswith("Type your name") and at.button(key="adj3").disabled
    at.text_input(key="reviewer").input("rev").run()
    assert not any(c.value.startswith("Type your name as reviewer") for c in at.caption)
    at.button(key="adj3").click().run()
    assert not at.exception
    assert ls.adjudications(store, sid)["reviewer"].tolist() == ["rev"]
    settled = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert settled["verdict"].tolist() == ["3"] and settled["reviewer"].tolist() == ["rev"]
    at.session_state["tab"] = "Statistics"
    at.run()
    assert int(at.metric[3].value) == queue_before - 1
    at.session_state["tab"] = "Adjudication"
    at.run()
    next(b for b in at.button if b.label == "Take back").click().run()  # a mis-click
    assert ls.adjudications(store, sid).empty
    at.session_state["tab"] = "Statistics"
    at.run()
    assert int(at.metric[3].value) == queue_before
    # The study chosen in the sidebar goes into the URL (a reload kept only the tab).
    other = study[2]
    next(s for s in at.sidebar.selectbox if s.label == "Study").set_value(other).run()
    assert at.query_params["study"] in (other, [other])


def test_a_study_is_created_from_the_page_with_the_planned_size(page, study):
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    before = set(ls.validity_studies(store)["id"])
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["tab"] = "New study"
    at.run()
    assert "the planner proposes" in " ".join(c.value for c in at.caption)
    at.number_input[1].set_value(3)  # labellers per image
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception
    new = ls.validity_studies(store)
    created = new[~new["id"].isin(before)]
    assert len(created) == 1 and int(created["k"].iloc[0]) == 3
    assert any("Created" in s.value for s in at.success)
    # The sidebar's study is the new one (it stayed on the one shown before).
    assert (
        next(s for s in at.sidebar.selectbox if s.label == "Study").value == created["id"].iloc[0]
    )


def test_bad_numbers_in_the_new_study_form_are_named_not_ignored(page, study):
    """-4 images and k = -1: Create study did nothing, without a word (a red box only)."""
    home, _, _ = study
    store = Store(home / "latentfuzz.duckdb")
    before = len(ls.validity_studies(store))
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["tab"] = "New study"
    at.run()
    at.number_input[0].set_value(-4)
    at.number_input[1].set_value(-1)
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception, at.exception
    said = " ".join(e.value for e in at.error).replace("\\", "")  # markdown escapes
    assert "Images to label must be at least 1 (you entered -4)" in said, said
    assert "Labellers per image (k) must be at least" in said and "(you entered -1)" in said
    assert len(ls.validity_studies(store)) == before


def test_a_study_of_results_and_seeds_shows_which_row_is_which(page, study):
    """Its statistics had two rows per generator with nothing to tell them apart."""
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], seed_images=True, k=1))
    items = ls.items(store, sid).set_index("item_id")
    judging.join(store, sid, "kim")
    while (i := judging.next_item(store, sid, "kim")) is not None:
        judging.answer(store, sid, i, "kim", int(items.loc[i, "expected"]), datetime.now())
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["study"] = sid
    at.run()
    by_generator, by_campaign = markdown_tables(at)[:2]
    assert by_generator["kind"].tolist() == ["result", "seed"]
    assert list(by_campaign.columns[:3]) == ["kind", "campaign", "name"]
    assert "preservation undecided" in by_generator.columns


def test_an_invalid_study_reads_as_a_sentence(monkeypatch, tmp_path):
    home = tmp_path / "home"
    cfg = {"seeds": 4, "seed": 1, "strategy_params": {"generations": 30}}
    run_campaign(parse_config(cfg), home)  # the strong GA fails its viable seeds
    at = page_opener(home, monkeypatch)("studies.py", tab="New study")
    assert not at.exception, at.exception
    next(s for s in at.selectbox if s.label == "Verdict rule").set_value("majority")
    next(n for n in at.number_input if n.label == "Labellers per image (k)").set_value(2)
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert error.value.startswith("Cannot create the study; please fix:")
    assert (
        "- majority vote needs k &gt;= 3 answers per image, got Labellers per image \\(k\\) = 2"
        in error.value
    )
    for dump in ("validation error", "For further information", "Value error", "type="):
        assert dump not in error.value


def test_studies_page_says_which_classifier_people_agree_with(diffed_app, diffed):
    from datetime import datetime

    from engine.labelling import validity as labelling
    from store import judging
    from store import labels as ls

    home, cid = diffed
    store = Store(home / "latentfuzz.duckdb")
    cfg = labelling.StudyConfig(
        campaigns=[cid], k=1, gold_rate=0.0, triggering=True, sample=3, name="who is right"
    )
    sid = labelling.create_study(store, home, cfg)
    items = ls.items(store, sid).set_index("item_id")
    judging.join(store, sid, "ann")
    while (item := judging.next_item(store, sid, "ann")) is not None:
        judging.answer(store, sid, item, "ann", int(items.loc[item, "predicted_b"]), datetime.now())
    at = diffed_app("studies.py", study=sid)
    assert not at.exception, at.exception
    assert any(s.value == "Which classifier people agree with" for s in at.subheader)
    # Headed in words (they showed as humans_agree_a, humans_agree_neither, campaign_id).
    sides = next(d for d in markdown_tables(at) if "B's label" in d.columns)
    assert sides["B's label"].tolist() == ["3"] and sides["A's label"].tolist() == ["0"]
    assert not [c for d in markdown_tables(at) for c in d.columns if "_" in str(c)]
    # ... and so does `labels report` (it had validity and preservation only).
    import subprocess

    from tests.helpers import CLI

    env = {"LATENTFUZZ_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [*CLI, "labels", "report", sid], env=env, capture_output=True, text=True, check=True
    ).stdout
    row = next(line for line in out.splitlines() if cid in line)
    assert "the label people give" in out, out
    assert [c.strip() for c in row.split("│")[4:6]] == ["0", "3"], row


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Store, str, bytes]:
    """A study answered by two labellers, and its wide export's bytes."""
    home = tmp_path_factory.mktemp("home")
    cid = run_campaign(parse_config({"seeds": 6, "seed": 1}), home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2))
    items = ls.items(store, sid).set_index("item_id")
    for who in ("ann", "bob"):
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            judging.answer(store, sid, i, who, int(items.loc[i, "expected"]), datetime.now())
    return store, sid, to_csv_bytes(wide_export(store, sid))


def open_studies(home: Path, monkeypatch) -> AppTest:
    """The New study tab, where study files are imported."""
    return page_opener(home, monkeypatch)("studies.py", tab="New study")


def import_button(at: AppTest):
    return next(b for b in at.button if b.label == "Import")


def test_an_uploaded_export_becomes_the_same_study_in_another_home(exported, tmp_path, monkeypatch):
    store, sid, data = exported
    home = tmp_path / "other"  # a home with no campaign and no study
    at = open_studies(home, monkeypatch)
    assert not at.exception
    at.file_uploader[0].set_value(("images.csv", data, "text/csv"))
    import_button(at).click().run()
    assert not at.exception, at.exception
    assert any("a latentfuzz wide export" in s.value for s in at.success), at.error
    other = Store(home / "latentfuzz.duckdb")
    new = ls.validity_studies(other)
    assert len(new) == 1 and new["name"].iloc[0] == "images.csv"
    pd.testing.assert_frame_equal(report(store, sid), report(other, new["id"].iloc[0]))
    # The sidebar shows the imported study.
    at.run()
    assert next(s for s in at.sidebar.selectbox if s.label == "Study").value == new["id"].iloc[0]
    # The same file again is refused in words that name the page's checkbox.
    import_button(at).click().run()
    assert any('tick "Import again if imported before"' in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert len(ls.validity_studies(other)) == 1


def test_a_bad_upload_is_refused_in_one_line_and_writes_nothing(tmp_path, monkeypatch):
    home = tmp_path / "h"
    at = open_studies(home, monkeypatch)
    at.file_uploader[0].set_value(("mine.csv", b"a,b\n1,2\n", "text/csv"))
    import_button(at).click().run()
    assert not at.exception
    (err,) = at.error
    said = err.value.replace("\\", "")  # markdown escapes
    assert said.startswith("Cannot import mine.csv: columns [") and "\n" not in said
    assert "not found" in said and "Choose a Mapping file naming the right columns" in said
    assert ls.validity_studies(Store(home / "latentfuzz.duckdb")).empty


def test_nothing_chosen_is_said(tmp_path, monkeypatch):
    at = open_studies(tmp_path / "h", monkeypatch)
    import_button(at).click().run()
    assert not at.exception and [e.value for e in at.error] == ["Choose a study CSV file first."]


CROWD = "Image URL,ID,TOOL,MUT_EXT,Expected,ASS 1,ASS 2\nu/1.png,1,VAE,low,7,{answer},7\n"


@pytest.mark.parametrize(
    ("data", "mapping", "said"),
    [
        # The stored copy's path was cut off badly (", data row 1"), flags named the CLI's.
        (
            CROWD.format(answer="banana").encode(),
            None,
            "Cannot import f.csv: data row 1 (ID '1'): answer 'banana' is neither",
        ),
        (
            CROWD.format(answer="sept").encode("latin-1").replace(b"sept", b"s\xe9pt"),
            None,
            "choose Encoding latin-1",
        ),
        (b"", None, "Cannot import f.csv: the file is empty"),
        (
            CROWD.format(answer="7").encode(),
            b"image: [1\n",
            "Cannot use mapping m.yaml: it is not valid YAML at line 2",
        ),
        (
            CROWD.format(answer="7").encode(),
            b"assessors: 5\n",
            "Cannot use mapping m.yaml: assessors: Input should be a valid list",
        ),
    ],
)
def test_import_errors_name_the_users_files_and_the_forms_fields(
    tmp_path, monkeypatch, data, mapping, said
):
    at = open_studies(tmp_path / "h", monkeypatch)
    at.file_uploader[0].set_value(("f.csv", data, "text/csv"))
    if mapping is not None:
        at.file_uploader[1].set_value(("m.yaml", mapping, "application/yaml"))
    import_button(at).click().run()
    assert not at.exception
    (err,) = [e.value.replace("\\", "") for e in at.error]  # markdown escapes
    assert said in err and "\n" not in err and "uploads" not in err and "--" not in err, err


def test_a_latin_1_file_imports_with_its_encoding_chosen(tmp_path, monkeypatch):
    at = open_studies(tmp_path / "h", monkeypatch)
    data = CROWD.format(answer="7").replace("VAE", "VAÉ").encode("latin-1")
    at.file_uploader[0].set_value(("f.csv", data, "text/csv"))
    next(s for s in at.selectbox if s.label == "Encoding").set_value("latin-1")
    import_button(at).click().run()
    assert not at.error and at.success, [e.value for e in at.error]
    store = Store(tmp_path / "h" / "latentfuzz.duckdb")
    items = ls.items(store, ls.validity_studies(store)["id"].iloc[0])
    assert items["generator"].tolist() == ["VAÉ"]


@pytest.fixture(scope="module")
def mixed(diffed) -> tuple[Path, str, str]:
    """(home, differential campaign, one-classifier campaign "plain one") in one home."""
    home, two = diffed
    cfg = {"seeds": 3, "seed": 1, "name": "plain one", "strategy_params": {"generations": 30}}
    return home, two, run_campaign(parse_config(cfg), home).campaign_id


def create_button(at: AppTest):
    return next(b for b in at.button if b.label == "Create study")


def test_campaigns_of_the_wrong_kind_are_said_as_they_are_chosen(mixed, monkeypatch):
    """A study of an NSGA-II campaign was refused only at Create, as "campaigns
    ['20261127-…'] test two classifiers … Label them with --triggering ("Triggering inputs
    instead" on the Studies page)": a Python list, a flag, and this very page."""
    from store import differential as sd

    home, two, one = mixed
    store = Store(home / "latentfuzz.duckdb")
    before = len(ls.validity_studies(store))
    at = page_opener(home, monkeypatch)("studies.py", tab="New study")
    assert not at.exception, at.exception
    chosen = next(m for m in at.multiselect if m.label == "Campaigns")
    assert chosen.value == [one] and not at.warning and not create_button(at).disabled

    def choose(ids: list[str], tick: bool) -> str | None:
        next(m for m in at.multiselect if m.label == "Campaigns").set_value(ids)
        next(c for c in at.checkbox if c.label == "Triggering inputs instead").set_value(tick)
        at.run()
        assert not at.exception, at.exception
        said = [w.value.replace("\\", "") for w in at.warning]  # markdown escapes
        assert len(said) <= 1
        if said:  # said once, under the choice, and Create is greyed out with that reason
            button = create_button(at)
            assert button.disabled and button.help.replace("\\", "") == said[0]
            assert "[" not in said[0] and "--" not in said[0] and "Studies page" not in said[0]
            assert not [c for c in at.caption if "planner proposes" in c.value]  # no "0 images"
        return said[0] if said else None

    assert choose([two], False) == (
        f"{two} tests two classifiers: tick “Triggering inputs instead” to label the images "
        "they disagree on."
    )
    mix = choose([two, one], True)
    assert mix.startswith(f"{two} tests two classifiers and plain one ({one}) tests one: ")
    assert choose([two, one], False) == mix
    assert choose([one], True).startswith(f"plain one ({one}) tests one classifier: ")
    # Ticked for the differential campaign: counted as triggering inputs, no seed images.
    assert choose([two], True) is None and not create_button(at).disabled
    n = len(sd.triggering(store, [two]))
    assert any(c.value.startswith(f"{n} triggering inputs; ") for c in at.caption)
    assert next(c for c in at.checkbox if c.label == "Also show the seed images").disabled
    create_button(at).click().run()
    assert not at.exception and not at.error, at.error
    assert len(ls.validity_studies(store)) == before + 1


def test_the_engine_names_refused_campaigns_by_name_and_id(mixed):
    """In words a page can show too: no Python list, the flag only in an aside that the
    page drops (dashboard.form_check.in_words)."""
    from dashboard.form_check import in_words
    from dashboard.study_choice import FORM_NAMES
    from engine.core.errors import ConfigError

    home, two, one = mixed
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(ConfigError) as two_only:
        create_study(store, home, StudyConfig(campaigns=[two]))
    with pytest.raises(ConfigError) as one_only:
        create_study(store, home, StudyConfig(campaigns=[one], triggering=True))
    assert str(two_only.value).startswith(f"campaign {two} tests two classifiers against each ")
    assert str(one_only.value).startswith(f"campaign plain one ({one}) tests one classifier: ")
    for e in (two_only.value, one_only.value):
        assert "[" not in str(e) and "--triggering" in str(e)  # the CLI's fix, for the CLI
        page = in_words(str(e), FORM_NAMES)
        assert "--" not in page and "Studies page" not in page, page
    assert in_words(str(one_only.value), FORM_NAMES).endswith(
        "in a study of their own (without “Triggering inputs instead”)"
    )
