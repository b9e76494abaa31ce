"""`latentfuzz repair` end to end on a small real campaign: lineage in the card, equal
counts for the controls, the failures' sources, and one-line refusals that leave the
home as it was."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.labelling.validity import StudyConfig, create_study
from engine.models import zoo
from engine.repair.model import REPORT
from engine.repair.run import repair_events
from engine.repair.settings import RepairSettings
from store import Store, judging
from store import differential as sd
from tests.helpers import CLI

CLASSIFIER = "mnist-convnet"


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, str]:
    """A finished VAE campaign with failures and no validity scores yet."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 4, "seed": 1, "strategy_params": {"generations": 20}})
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def at_home(source, monkeypatch) -> tuple[Path, str]:
    home, cid = source
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    return home, cid


def run(s: RepairSettings, home: Path) -> dict:
    events = list(repair_events(s, home))
    assert events[-1]["stage"] == "done"
    return events[-1]["report"]


def user_models(home: Path) -> list[str]:
    folder = home / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_lineage_is_in_the_card_and_the_controls_add_as_many(at_home) -> None:
    home, cid = at_home
    s = RepairSettings(
        CLASSIFIER,
        campaign=cid,
        validators={"ssim-nearest": None},
        replay=2,
        epochs=1,
        seed=7,
        name="fixed",
        fresh_seeds=0,
    )
    # A run killed before its cleanup (SIGKILL) left its staging folder behind.
    stale = home / "models" / ".repair-999999999-old" / "old"
    stale.mkdir(parents=True)
    report = run(s, home)
    assert not stale.parent.exists()
    # Scored first: the campaign had no validity rows.
    assert set(sd.validity(Store(home / "latentfuzz.duckdb"), cid)["validator"]) == {"ssim-nearest"}
    n = report["counts"]["failures_used"]
    assert n >= 1
    assert report["counts"]["added_per_arm"] == {"repair": n, "random": n, "no-validity": n}
    card = zoo.load_card("fixed")
    parent = zoo.load_card(CLASSIFIER)
    lin = card["lineage"]
    assert lin["parent"] == CLASSIFIER and lin["parent_sha256"] == parent["sha256"]
    assert lin["arm"] == "repair" and lin["seed"] == 7
    assert lin["failures"]["campaign"] == cid and lin["failures"]["used"] == n
    assert lin["failures"]["validators"] == {"ssim-nearest": 0.4}
    assert lin["settings"]["epochs"] == 1 and lin["settings"]["replayed"] == 2 * n
    assert card["architecture"] == parent["architecture"] and card["default"] is False
    assert card["training"]["added_images"] == n
    assert 0 < card["metrics"]["test_accuracy"] <= 1
    assert card["metrics"]["test_images"] == 1000 - n
    assert zoo.load_card("fixed-random")["lineage"]["arm"] == "random"
    names = {c["name"] for c in zoo.list_cards()}
    assert {"fixed", "fixed-random", "fixed-no-validity"} <= names
    on_disk = json.loads((home / "models" / "fixed" / REPORT).read_text())
    assert on_disk["rows"] == report["rows"]
    assert [r["model"] for r in report["rows"]] == ["before", "repair", "random", "no-validity"]
    assert report["rows"][0]["failures_accuracy"] == 0.0  # the parent gets them all wrong
    assert not [p for p in user_models(home) if p.startswith(".")]  # no staging left


def refused(s: RepairSettings, home: Path, match: str) -> str:
    before = user_models(home)
    with pytest.raises(ConfigError, match=match) as e:
        list(repair_events(s, home))
    assert "\n" not in str(e.value)
    assert user_models(home) == before  # nothing half-written
    return str(e.value)


def test_an_unknown_campaign_is_refused(at_home) -> None:
    home, _ = at_home
    s = RepairSettings(CLASSIFIER, campaign="nope", validators={"ssim-nearest": None})
    refused(s, home, r"--from-campaign 'nope': no such campaign")


def test_no_failure_passing_the_validator_is_refused(at_home) -> None:
    home, cid = at_home
    s = RepairSettings(CLASSIFIER, campaign=cid, validators={"ssim-nearest": 1.0}, name="none")
    refused(s, home, r"passes the validator \(ssim-nearest >= 1\)")


def test_a_campaign_without_validator_is_refused() -> None:
    with pytest.raises(ConfigError, match="no --validator"):
        RepairSettings(CLASSIFIER, campaign="c")


def test_a_study_without_verdicts_is_refused_and_a_judged_one_filters(at_home) -> None:
    home, cid = at_home
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], k=1, gold_rate=0.0, name="repair"))
    s = RepairSettings(
        CLASSIFIER, study=sid, replay=1, epochs=1, fresh_seeds=0, name="judged", controls=False
    )
    refused(s, home, r"has a verdict yet")
    judging.join(store, sid, "ann")
    items = store.query("SELECT item_id, expected FROM label_items WHERE study_id = ?", [sid])
    expected = dict(zip(items["item_id"], items["expected"], strict=True))
    first = True
    while (item := judging.next_item(store, sid, "ann")) is not None:
        # One image judged not valid: the repair leaves it out, the no-validity control not.
        answer = -1 if first else int(expected[item])
        judging.answer(store, sid, item, "ann", answer, datetime.now())
        first = False
    report = run(s, home)
    assert report["source"]["study"] == sid
    assert report["counts"]["failures_used"] == len(items) - 1
    assert report["counts"]["failures_unfiltered"] == len(items)


@pytest.mark.slow  # the CLI's start-up; the refusals themselves are tested in process above
def test_the_cli_refuses_in_one_line(source, env) -> None:
    home, _ = source
    p = subprocess.run(
        [
            *CLI,
            "repair",
            "--classifier",
            CLASSIFIER,
            "--from-campaign",
            "nope",
            "--validator",
            "ssim-nearest",
            "--home",
            str(home),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2
    assert p.stderr.startswith("error: --from-campaign 'nope': no such campaign")
    assert p.stderr.count("\n") == 1


@pytest.mark.slow
def test_fresh_campaigns_run_against_the_repaired_model(at_home) -> None:
    home, cid = at_home
    s = RepairSettings(
        CLASSIFIER,
        campaign=cid,
        validators={"ssim-nearest": None},
        replay=1,
        epochs=1,
        name="fresh",
        controls=False,
        fresh_seeds=2,
        fresh_generations=3,
    )
    report = run(s, home)
    before, after = report["rows"]
    store = Store(home / "latentfuzz.duckdb")
    for row, name in ((before, CLASSIFIER), (after, "fresh")):
        c = store.query(
            "SELECT classifier, n_seeds FROM campaigns WHERE id = ?", [row["fresh_campaign"]]
        )
        assert (c["classifier"][0], int(c["n_seeds"][0])) == (name, 2)
        assert "fresh_misclassified_pct" in row and "fresh_iterations_icst" in row
    assert report["fresh"]["seed"] == 2  # the source's seed + 1
