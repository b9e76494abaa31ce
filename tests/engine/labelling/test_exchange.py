"""A study exported by `labels export` and imported by `labels import` is the same study:
the same report, intervals, agreement, gold scores and adjudications."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.csv_io import to_csv
from engine.core.errors import ConfigError
from engine.labelling.agreement import INVALID
from engine.labelling.exchange import detect, raw_export, wide_export
from engine.labelling.importing import import_csv
from engine.labelling.statistics import agreement_table, labeller_table, load, report, undecided
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import labels as ls


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Store, str]:
    """A labelled study: results, seed images and gold; two labellers who disagree on a
    third of the images (one named like a spreadsheet formula); one image adjudicated."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 12, "seed": 3, "strategy_params": {"generations": 40}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(
        store,
        home,
        StudyConfig(campaigns=[cid], gold_rate=0.25, name="pilot", seed_images=True, seed=7),
    )
    items = ls.items(store, sid).set_index("item_id")
    # They take turns, as labellers working at once do: who answered an image first varies,
    # and Cohen's kappa pairs first with second answers.
    served = {name: 0 for name in ("ann", "=bob")}
    for name in served:
        judging.join(store, sid, name)
    while served:
        for name in list(served):
            if (i := judging.next_item(store, sid, name)) is None:
                del served[name]
                continue
            it = items.loc[i]
            agree = name == "ann" or it.kind == "gold" or served[name] % 3
            value = int(it.expected) if agree else INVALID
            judging.answer(store, sid, i, name, value, datetime.now())
            served[name] += 1
    _, v, _ = load(store, sid)
    first = int(undecided(v)["item_id"].iloc[0])
    judging.adjudicate(store, sid, first, "rev", int(items.loc[first, "expected"]), "looked again")
    return store, sid


def figures(store: Store, sid: str) -> tuple:
    s, v, j = load(store, sid)
    return (
        report(store, sid, ("generator", "preset")).reset_index(drop=True),
        agreement_table(j, v),
        labeller_table(j, v).drop(columns="median_seconds"),
        v[
            [
                "kind",
                "expected",
                "predicted",
                "n_answers",
                "validity",
                "preservation",
                "adjudicated",
            ]
        ].reset_index(drop=True),
        (s["name"], s["k"], s["rule"], s["seed"], s["resamples"]),
        ls.adjudications(store, sid).drop(columns="study_id"),
    )


@pytest.mark.parametrize("shape", ["wide", "raw"])
def test_an_export_imports_as_the_same_study(study, tmp_path, shape):
    store, sid = study
    path = tmp_path / f"{shape}.csv"
    to_csv((wide_export if shape == "wide" else raw_export)(store, sid), path)
    other = Store(tmp_path / "other.duckdb")  # another home: only the file travels
    res = import_csv(other, path, "mnist")
    assert res.shape == shape and res.assumed == "" and res.disagreements.empty
    assert res.adjudications == 1
    mine, theirs = figures(store, sid), figures(other, res.study_id)
    assert (mine[3]["kind"] == "gold").sum() > 0
    firsts = ls.judgements(store, sid).groupby("item_id")["labeller"].first()
    assert firsts.nunique() == 2  # the turn-taking above made a difference to the order
    pd.testing.assert_frame_equal(mine[0], theirs[0])  # counts, percentages and intervals
    assert mine[1] == theirs[1]
    pd.testing.assert_frame_equal(mine[2], theirs[2])  # "=bob" keeps his name and gold score
    pd.testing.assert_frame_equal(mine[3], theirs[3])
    assert mine[4] == theirs[4]
    pd.testing.assert_frame_equal(mine[5], theirs[5])  # reviewer, answer, note and time
    if shape == "raw":  # times travel with the raw judgements
        a = ls.judgements(store, sid)["answered_at"].tolist()
        assert ls.judgements(other, res.study_id)["answered_at"].tolist() == a


def test_an_export_without_study_columns_says_what_it_assumed(study, tmp_path):
    store, sid = study
    path = tmp_path / "old.csv"
    to_csv(
        wide_export(store, sid).drop(
            columns=["study_k", "study_seed", "study_resamples", "study_rule"]
        ),
        path,
    )
    res = import_csv(Store(tmp_path / "o.duckdb"), path, "mnist")
    assert res.assumed == "k 2, rule icst, seed 0, resamples 1000"


def test_a_bad_cell_is_refused_with_its_row_and_nothing_is_written(study, tmp_path):
    store, sid = study
    wide = wide_export(store, sid)
    wide.loc[4, "answer 2"] = "banana"
    to_csv(wide, tmp_path / "bad.csv")
    other = Store(tmp_path / "o.duckdb")
    with pytest.raises(ConfigError, match=r"data row 5, answer 2: answer 'banana'"):
        import_csv(other, tmp_path / "bad.csv", "mnist")
    raw = raw_export(store, sid)
    to_csv(pd.concat([raw, raw.iloc[[3]]]), tmp_path / "twice.csv")
    with pytest.raises(ConfigError, match=r"answers item_id \d+ twice"):
        import_csv(other, tmp_path / "twice.csv", "mnist")
    wide = wide_export(store, sid)
    wide.loc[0, "expected"] = 12
    to_csv(wide, tmp_path / "class.csv")
    with pytest.raises(ConfigError, match="expected 12 is not a class index of mnist"):
        import_csv(other, tmp_path / "class.csv", "mnist")
    assert ls.validity_studies(other).empty


def test_only_our_own_headers_are_read_as_exports():
    assert (
        detect(["item_id", "kind", "generator", "preset", "image", "expected", "answer 1"])
        == "wide"
    )
    assert (
        detect(
            ["item_id", "kind", "generator", "preset", "image", "expected", "labeller", "answer"]
        )
        == "raw"
    )
    assert detect(["Image URL", "ID", "TOOL", "MUT_EXT", "Expected", "ASS 1", "ASS 2"]) is None


def test_the_cli_round_trip(study, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from engine.cli.main import app

    store, sid = study
    home = Path(store.path).parent
    out = tmp_path / "w.csv"
    r = CliRunner().invoke(app, ["labels", "export", sid, "--wide", str(out), "--home", str(home)])
    assert r.exit_code == 0, r.output
    other = tmp_path / "home2"
    r = CliRunner().invoke(
        app, ["labels", "import", str(out), "--dataset", "mnist", "--home", str(other)]
    )
    assert r.exit_code == 0, r.output
    assert "imported a latentfuzz wide export" in r.output and "agree with ours" in r.output


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("study_rule", "majority", "study_k 2 with rule majority"),
        ("study_k", "0", "study_k 0 with rule icst"),
        ("study_seed", "-5", "study_seed -5"),
        ("study_resamples", "0", "study_resamples 0"),
        ("study_seed", "1e30", "beyond the 9,007,199,254,740,991"),
        ("study_name", "other", "column study_name holds more than one value"),
        ("seed_idx", "1e30", "beyond the 2,147,483,647"),
        ("adjudication", "banana", "adjudication: answer 'banana' is neither a class of mnist"),
        ("answered_at", "yesterday", "'yesterday' is not a time"),
    ],
)
def test_bad_settings_and_cells_are_refused_before_anything_is_written(
    study, tmp_path, column, value, said
):
    store, sid = study
    raw = raw_export(store, sid).astype(object)
    row = raw.index[raw["adjudication"].notna()][0] if column == "adjudication" else 0
    everywhere = column.startswith("study_") and column != "study_name"
    raw.loc[raw.index if everywhere else [row], column] = value
    to_csv(raw, tmp_path / "bad.csv")
    other = Store(tmp_path / "o.duckdb")
    with pytest.raises(ConfigError, match=re.escape(said)):
        import_csv(other, tmp_path / "bad.csv", "mnist")
    assert ls.validity_studies(other).empty


def test_a_time_with_a_zone_is_kept_as_the_store_keeps_times(study, tmp_path, monkeypatch):
    store, sid = study
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # on a UTC machine, local and UTC look alike
    time.tzset()
    raw = raw_export(store, sid).astype(object)
    raw.loc[0, "answered_at"] = "2026-11-24T13:42:54Z"
    to_csv(raw, tmp_path / "tz.csv")
    other = Store(tmp_path / "o.duckdb")
    res = import_csv(other, tmp_path / "tz.csv", "mnist")
    try:
        got = ls.judgements(other, res.study_id)["answered_at"].tolist()
        assert datetime(2026, 11, 24, 22, 42, 54) in got  # 13:42 UTC is 22:42 in Tokyo
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_raw_export_of_an_unanswered_study_points_to_the_wide_file(study, tmp_path):
    store, sid = study
    to_csv(raw_export(store, sid).iloc[:0], tmp_path / "empty.csv")
    with pytest.raises(ConfigError, match="export the study with --wide"):
        import_csv(Store(tmp_path / "o.duckdb"), tmp_path / "empty.csv", "mnist")


def test_a_seed_as_large_as_a_study_takes_travels_and_the_dataset_is_checked(study, tmp_path):
    store, sid = study
    wide = wide_export(store, sid).assign(study_seed=2**40)
    to_csv(wide, tmp_path / "w.csv")
    res = import_csv(Store(tmp_path / "o.duckdb"), tmp_path / "w.csv", "mnist")
    assert ls.validity_study(Store(tmp_path / "o.duckdb"), res.study_id)["seed"] == 2**40
    # The answers name mnist's classes: read as another dataset's they would mean others.
    with pytest.raises(
        ConfigError, match="made for dataset mnist, not cifar10; import it with --dataset mnist"
    ):
        import_csv(Store(tmp_path / "p.duckdb"), tmp_path / "w.csv", "cifar10")
