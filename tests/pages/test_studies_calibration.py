"""AppTest of the Validity studies page's Calibration tab (dashboard/calibration.py): the
Score button scores the study, then the table, the headline and the ROC curves show; a
study of two generators also shows each generator's rows, and its download holds the rows
of `labels report --calibration-csv`; a rerun queries little and calibrates nothing."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from typer.testing import CliRunner

import dashboard.calibration
import engine.labelling.statistics
import engine.labelling.study_calibration
from engine.cli.main import app
from engine.core.csv_io import to_csv
from engine.labelling.agreement import INVALID
from engine.labelling.exchange import wide_export
from engine.labelling.importing import import_csv
from engine.labelling.validity import StudyConfig, create_study
from engine.validators import VALIDATORS
from store import Store, judging
from store import calibration as store_cal
from store import labels as ls
from tests.helpers import page_opener
from tests.pages.charts import specs


def test_the_calibration_tab_scores_the_study_and_shows_the_table(page, study):
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2, seed=9))
    items = ls.items(store, sid).set_index("item_id")
    failing = items.index[items["kind"].ne("gold")].to_numpy()
    bad = set(np.random.default_rng(1).permutation(failing)[: len(failing) // 2].tolist())
    for who in ("sim-a", "sim-b"):  # two simulated labellers who agree on every image
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            value = INVALID if i in bad else int(items.loc[i, "expected"])
            judging.answer(store, sid, i, who, value, datetime.now())
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["study"] = sid
    at.query_params["tab"] = "Calibration"
    at.run()
    assert not at.exception
    assert any(i.value.startswith("No validity filter has scored this study") for i in at.info)
    at.button(key="cal_score").click().run()
    assert not at.exception, at.exception
    # The bundled default generator has no discriminator: skipped, with the reason.
    assert any(
        w.value.startswith("discriminator skipped: validity filter 'discriminator' needs a GAN")
        for w in at.warning
    )
    # Every filter but the discriminator (five are registered by now).
    others = sorted(n for n in VALIDATORS.names() if n != "discriminator")
    assert store_cal.scored_validators(store, sid) == others
    table = next(d.value for d in at.dataframe if "ROC AUC" in d.value.columns)
    # classifier-confidence also scores label preservation: a row of its own.
    assert set(table["verdict"]) == {"validity", "preservation"}
    table = table[table["verdict"] == "validity"]
    assert sorted(table["validator"]) == others
    n_valid = len(failing) - len(bad)
    assert table["images"].tolist() == [f"{len(failing)} decided, {n_valid} valid"] * len(others)
    assert all(x.endswith(f" of {len(failing)}") for x in table["decides at 95% precision"])
    # One generator: the pooled table is its table, with no second one.
    assert not [d for d in at.dataframe if {"generator", "ROC AUC"} <= set(d.value.columns)]
    heads = [m.value for m in at.markdown if "agrees with people at kappa" in m.value]
    assert any(h.startswith("**ssim-nearest agrees with people at kappa ") for h in heads)
    # The ROC curves: one line per validator, coloured by it, over the chance diagonal.
    roc = [c for c in specs(at) if "false positive rate" in json.dumps(c)]
    assert len(roc) == 1
    lines = [la for la in roc[0]["layer"] if la.get("encoding", {}).get("color")]
    assert lines[0]["encoding"]["color"]["field"] == "validator"
    assert len(roc[0]["layer"]) == 2  # (the points: roc_points, tested in the engine)


def label(store: Store, sid: str, invalid: set[int]) -> None:
    """Two labellers who agree on every image: those in `invalid` invalid, the others
    (gold too) their expected class."""
    items = ls.items(store, sid).set_index("item_id")
    for who in ("sim-a", "sim-b"):
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            value = INVALID if i in invalid else int(items.loc[i, "expected"])
            judging.answer(store, sid, i, who, value, datetime.now())


@pytest.fixture(scope="module")
def two_generators(study, tmp_path_factory) -> tuple[Path, Path]:
    """(home, file): a study file as another workbench's export would give it, of two
    generators, mnist-vae and mnist-gan, whose mnist-gan images people all found valid;
    `import_csv` makes a study of it."""
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2, seed=11))
    failing = sorted(ls.items(store, sid).query("kind != 'gold'")["item_id"])
    assert len(failing) >= 5, failing  # two of the GAN, the others of the VAE, both classes
    gan, vae = failing[:2], failing[2:]
    label(store, sid, invalid=set(vae[::2]))
    wide = wide_export(store, sid)
    wide.loc[wide["item_id"].isin(gan), "generator"] = "mnist-gan"
    path = tmp_path_factory.mktemp("file") / "two-generators.csv"
    to_csv(wide, path)
    return home, path


def scored_study(home: Path, path: Path, name: str) -> str:
    """A study imported from `path`, its images scored by two filters as `labels
    calibrate` stores them: ssim-nearest higher on the valid images, classifier-confidence
    with a preservation score too."""
    store = Store(home / "latentfuzz.duckdb")
    # Named apart: in AppTest a rerun showed the other of two studies of one name.
    sid = import_csv(store, path, "mnist", name=name, home=home, again=True).study_id
    _, v, _ = engine.labelling.statistics.load(store, sid)
    v = v[v["kind"].ne("gold")]
    valid = v["validity"].map(lambda x: x is True).to_numpy()
    jitter = np.arange(len(v)) / 100
    rows = pd.concat(
        [
            pd.DataFrame(
                {
                    "item_id": v["item_id"],
                    "validator": "ssim-nearest",
                    "score": np.where(valid, 0.8, 0.3) - jitter,
                    "preserves": np.nan,
                }
            ),
            pd.DataFrame(
                {
                    "item_id": v["item_id"],
                    "validator": "classifier-confidence",
                    "score": 0.5 + jitter,
                    "preserves": 0.9 - jitter,
                }
            ),
        ]
    )
    store_cal.write_study_scores(store, sid, rows)
    return sid


def open_tab(home: Path, sid: str, monkeypatch):
    return page_opener(home, monkeypatch)("studies.py", study=sid, tab="Calibration")


def per_generator(at) -> pd.DataFrame:
    """The Calibration tab's per-generator table (the Statistics tab has its own)."""
    tables = [d.value for d in at.dataframe if {"generator", "ROC AUC"} <= set(d.value.columns)]
    assert len(tables) == 1, [list(d.value.columns) for d in at.dataframe]
    return tables[0]


def cells(at) -> list[str]:
    return [
        str(x)
        for d in at.dataframe
        if "ROC AUC" in d.value.columns
        for x in d.value.to_numpy().ravel()
    ]


def test_a_study_of_two_generators_shows_each_generators_rows(two_generators, monkeypatch):
    home, path = two_generators
    sid = scored_study(home, path, "rows")
    at = open_tab(home, sid, monkeypatch)
    assert not at.exception, at.exception
    apart = per_generator(at)
    got = apart.set_index(["generator", "validator", "verdict"])
    assert sorted(set(apart["generator"])) == ["mnist-gan", "mnist-vae"]
    items = ls.items(Store(home / "latentfuzz.duckdb"), sid).query("kind != 'gold'")
    n_vae = int(items["generator"].eq("mnist-vae").sum())
    bad = (n_vae + 1) // 2  # every other VAE image was found invalid
    row = got.loc[("mnist-vae", "ssim-nearest", "validity")]
    assert row["images"] == f"{n_vae} decided, {n_vae - bad} valid"
    assert row["ROC AUC"] == "1.000"  # its scores put every valid image above the invalid
    # Both of the GAN's images are valid: no AUC, and the row and a line under it say why.
    row = got.loc[("mnist-gan", "ssim-nearest", "validity")]
    assert row["ROC AUC"] == "none"
    assert row["images"] == "all 2 decided images are valid"
    assert "all 2 decided images are valid" in row["note"]
    why = [i.value for i in at.info if i.value.startswith("No AUC for the mnist-gan images")]
    assert (
        "No AUC for the mnist-gan images with classifier-confidence (validity), ssim-nearest "
        "(validity): all 2 decided images are valid; the validity AUC needs both valid and "
        "invalid images: label more images, or adjudicate undecided ones."
    ) in why
    assert len(why) == 2  # and classifier-confidence's preservation: all 2 preserved
    # Figures in words or "–": never a nan or None the reader has to decode.
    assert not {"nan", "None", "<NA>", "NaN"} & set(cells(at))


def test_the_download_holds_the_rows_of_the_clis_calibration_csv(
    two_generators, monkeypatch, tmp_path
):
    home, path = two_generators
    sid = scored_study(home, path, "download")
    saved = {}
    load = MemoryMediaFileStorage.load_and_get_id

    def keep(self, data, mimetype, kind, filename=None):
        saved[filename] = data
        return load(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    at = open_tab(home, sid, monkeypatch)
    assert not at.exception, at.exception
    page = saved[f"{sid}-calibration.csv"]
    out = tmp_path / "cli.csv"
    r = CliRunner().invoke(
        app, ["labels", "report", sid, "--calibration-csv", str(out), "--home", str(home)]
    )
    assert r.exit_code == 0, r.output
    assert page.decode() == out.read_text()
    rows = pd.read_csv(out)
    assert sorted(set(rows["generator"])) == ["all", "mnist-gan", "mnist-vae"]


def test_a_rerun_queries_less_than_before_and_calibrates_nothing(two_generators, monkeypatch):
    """The tab made 10 store queries per run for the pooled table alone, and ran every
    calibration (a bootstrap each) at every rerun; now 5, and the calibrations only when
    the study's verdicts or scores changed."""
    home, path = two_generators
    sid = scored_study(home, path, "reruns")
    counts = {"queries": 0, "calibrations": 0}
    inside = []
    for name in ("query", "query_rows"):
        real = getattr(Store, name)

        def counted(self, *a, _real=real, **k):
            counts["queries"] += bool(inside)
            return _real(self, *a, **k)

        monkeypatch.setattr(Store, name, counted)
    real_cal = engine.labelling.study_calibration.calibrate

    def counted_cal(*a, **k):
        counts["calibrations"] += 1
        return real_cal(*a, **k)

    monkeypatch.setattr(engine.labelling.study_calibration, "calibrate", counted_cal)
    section = dashboard.calibration.calibration_section

    def timed(*a, **k):
        inside.append(1)
        try:
            return section(*a, **k)
        finally:
            inside.pop()

    monkeypatch.setattr(dashboard.calibration, "calibration_section", timed)
    st.cache_data.clear()
    at = open_tab(home, sid, monkeypatch)
    assert counts["queries"] <= 5 and counts["calibrations"] > 0, counts
    counts.update(queries=0, calibrations=0)
    at.run()
    assert not at.exception, at.exception
    assert counts == {"queries": 5, "calibrations": 0}
    # A new verdict (a GAN image found invalid after all) is calibrated at the next run.
    store = Store(home / "latentfuzz.duckdb")
    gan = ls.items(store, sid).query("generator == 'mnist-gan'")["item_id"]
    judging.adjudicate(store, sid, int(gan.iloc[0]), "reviewer", INVALID)
    at.run()
    assert counts["calibrations"] > 0
    apart = per_generator(at)
    row = apart.set_index(["generator", "validator", "verdict"]).loc[
        ("mnist-gan", "ssim-nearest", "validity")
    ]
    assert row["images"] == "2 decided, 1 valid"
