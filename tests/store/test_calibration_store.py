"""Schema 12 (issue 37): validity filters' scores of a study's images, and the study a
campaign's calibrated threshold came from (store/calibration.py), on an in-memory and a
file database, and a version-11 store migrated on open."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from store import SCHEMA_VERSION, Store, maintenance
from store import calibration as cal
from store.differential import write_validity
from tests.helpers import old_store


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path: Path) -> Store:
    return Store(":memory:" if request.param == "memory" else tmp_path / "s.duckdb")


def _scores(name: str, n: int, preserves: bool = False) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": range(n),
            "validator": name,
            "score": [i / n for i in range(n)],
            "preserves": [0.5] * n if preserves else [float("nan")] * n,
        }
    )


def test_scores_replace_their_validators_only(store):
    cal.write_study_scores(store, "s", pd.concat([_scores("a", 3), _scores("b", 2, True)]))
    cal.write_study_scores(store, "s", _scores("a", 4))  # scored again: replaced, not added
    got = cal.study_scores(store, "s")
    assert got.groupby("validator").size().to_dict() == {"a": 4, "b": 2}
    assert got[got["validator"] == "a"]["preserves"].isna().all()
    assert got[got["validator"] == "b"]["preserves"].tolist() == [0.5, 0.5]
    assert cal.scored_validators(store, "s") == ["a", "b"]
    assert cal.scored_validators(store, "other") == []
    assert cal.study_scores(store, "s", ["b"])["validator"].unique().tolist() == ["b"]


def _validity(threshold: float, scores: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "kind": "result",
            "ref": range(len(scores)),
            "validator": "ssim-nearest",
            "score": scores,
            "threshold": threshold,
            "valid": [s >= threshold for s in scores],
        }
    )


def test_auto_validity_per_campaign_with_the_study_of_its_threshold(store):
    write_validity(store, "c1", _validity(0.5, [0.1, 0.6, 0.7, 0.9]))
    write_validity(store, "c2", _validity(0.4, [0.1, 0.3]))
    cal.record_calibrated(store, "c1", {"ssim-nearest": ("study-x", 0.5)})
    t = cal.auto_validity_table(store, ["c1", "c2", "c1"]).set_index("campaign_id")
    assert t.loc["c1", ["images", "valid", "valid_pct", "threshold", "study"]].tolist() == [
        4,
        3,
        75.0,
        0.5,
        "study-x",
    ]
    assert t.loc["c2", "valid"] == 0 and t.loc["c2", "study"] is None
    assert cal.auto_validity_table(store, []).empty
    assert cal.validity_thresholds(store, ["c1"])["calibrated_on"].tolist() == ["study-x"]
    # A study recorded for another threshold than the one scored claims nothing.
    cal.record_calibrated(store, "c2", {"ssim-nearest": ("study-y", 0.9)})
    assert cal.validity_thresholds(store, ["c2"])["calibrated_on"].tolist() == [None]


def test_a_version_11_store_gains_the_study_column_and_the_scores_table(tmp_path: Path):
    path = old_store(
        tmp_path / "v11.duckdb",
        11,
        "CREATE TABLE validity (campaign_id VARCHAR NOT NULL, kind VARCHAR NOT NULL, "
        "ref INTEGER NOT NULL, validator VARCHAR NOT NULL, score DOUBLE NOT NULL, "
        "threshold DOUBLE NOT NULL, valid BOOLEAN NOT NULL, "
        "PRIMARY KEY (campaign_id, kind, ref, validator))",
        "INSERT INTO validity VALUES ('c', 'result', 0, 'ssim-nearest', 0.6, 0.4, true)",
    )
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    t = cal.auto_validity_table(store, ["c"])
    assert t[["images", "valid", "threshold", "study"]].iloc[0].tolist() == [1, 1, 0.4, None]
    cal.write_study_scores(store, "s", _scores("a", 2))
    assert len(cal.study_scores(store, "s")) == 2


def test_scored_studies_lists_each_study_s_validators_of_one_dataset(store):
    with store.write() as con:
        for sid, dataset, at in (("s1", "mnist", 1), ("s2", "mnist", 2), ("s3", "svhn", 3)):
            con.execute(
                "INSERT INTO label_studies VALUES (?, ?, make_timestamp(2026, 1, ?, 0, 0, 0), "
                "?, 'campaigns', 1, 'icst', 0, 1000, '{}')",
                [sid, f"study {sid}", at, dataset],
            )
    cal.write_study_scores(store, "s1", pd.concat([_scores("a", 3), _scores("b", 2)]))
    cal.write_study_scores(store, "s2", _scores("a", 2))
    cal.write_study_scores(store, "s3", _scores("a", 2))
    got = cal.scored_studies(store, "mnist")
    assert list(zip(got["study_id"], got["validator"], strict=True)) == [
        ("s2", "a"),
        ("s1", "a"),
        ("s1", "b"),
    ]
    assert got["name"].tolist()[0] == "study s2"
    assert got["answers"].tolist() == [0, 0, 0]
