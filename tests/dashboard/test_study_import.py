"""The Validity studies page imports a study file uploaded in the browser."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.csv_io import to_csv_bytes
from engine.labelling.exchange import wide_export
from engine.labelling.statistics import report
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import labels as ls
from tests.helpers import page_opener

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


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
    return page_opener(home, monkeypatch)("studies.py")


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
        (CROWD.format(answer="banana").encode(), None,
         "Cannot import f.csv: data row 1 (ID '1'): answer 'banana' is neither"),
        (CROWD.format(answer="sept").encode("latin-1").replace(b"sept", b"s\xe9pt"), None,
         "choose Encoding latin-1"),
        (b"", None, "Cannot import f.csv: the file is empty"),
        (CROWD.format(answer="7").encode(), b"image: [1\n", "Cannot use mapping m.yaml: it is "
         "not valid YAML at line 2"),
        (CROWD.format(answer="7").encode(), b"assessors: 5\n",
         "Cannot use mapping m.yaml: assessors: Input should be a valid list"),
    ],
)  # fmt: skip
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
