"""Validity filters calibrated on a study's verdicts (engine/labelling/study_calibration.py,
store/calibration.py), `labels calibrate`, `labels report` and `validate
--validator NAME=calibrated:STUDY`, on a bundled-GAN campaign whose study two seeded,
simulated labellers answered through the labelling API."""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app
from engine.core.errors import LatentfuzzError
from engine.labelling.agreement import INVALID
from engine.labelling.study_calibration import (
    calibrated_threshold,
    calibration_table,
    roc_points,
    score_study,
)
from engine.labelling.validity import StudyConfig, create_study
from engine.validators import VALIDATORS, Validator
from store import Store, judging
from store import calibration as store_cal
from store import labels as ls
from tests.helpers import CLI

HEADLINE = (
    r"^[a-z-]+ agrees with people at kappa -?\d\.\d\d; "
    r"at 95% precision it decides \d+ of \d+ images$"
)


def simulate(store: Store, sid: str, seed: int, undecided: int | None = None) -> dict:
    """Two labellers answer every item: a seeded half of the failing images invalid, the
    others (and gold) their expected class; on item `undecided` they disagree."""
    items = ls.items(store, sid).set_index("item_id")
    failing = items.index[items["kind"].ne("gold")].to_numpy()
    rng = np.random.default_rng(seed)
    bad = set(rng.permutation(failing)[: len(failing) // 2].tolist())
    for who in ("sim-a", "sim-b"):
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            invalid = (i in bad) != (who == "sim-b" and i == undecided)
            value = INVALID if invalid else int(items.loc[i, "expected"])
            judging.answer(store, sid, i, who, value, datetime.now())
    return {int(i): i not in bad for i in failing}


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, str, str, dict]:
    """(home, campaign, study, {item: valid}): a GAN campaign's failing images in a study
    (k = 2, gold 20%), answered by the simulated labellers, one image left undecided."""
    home = tmp_path_factory.mktemp("home")
    cfg = {"generator": "gan", "seeds": 8, "seed": 1, "strategy_params": {"generations": 30}}
    cid = run_campaign(parse_config(cfg), home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2, seed=3))
    first = int(ls.items(store, sid).query("kind != 'gold'")["item_id"].iloc[0])
    truth = simulate(store, sid, seed=7, undecided=first)
    del truth[first]
    return home, cid, sid, truth


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """Under xdist the console is 80 columns: the table's cells wrap."""
    from engine.cli.common import console

    monkeypatch.setattr(console, "_width", 250)


def run_cli(*args: str, home: Path):
    r = CliRunner().invoke(app, [*args, "--home", str(home)], catch_exceptions=True)
    return r


def test_every_failing_image_is_scored_and_the_table_is_the_metrics_of_its_scores(judged):
    home, _, sid, truth = judged
    store = Store(home / "latentfuzz.duckdb")
    # Named: the default (every filter that can score, five by now) costs the suite a fit.
    done = score_study(store, home, sid, ["discriminator", "ssim-nearest"])
    failing = ls.items(store, sid).query("kind != 'gold'")
    # The GAN's discriminator can score its campaign's images: nothing skipped.
    assert done.scored == {"discriminator": len(failing), "ssim-nearest": len(failing)}
    assert not done.skipped and done.unreadable == 0
    scores = store_cal.study_scores(store, sid)
    assert len(scores) == 2 * len(failing)
    table = calibration_table(store, sid).set_index("validator")
    for name in ("discriminator", "ssim-nearest"):
        s = scores[scores["validator"] == name].set_index("item_id")["score"]
        decided = [i for i in s.index if i in truth]
        y = np.array([truth[i] for i in decided])
        row = table.loc[name]
        assert row["verdict"] == "validity" and pd.isna(row["note"])
        assert (row["n"], row["undecided"], row["unscored"]) == (len(decided), 1, 0)
        assert row["auc"] == pytest.approx(roc_auc_score(y, s[decided]))
        pred = s[decided].to_numpy() >= row["threshold"]
        assert row["kappa"] == pytest.approx(cohen_kappa_score(y, pred))
    # A curve per validator, from (0, 0) to (1, 1).
    roc = roc_points(store, sid)
    assert sorted(roc["validator"].unique()) == ["discriminator", "ssim-nearest"]
    for _, g in roc.groupby("validator"):
        assert (g["fpr"].iloc[0], g["tpr"].iloc[0]) == (0, 0)
        assert (g["fpr"].iloc[-1], g["tpr"].iloc[-1]) == (1, 1)


def test_an_imported_study_skips_the_discriminator_and_counts_images_it_cannot_read(judged):
    """As an imported study holds them: no campaign, and image cells that are URLs or lead
    outside the home; scores of the readable images only, and nothing written for the
    skipped filter."""
    home, _, sid, _ = judged
    store = Store(home / "latentfuzz.duckdb")
    src = ls.items(store, sid).query("kind != 'gold'")
    rows = src[["image", "expected"]].assign(kind="imported").reset_index(drop=True)
    outside = pd.DataFrame(
        {
            "image": ["https://example.org/x.png", "../../../../etc/passwd", "missing.png"],
            "expected": [1, 1, 1],
            "kind": "imported",
        }
    )
    items = pd.concat([rows, outside], ignore_index=True).assign(item_id=lambda d: d.index)
    study = {"id": "imported-x", "dataset": "mnist", "source": "import", "k": 2}
    ls.create_validity_study(store, {**study, "rule": "icst", "seed": 0, "resamples": 100}, items)
    done = score_study(store, home, "imported-x")
    others = sorted(n for n in VALIDATORS.names() if n != "discriminator")
    assert done.scored == {n: len(rows) for n in others}
    assert "discriminator" in done.skipped
    assert "no campaign (an imported study)" in done.skipped["discriminator"]
    assert done.unreadable == 3
    assert store_cal.scored_validators(store, "imported-x") == others
    # Only the discriminator asked for: a one-line refusal, and nothing written.
    r = run_cli("labels", "calibrate", "imported-x", "--validator", "discriminator", home=home)
    assert isinstance(r.exception, LatentfuzzError), r.output
    assert str(r.exception).startswith("no validity filter could score study imported-x: ")
    assert "\n" not in str(r.exception)
    assert store_cal.scored_validators(store, "imported-x") == others


class Preserving(Validator):
    """A fake filter with a label-preservation score: the image's mean brightness, and
    for preservation whether the label is even."""

    name = "fake-preserving"
    default_threshold = 0.5
    describes = "test"
    score_range = (0.0, 1.0)

    def score(self, images, labels):
        return images.double().mean(dim=(1, 2, 3)) / 255

    def preserves(self, images, labels):
        return (labels % 2 == 0).double() + images.double().mean(dim=(1, 2, 3)) / 1e4


def test_a_validator_that_scores_preservation_is_calibrated_over_valid_images(judged, monkeypatch):
    home, _, sid, truth = judged
    monkeypatch.setitem(VALIDATORS._items, "fake-preserving", Preserving)
    store = Store(home / "latentfuzz.duckdb")
    score_study(store, home, sid, ["fake-preserving"])
    table = calibration_table(store, sid, ["fake-preserving"]).set_index("verdict")
    assert list(table.index) == ["validity", "preservation"]
    # Preservation counts valid images only: the simulated labellers preserved every one.
    n_valid = sum(truth.values())
    pres = table.loc["preservation"]
    assert pres["note"].startswith(f"cannot calibrate: all {n_valid} decided images are preserved")
    # The CLI prints the refusal in the table rather than failing.
    r = run_cli("labels", "report", sid, home=home)
    assert r.exit_code == 0, r.output
    assert "cannot calibrate: all" in " ".join(r.output.split())


def test_labels_calibrate_prints_the_table_and_headlines_and_report_writes_the_csv(
    judged, tmp_path
):
    home, _, sid, _ = judged
    # Both named: under xdist this module's tests may run on two workers, each with its
    # own home, so no other test's scores can be counted on.
    r = run_cli(
        "labels",
        "calibrate",
        sid,
        "--validator",
        "ssim-nearest",
        "--validator",
        "discriminator",
        home=home,
    )
    assert r.exit_code == 0, r.output
    lines = [" ".join(x.split()) for x in r.output.splitlines()]
    assert any(x.startswith("ssim-nearest: scored") for x in lines)
    heads = [x for x in lines if "agrees with people" in x]
    assert heads and all(pd.Series(heads).str.match(HEADLINE)), heads
    out = tmp_path / "cal.csv"
    r = run_cli("labels", "report", sid, "--calibration-csv", str(out), home=home)
    assert r.exit_code == 0, r.output
    assert "Validity filters against people" in r.output
    rows = list(csv.DictReader(out.open()))
    assert {"validator", "verdict", "auc", "auc_ci_low", "threshold", "kappa", "decides"} <= set(
        rows[0]
    )
    assert {r["validator"] for r in rows} >= {"discriminator", "ssim-nearest"}


def test_validate_uses_and_records_the_threshold_fitted_on_the_study(judged):
    home, cid, sid, _ = judged
    store = Store(home / "latentfuzz.duckdb")
    score_study(store, home, sid, ["ssim-nearest"])
    fitted = calibrated_threshold(store, sid, "ssim-nearest")
    r = run_cli(
        "validate",
        cid,
        "--validator",
        f"ssim-nearest=calibrated:{sid}",
        "--validator",
        "discriminator=0.3",
        home=home,
    )
    assert r.exit_code == 0, r.output
    assert f"calibrated on {sid}" in " ".join(r.output.split())
    t = store_cal.validity_thresholds(store, [cid]).set_index("validator")
    assert t.loc["ssim-nearest", "threshold"] == pytest.approx(fitted)
    assert t.loc["ssim-nearest", "calibrated_on"] == sid
    assert t.loc["discriminator", "calibrated_on"] is None
    auto = store_cal.auto_validity_table(store, [cid]).set_index("validator")
    rows = store.query(
        "SELECT validator, score FROM validity WHERE campaign_id = ? AND kind = 'result'", [cid]
    )
    ssim = rows[rows["validator"] == "ssim-nearest"]["score"]
    assert auto.loc["ssim-nearest", "valid"] == int((ssim >= fitted).sum())
    assert auto.loc["ssim-nearest", "valid_pct"] == pytest.approx(100 * (ssim >= fitted).mean())
    assert auto.loc["ssim-nearest", "study"] == sid
    assert auto.loc["discriminator", "threshold"] == 0.3
    assert auto.loc["discriminator", "study"] is None
    # Validated again at a fixed threshold: the study is no longer claimed.
    assert run_cli("validate", cid, "--validator", "ssim-nearest=0.2", home=home).exit_code == 0
    assert store_cal.auto_validity_table(store, [cid])["study"].isna().all()


def test_what_calibrated_thresholds_refuse_says_what_to_run(judged):
    home, _, sid, _ = judged
    store = Store(home / "latentfuzz.duckdb")
    empty = create_study(store, home, StudyConfig(campaigns=[judged[1]], gold_rate=0, k=2))
    score_study(store, home, empty, ["ssim-nearest"])
    cases = [
        ("nope", "ssim-nearest", "no validity study 'nope'; `latentfuzz labels list`"),
        (sid, "fake-never", "was never scored on study"),
        (empty, "ssim-nearest", "cannot calibrate: no image has both a score and a decided"),
    ]
    for study, name, says in cases:
        with pytest.raises(LatentfuzzError) as e:
            calibrated_threshold(store, study, name)
        assert says in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(LatentfuzzError, match="labels calibrate .* --validator fake-never"):
        calibrated_threshold(store, sid, "fake-never")


def test_the_cli_refuses_a_calibrated_threshold_in_one_line(judged, env, tmp_path):
    """A real process: `error: ...`, exit 2, no traceback, nothing written."""
    import subprocess

    home, cid, sid, _ = judged
    store = Store(home / "latentfuzz.duckdb")
    before = store.query("SELECT * FROM validity ORDER BY ALL")
    p = subprocess.run(
        [*CLI, "validate", cid, "--validator", f"discriminator=calibrated:{sid}x"],
        env={**env, "LATENTFUZZ_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"error: no validity study '{sid}x'; `latentfuzz labels list` lists them"
    ]
    assert store.query("SELECT * FROM validity ORDER BY ALL").equals(before)


def test_run_refuses_a_calibrated_threshold():
    from engine.cli.differential import parse_validators

    with pytest.raises(LatentfuzzError, match="a calibrated threshold is for `latentfuzz validate"):
        parse_validators(["ssim-nearest=calibrated:s"])
    assert parse_validators(["ssim-nearest=calibrated:s", "x=0.1", "y"], calibrated=True) == {
        "ssim-nearest": "s",
        "x": 0.1,
        "y": None,
    }
    with pytest.raises(LatentfuzzError, match="the study is empty"):
        parse_validators(["ssim-nearest=calibrated:"], calibrated=True)


@pytest.mark.slow  # a fine-tuning and a measurement: about 40 s
def test_repair_takes_a_threshold_fitted_on_a_study_and_records_the_study(judged, monkeypatch):
    """`repair --validator NAME=calibrated:STUDY`: the fitted threshold filters the
    failures, and the lineage names the study it came from."""
    from engine.models import zoo

    home, cid, sid, _ = judged
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    store = Store(home / "latentfuzz.duckdb")
    score_study(store, home, sid, ["ssim-nearest"])
    fitted = calibrated_threshold(store, sid, "ssim-nearest")
    r = run_cli(
        "repair",
        "--classifier",
        "mnist-convnet",
        "--from-campaign",
        cid,
        "--validator",
        f"ssim-nearest=calibrated:{sid}",
        "--epochs",
        "1",
        "--replay",
        "1",
        "--no-controls",
        "--fresh-seeds",
        "0",
        "--name",
        "calibrated-fix",
        home=home,
    )
    assert r.exit_code == 0, f"{r.output} {r.exception}"
    assert f"ssim-nearest: threshold {fitted:.4g}, calibrated on {sid}" in r.output
    lin = zoo.load_card("calibrated-fix")["lineage"]["failures"]
    assert lin["validators"] == {"ssim-nearest": pytest.approx(fitted)}
    assert lin["calibrated_on"] == {"ssim-nearest": sid}


@pytest.fixture(scope="module")
def mixed(judged) -> tuple[Path, str, set, set, dict]:
    """(home, study, GAN items, VAE items, {item: valid}): a study over the GAN campaign
    and a VAE one, answered by the simulated labellers."""
    home, gan, _, _ = judged
    cfg = {"generator": "vae", "seeds": 6, "seed": 2, "strategy_params": {"generations": 30}}
    vae = run_campaign(parse_config(cfg), home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[gan, vae], gold_rate=0, k=2, seed=5))
    truth = simulate(store, sid, seed=11)
    items = ls.items(store, sid)
    from_gan = set(items.loc[items["campaign_id"].eq(gan), "item_id"].astype(int))
    from_vae = set(items["item_id"].astype(int)) - from_gan
    assert from_gan and from_vae
    return home, sid, from_gan, from_vae, truth


def test_a_mixed_generator_study_scores_the_discriminator_on_its_gan_images_only(mixed):
    """The discriminator scores the GAN campaign's images (it cannot judge the VAE's), the
    calibration counts the others as unscored, and the CLI says which images it scored."""
    home, sid, from_gan, from_vae, truth = mixed
    store = Store(home / "latentfuzz.duckdb")
    done = score_study(store, home, sid, ["discriminator"])
    assert done.scored == {"discriminator": len(from_gan)}
    assert "mnist-gan" in done.partly["discriminator"]
    scored = store_cal.study_scores(store, sid, ["discriminator"])
    assert set(scored["item_id"].astype(int)) == from_gan
    row = calibration_table(store, sid).set_index("validator").loc["discriminator"]
    assert (row["n"], row["unscored"]) == (len(from_gan), len(from_vae))
    y = np.array([truth[i] for i in sorted(from_gan)])
    s = scored.set_index("item_id").loc[sorted(from_gan), "score"]
    assert row["auc"] == pytest.approx(roc_auc_score(y, s))
    r = run_cli("labels", "calibrate", sid, "--validator", "discriminator", home=home)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert f"discriminator: scored {len(from_gan)} images (only the images of its mnist-gan" in out


def test_a_mixed_generator_study_is_also_calibrated_per_generator(mixed, judged, tmp_path):
    """Rows per generator, each the metrics of that generator's images alone, in the CLI
    and its CSV beside the pooled rows; a filter that scored none of a generator's images
    has no row for it."""
    from engine.labelling import study_calibration

    home, sid, from_gan, from_vae, truth = mixed
    store = Store(home / "latentfuzz.duckdb")
    score_study(store, home, sid, ["discriminator", "ssim-nearest"])
    apart = study_calibration.calibration_by_generator(store, sid)
    got = apart.query("verdict == 'validity'").set_index(["generator", "validator"])
    assert sorted(got.index) == [
        ("mnist-gan", "discriminator"),
        ("mnist-gan", "ssim-nearest"),
        ("mnist-vae", "ssim-nearest"),
    ]
    scores = store_cal.study_scores(store, sid, ["ssim-nearest"]).set_index("item_id")["score"]
    for gen, ids in (("mnist-gan", sorted(from_gan)), ("mnist-vae", sorted(from_vae))):
        row = got.loc[(gen, "ssim-nearest")]
        y = np.array([truth[i] for i in ids])
        assert row["n"] == len(ids)
        if y.all() or not y.any():
            assert row["note"].startswith("cannot calibrate")
        else:
            assert row["auc"] == pytest.approx(roc_auc_score(y, scores.loc[ids]))
    out = tmp_path / "cal.csv"
    r = run_cli("labels", "report", sid, "--calibration-csv", str(out), home=home)
    assert r.exit_code == 0, r.output
    assert "The same over each generator's images" in " ".join(r.output.split())
    rows = pd.read_csv(out)
    assert list(rows.columns[:2]) == ["generator", "validator"]
    assert sorted(set(rows["generator"])) == ["all", "mnist-gan", "mnist-vae"]
    # The judged study has one generator: no per-generator rows.
    assert study_calibration.calibration_by_generator(store, judged[2]).empty


class Recording(Preserving):
    """A fake filter that keeps the classifier under test it was given."""

    name = "fake-recording"
    seen: list = []

    def __init__(self, generator, dataset, threshold=None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        Recording.seen.append(self.classifier_under_test)


def test_a_filter_is_told_the_classifier_the_study_campaigns_tested(judged, monkeypatch):
    """classifier-confidence must pick a classifier independent of the one under test:
    score_study passes it, as campaign close does."""
    home, cid, sid, _ = judged
    monkeypatch.setitem(VALIDATORS._items, "fake-recording", Recording)
    store = Store(home / "latentfuzz.duckdb")
    tested = store.query("SELECT classifier FROM campaigns WHERE id = ?", [cid])["classifier"]
    score_study(store, home, sid, ["fake-recording"])
    assert Recording.seen == [tested.iloc[0]]
