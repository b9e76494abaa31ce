"""AppTest of the Repair section (dashboard/repair.py) on the Campaign and Validity
studies pages: the settings, Launch (the process start replaced by a stub that writes
progress and a report as `latentfuzz repair` does), progress, the before/after table
with its controls, and refusals in one line."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import dashboard.repair as repair
from dashboard.lineage import lineage_facts
from engine.cli.differential import calibrated_thresholds, parse_validators
from engine.labelling import study_calibration
from engine.labelling.agreement import INVALID
from engine.labelling.validity import StudyConfig, create_study
from engine.validators import VALIDATORS
from store import Store, judging
from store import calibration as scal
from store import campaigns as sc
from store import labels as ls
from tests.helpers import page_opener


def with_settings(at: AppTest) -> AppTest:
    """The page with its Repair settings shown (they are behind a toggle)."""
    toggles = [t for t in at.toggle if t.label == "Set up a repair"]
    return toggles[0].set_value(True).run() if toggles else at


def repair_page(home: Path, monkeypatch, page: str = "campaign.py", **params) -> tuple:
    """`page` opened with its Repair settings shown and the repair process stubbed: (the
    AppTest, the stub that records what would have started)."""
    stub = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub)
    return with_settings(page_opener(home, monkeypatch)(page, **params)), stub


def name_model(at: AppTest, name: str) -> None:
    [t for t in at.text_input if t.label == "Name of the repaired model"][0].set_value(name)


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
    at, stub = repair_page(home, monkeypatch, id=cid)
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
    # The name moves on: the one just launched is the running repair's.
    (field,) = [t for t in at.text_input if t.label == "Name of the repaired model"]
    assert field.value == f"{name}-2"
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
    assert not at.error  # the name shown is free: nothing reads "taken" beside the report
    (table,) = [d.value for d in at.dataframe if "held-out accuracy" in d.value.columns]
    assert list(table.columns[:3]) == [
        "model",
        "held-out accuracy",
        "accuracy on the failures used",
    ]
    assert table.columns[-1] == "name"
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
    (models,) = [p.proto for p in at.get("page_link") if "under Models" in p.proto.label]
    assert models.query_string == f"model={name}"


def test_the_models_link_opens_the_model_s_card(failed, monkeypatch):
    home, _ = failed
    at = page_opener(home, monkeypatch)("models.py", model="mnist-lenet5")
    assert not at.exception
    opened = [e.label for e in at.expander if e.proto.expanded]
    assert opened == ["mnist-lenet5 · classifier · mnist"]


def test_a_refusal_of_the_process_shows_in_one_line(failed, monkeypatch):
    home, cid = failed
    at, stub = repair_page(home, monkeypatch, id=cid)
    name_model(at, "r2")
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
    at, stub = repair_page(home, monkeypatch, id=cid)
    name_model(at, "mnist-vae")
    at.run()  # refused as it is typed, before Launch
    # First, above the newest repair's panel (an earlier test's refusal).
    assert at.error[0].value == "A model named mnist\\-vae exists already: choose another name."
    assert [b for b in at.button if b.label == "Launch repair"][0].disabled
    assert stub.args == []


def test_a_campaign_without_failures_is_refused_in_one_line(two, monkeypatch):
    home, (first, _) = two
    at = with_settings(page_opener(home, monkeypatch)("campaign.py", id=first))
    assert not at.exception
    assert "This campaign found no failure: there is nothing to repair." in [
        i.value for i in at.info
    ]
    assert not [b for b in at.button if b.label == "Launch repair"]


def test_a_study_without_verdicts_is_refused_in_one_line(study, monkeypatch):
    home, _, sid = study
    at = with_settings(page_opener(home, monkeypatch)("studies.py", study=sid))
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
    at, stub = repair_page(home, monkeypatch, "studies.py", study=sid)
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


@pytest.fixture
def calibrated(failed) -> tuple[Path, str, str, str]:
    """(home, campaign, study, the threshold's option): a validity study of the campaign
    with people's verdicts, half valid, and ssim-nearest scores of its images that agree
    with them but for one pair (AUC below 1), as `labels calibrate` stores them."""
    home, cid = failed
    store = Store(home / "latentfuzz.duckdb")
    cfg = StudyConfig(
        campaigns=[cid], name="Tuesday's study", gold_rate=0.0, k=1, seed=3, seed_images=True
    )
    sid = create_study(store, home, cfg)
    items = ls.items(store, sid).set_index("item_id")
    assert len(items) >= 4
    judging.join(store, sid, "ann")
    valid = {}
    while (i := judging.next_item(store, sid, "ann")) is not None:
        valid[i] = len(valid) % 2 == 0
        answer = int(items.loc[i, "expected"]) if valid[i] else INVALID
        judging.answer(store, sid, i, "ann", answer, datetime.now())
    ids = sorted(valid)
    score = {i: (0.6 if valid[i] else 0.3) + 0.01 * n for n, i in enumerate(ids)}
    first_valid = next(i for i in ids if valid[i])
    last_invalid = [i for i in ids if not valid[i]][-1]
    score[first_valid], score[last_invalid] = 0.35, 0.65  # one pair out of order
    rows = pd.DataFrame(
        {"item_id": ids, "validator": "ssim-nearest", "score": [score[i] for i in ids]}
    ).assign(preserves=float("nan"))
    scal.write_study_scores(store, sid, rows)
    c = study_calibration.calibrations(store, sid, ["ssim-nearest"])[("ssim-nearest", "validity")]
    assert 0.5 < c.auc < 1
    words = f"ssim-nearest: {c.threshold:.3g}, calibrated on Tuesday's study (AUC {c.auc:.2f})"
    return home, cid, sid, words


def threshold_box(at):
    (box,) = [s for s in at.selectbox if s.label == "Its threshold"]
    return box


def launch(at) -> None:
    (button,) = [b for b in at.button if b.label == "Launch repair"]
    assert not button.disabled
    button.click()
    at.run()


def test_a_calibrated_threshold_is_offered_and_launched_as_the_cli_takes_it(
    calibrated, monkeypatch
):
    home, cid, sid, words = calibrated
    at, stub = repair_page(home, monkeypatch, id=cid)
    assert not at.exception
    box = threshold_box(at)
    default = VALIDATORS.get("ssim-nearest").default_threshold
    assert box.options[0] == f"ssim-nearest: {default:g}, the filter's default"
    assert words in box.options
    box.select(words)
    at.run()
    name_model(at, "cal1")
    launch(at)
    assert not at.exception
    arg = stub.args[stub.args.index("--validator") + 1]
    assert arg == f"ssim-nearest=calibrated:{sid}"
    # The CLI's own reading of it: the threshold offered, recorded against the study.
    fixed, used = calibrated_thresholds(
        Store(home / "latentfuzz.duckdb"), parse_validators([arg], calibrated=True)
    )
    assert f"ssim-nearest: {used['ssim-nearest'][1]:.3g}, calibrated on" in words
    assert used["ssim-nearest"][0] == sid


def test_a_custom_threshold_is_given_as_a_number(calibrated, monkeypatch):
    home, cid, _, _ = calibrated
    at, stub = repair_page(home, monkeypatch, id=cid)
    threshold_box(at).select("a value of your own")
    at.run()
    [n for n in at.number_input if n.label == "Threshold"][0].set_value(0.3)
    name_model(at, "cal2")
    at.run()
    launch(at)
    assert stub.args[stub.args.index("--validator") + 1] == "ssim-nearest=0.3"


def test_the_lineage_says_where_a_calibrated_threshold_came_from():
    card = {
        "lineage": {
            "parent": "mnist-convnet",
            "arm": "repair",
            "failures": {
                "campaign": "c1",
                "used": 7,
                "validators": {"ssim-nearest": 0.49},
                "calibrated_on": {"ssim-nearest": "study-1"},
            },
            "settings": {"epochs": 1, "batch_size": 32},
            "seed": 0,
        }
    }
    facts = dict(lineage_facts(card))
    said = "ssim\\-nearest 0\\.49, calibrated on study study\\-1"
    assert said in facts["failures used"]
    assert "batch size 32" in facts["repair settings"]


def test_new_campaign_size_and_batch_size_have_the_cli_defaults_and_go_to_the_command(
    failed, monkeypatch
):
    home, cid = failed
    at, stub = repair_page(home, monkeypatch, id=cid)
    values = {n.label: n.value for n in at.number_input}
    # The CLI's defaults: 64 images per step, the source campaign's seeds and generations.
    assert values["Batch size"] == 64
    assert values["Seeds of the new campaigns"] == 5
    assert values["Generations of the new campaigns"] == 40
    name_model(at, "size1")
    at.run()
    launch(at)
    assert "--batch-size=64" in stub.args
    assert not [a for a in stub.args if a.startswith("--fresh")]  # the source campaign's
    stub.code = 0
    at = with_settings(page_opener(home, monkeypatch)("campaign.py", id=cid))
    for label, v in (
        ("Seeds of the new campaigns", 10),
        ("Generations of the new campaigns", 2),
        ("Batch size", 32),
    ):
        [n for n in at.number_input if n.label == label][0].set_value(v)
    name_model(at, "size2")
    at.run()
    stub2 = Stub()
    monkeypatch.setattr(repair.subprocess, "Popen", stub2)
    launch(at)
    for arg in ("--fresh-seeds=10", "--fresh-generations=2", "--batch-size=32"):
        assert arg in stub2.args


#: A setting out of the command's range, and the end of its refusal.
OUT_OF_RANGE = [
    ("Seeds of the new campaigns", 200_000, 5, "is 200000, expected 0 to 100,000"),
    ("Generations of the new campaigns", 0, 40, "is 0, expected 1 to 100,000"),
    ("Batch size", 1, 64, "is 1, expected 2 to 100,000"),
    ("Epochs", 0, 5, "is 0, expected 1 to 1000"),
]


def test_a_setting_out_of_range_is_refused_when_chosen_in_the_form_s_words(failed, monkeypatch):
    home, cid = failed
    at, stub = repair_page(home, monkeypatch, id=cid)
    name_model(at, "range")
    for label, bad, good, said in OUT_OF_RANGE:
        [n for n in at.number_input if n.label == label][0].set_value(bad)
        at.run()  # no Launch pressed: refused as it is chosen
        assert not at.exception
        assert [e.value for e in at.error][0] == f"“{label}” {said}."
        (button,) = [b for b in at.button if b.label == "Launch repair"]
        assert button.disabled
        [n for n in at.number_input if n.label == label][0].set_value(good)
    at.run()
    assert not [e for e in at.error if "“" in e.value]
    assert stub.args == []
