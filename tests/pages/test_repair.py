"""AppTest of the Repair section (dashboard/repair.py) on the Campaign and Validity
studies pages: the settings, Launch (the process start replaced by a stub that writes
progress and a report as `latentfuzz repair` does), progress, the before/after table
with its controls, and refusals in one line."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

import dashboard.repair as repair
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import campaigns as sc
from store import labels as ls
from tests.helpers import page_opener


@pytest.fixture
def failed(study) -> tuple[Path, str]:
    """A finished campaign that found failures: the one the conftest's study labels."""
    home, cid, _ = study
    assert sc.summary(Store(home / "latentfuzz.duckdb"), cid)["misclassified"] > 0
    return home, cid


class Stub:
    """Stands in for the repair process: records its command, writes its log, and runs
    until the test ends it."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.out = None
        self.code: int | None = None
        self.pid = 2**22 + 17  # no real process: the registry's poll() is asked first

    def __call__(self, args, stdout, **kw):
        self.args, self.log = list(args), Path(stdout.name)
        return self

    def poll(self) -> int | None:
        return self.code

    def write(self, *lines: str) -> None:
        with open(self.log, "a") as f:
            f.write("".join(x + "\n" for x in lines))


def report(name: str, cid: str) -> dict:
    """A small report, shaped as engine/repair/run.py writes it."""
    row = {"held_out_accuracy": 0.99, "failures_accuracy": 0.2}
    fresh = {"fresh_misclassified_pct": 60.0, "fresh_iterations_icst": 12.0}
    return {
        "model": name,
        "parent": "mnist-convnet",
        "source": {"campaign": cid},
        "counts": {
            "failures_used": 7,
            "failures_unfiltered": 9,
            "added_per_arm": {"repair": 7, "random": 7, "no-validity": 7},
            "fresh_failures": 3,
            "evaluation_images": 9000,
        },
        "lineage": {
            "parent": "mnist-convnet",
            "arm": "repair",
            "failures": {"campaign": cid, "used": 7},
        },
        "rows": [
            {"model": "before", "name": "mnist-convnet", **row, **fresh, "fresh_campaign": "fa"},
            {
                "model": "repair",
                "name": name,
                **row,
                "failures_accuracy": 1.0,
                **fresh,
                "fresh_campaign": "fb",
                "added_accuracy": 1.0,
            },
            {"model": "random", "name": f"{name}-random", **row, "added_accuracy": 1.0, **fresh},
            {
                "model": "no-validity",
                "name": f"{name}-no-validity",
                **row,
                "added_accuracy": 0.9,
                **fresh,
            },
        ],
    }


def labels(at) -> list[str]:
    return [w.label for kind in ("number_input", "selectbox", "text_input") for w in at.get(kind)]


def test_repair_section_launches_shows_progress_then_the_report(failed, monkeypatch):
    home, cid = failed
    stub = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert "Repair" in [h.value for h in at.subheader]
    shown = labels(at)
    for label in (
        "Classifier to repair",
        "Validity filter",
        "Training images per failure",
        "Epochs",
        "Learning rate",
        "Random seed",
        "Name of the repaired model",
    ):
        assert label in shown
    (clf,) = [s for s in at.selectbox if s.label == "Classifier to repair"]
    assert clf.value == "mnist-convnet"  # the campaign's
    (flt,) = [s for s in at.selectbox if s.label == "Validity filter"]
    assert flt.value == "ssim-nearest"  # the campaign named none: the one measured
    [e for e in at.number_input if e.label == "Epochs"][0].set_value(2)
    [b for b in at.button if b.label == "Launch repair"][0].click()
    at.run()
    assert not at.exception
    cmd = stub.args
    assert cmd[cmd.index("repair") + 1 :][:2] == ["--from-campaign", cid]
    assert "--epochs=2" in cmd and "--classifier" in cmd
    assert cmd[cmd.index("--validator") + 1] == "ssim-nearest"
    name = cmd[cmd.index("--name") + 1]
    assert name == f"mnist-convnet-repair-{cid}"
    stub.write(
        "7 validated failures of 9 that mnist-convnet misclassifies",
        "repair: epoch 1/2, loss 0.3000",
    )
    at.run()
    (bar,) = at.get("progress")
    assert "epoch 1/2" in bar.proto.text
    # Done: the report beside the model's card.
    folder = home / "models" / name
    folder.mkdir(parents=True)
    (folder / "repair.json").write_text(json.dumps(report(name, cid)))
    stub.code = 0
    at.run()
    assert not at.exception
    assert not at.get("progress")
    (table,) = [d.value for d in at.dataframe if "held-out accuracy" in d.value.columns]
    assert table["model"].tolist() == [
        "before (the classifier as it is)",
        "repaired",
        "control: real images instead",
        "control: failures not filtered",
    ]
    assert table["images added"].tolist() == ["–", "7", "7", "7"]
    assert table["accuracy on the failures used"].tolist()[:2] == ["20.00%", "100.00%"]
    (link,) = [p.proto for p in at.get("page_link") if "Compare" in p.proto.label]
    assert "id=fa" in link.query_string and "id=fb" in link.query_string


def test_a_refusal_of_the_process_shows_in_one_line(failed, monkeypatch):
    home, cid = failed
    stub = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    [t for t in at.text_input if t.label == "Name of the repaired model"][0].set_value("r2")
    [b for b in at.button if b.label == "Launch repair"][0].click()
    at.run()
    stub.write(
        f"error: --from-campaign {cid}: none of its 9 failures passes the validator "
        "(ssim-nearest >= 0.9); lower the threshold (NAME=THRESHOLD) or repair from another "
        "campaign"
    )
    stub.code = 2
    at.run()
    (err,) = [e.value for e in at.error]
    assert err == (
        "The repair into r2 stopped: None of its 9 failures passes the validity filter "
        "(ssim-nearest >= 0.9); lower the threshold or repair from another campaign"
    )
    assert "\n" not in err and "--" not in err


def test_a_name_taken_is_refused_before_anything_starts(failed, monkeypatch):
    home, cid = failed
    stub = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    [t for t in at.text_input if t.label == "Name of the repaired model"][0].set_value("mnist-vae")
    [b for b in at.button if b.label == "Launch repair"][0].click()
    at.run()
    # First, above the newest repair's panel (an earlier test's refusal).
    assert at.error[0].value == "A model named mnist\\-vae exists already: choose another name."
    assert stub.args == []


def test_a_campaign_without_failures_is_refused_in_one_line(two, monkeypatch):
    home, (first, _) = two
    at = page_opener(home, monkeypatch)("campaign.py", id=first)
    assert not at.exception
    assert "This campaign found no failure: there is nothing to repair." in [
        i.value for i in at.info
    ]
    assert not [b for b in at.button if b.label == "Launch repair"]


def test_a_study_without_verdicts_is_refused_in_one_line(study, monkeypatch):
    home, _, sid = study
    at = page_opener(home, monkeypatch)("studies.py", study=sid)
    assert not at.exception
    assert "Repair" in [h.value for h in at.subheader]
    assert [i.value for i in at.info if "verdict" in i.value] == [
        "No image of this study has a verdict yet: label them on the Label page (or settle "
        "them under Adjudication), then repair."
    ]
    assert not [b for b in at.button if b.label == "Launch repair"]


def test_a_judged_study_offers_the_settings_and_launches_from_it(study, monkeypatch):
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.0, k=1, seed=7))
    items = ls.items(store, sid).set_index("item_id")
    judging.join(store, sid, "ann")
    while (i := judging.next_item(store, sid, "ann")) is not None:
        judging.answer(store, sid, i, "ann", int(items.loc[i, "expected"]), datetime.now())
    stub = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub)
    at = page_opener(home, monkeypatch)("studies.py", study=sid)
    assert not at.exception
    assert "Validity filter" not in labels(at)  # people validated these failures
    (clf,) = [s for s in at.selectbox if s.label == "Classifier to repair"]
    assert clf.value == "mnist-convnet"  # the study's campaign's
    [b for b in at.button if b.label == "Launch repair"][0].click()
    at.run()
    assert not at.exception
    cmd = stub.args
    assert cmd[cmd.index("repair") + 1 :][:2] == ["--from-study", sid]
    assert at.get("progress")  # the newest repair of this study, live
