"""Differential campaigns end to end on the bundled GAN: two classifiers, the archive of
triggering inputs, validity filters, the differential figures, and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from store import Store
from store import campaigns as sc
from store import differential as sd
from store import metrics as sm


def diff_campaign(home: Path, strategy: str = "ga", **params):
    cfg = parse_config(
        {
            "generator": "gan",
            "classifier": "convnet",
            "classifier_b": "lenet5",
            "strategy": strategy,
            "seeds": 3,
            "seed": 3,
            "strategy_params": {
                "generations": 6,
                "population": 20,
                "stop_at_failure": False,
                **({"best_left": 5} if strategy == "ga" else {}),
                **params,
            },
        }
    )
    return run_campaign(cfg, home).campaign_id, Store(home / "latentfuzz.duckdb")


@pytest.fixture(scope="module")
def ga_diff(tmp_path_factory):
    home = tmp_path_factory.mktemp("diff")
    cid, store = diff_campaign(home)
    return home, cid, store


def test_both_classifiers_labels_are_stored_where_one_is_today(ga_diff):
    home, cid, store = ga_diff
    c = sc.campaign(store, cid)
    assert c["classifier"] == "mnist-convnet" and c["classifier_b"] == "mnist-lenet5"
    assert c["config"]["fitness"] == "divergence" and c["config"]["archive"] is True
    seeds = sc.seeds(store, cid)
    assert seeds["seed_pred_b"].notna().all() and seeds["final_pred_b"].notna().all()
    gens = sc.generations(store, cid)
    assert gens["best_pred_b"].notna().all()
    ind = sc.individuals(store, cid, 0)
    assert ind["pred_b"].notna().all()
    # A seed that failed ends on an input the two label differently.
    failed = seeds[seeds["misclassified"].astype(bool)]
    assert len(failed) and (failed["final_pred"] != failed["final_pred_b"]).all()


def test_every_distinct_triggering_input_is_archived_and_scored(ga_diff):
    home, cid, store = ga_diff
    arch = sd.archive(store, cid)
    assert len(arch) > 3  # not only each seed's first
    assert (arch["pred"] != arch["pred_b"]).all()
    assert arch["image"].map(lambda p: (home / p).is_file()).all()
    assert {"score_ssim-nearest", "score_discriminator"} <= set(arch.columns)
    assert arch["score_ssim-nearest"].between(-1, 1).all()
    v = sd.validity(store, cid)
    assert set(v["kind"]) == {"archive", "result"}
    assert v.loc[v.validator == "ssim-nearest", "threshold"].eq(0.4).all()
    figs = sm.metrics(store, cid)["differential"]
    assert figs["triggering"] == len(arch)
    assert figs["valid_triggering"] == int(arch["valid"].sum())
    assert figs["triggering_per_1k"] == pytest.approx(1000 * len(arch) / figs["evaluations"])
    assert sum(figs[k] for k in ("all_only_a_right", "all_only_b_right", "all_both_wrong")) == len(
        arch
    )


def test_validate_rescores_with_another_threshold(ga_diff, capsys):
    from engine.cli.main import app

    home, cid, store = ga_diff
    from typer.testing import CliRunner

    out = CliRunner().invoke(
        app, ["validate", cid, "--validator", "ssim-nearest=0.0", "--home", str(home)]
    )
    assert out.exit_code == 0, out.output
    v = sd.validity(store, cid)
    assert v.loc[v.validator == "ssim-nearest", "valid"].all()
    # Only the filter named is rescored: an input is valid when it passes every filter,
    # so now exactly those the discriminator lets through.
    arch = sd.archive(store, cid)
    assert arch["valid_ssim-nearest"].all()
    figs = sm.metrics(store, cid)["differential"]
    assert figs["valid_triggering"] == int(arch["valid_discriminator"].sum()) < figs["triggering"]


def test_single_classifier_campaigns_keep_their_shape(tmp_path: Path):
    cfg = parse_config({"seeds": 2, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, tmp_path).campaign_id
    store = Store(tmp_path / "latentfuzz.duckdb")
    assert sc.seeds(store, cid)["seed_pred_b"].isna().all()
    assert sd.archive(store, cid).empty and sd.validity(store, cid).empty
    assert sm.metrics(store, cid)["differential"] is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"fitness": "divergence"}, "compares two classifiers; name the second one"),
        ({"criterion": "disagree"}, "compares two classifiers"),
        # Named by the strategy whose default it is, not by a fitness never given.
        ({"strategy": "nsga2"}, "strategy 'nsga2' searches for disagreements of two"),
        ({"classifier": "convnet", "classifier_b": "mnist-convnet"}, "the same model"),
        ({"classifier_b": "lenet5", "validators": {"nope": None}}, "filter 'nope' unknown"),
        (
            {"generator": "vae", "classifier_b": "lenet5", "validators": {"discriminator": None}},
            "needs a GAN with its discriminator",
        ),
        ({"classifier_b": "nonesuch"}, "no classifier 'nonesuch'"),
    ],
)
def test_differential_config_errors_are_one_line(raw: dict, message: str):
    with pytest.raises(ConfigError, match=message) as e:
        resolve(parse_config({"generator": "gan", **raw}))
    assert "\n" not in str(e.value)


def test_default_filters_follow_the_generator():
    def chosen(generator: str) -> set[str]:
        cfg = parse_config({"generator": generator, "classifier_b": "lenet5"})
        return set(resolve(cfg).validators)

    assert chosen("gan") == {"discriminator", "ssim-nearest"}
    assert chosen("vae") == {"ssim-nearest"}
    assert resolve(parse_config({"generator": "gan"})).validators == {}


def test_discriminator_scores_real_digits_above_noise():
    from engine.validators import VALIDATORS

    r = resolve(parse_config({"generator": "gan"}))
    f = VALIDATORS.get("discriminator")(r.generator, r.dataset)
    test = r.dataset.load("test")
    real = (test.images[:200] * 255).round().to(torch.uint8)
    noise = torch.randint(
        0, 256, real.shape, generator=torch.Generator().manual_seed(0), dtype=torch.uint8
    )
    labels = test.labels[:200]
    s_real, s_noise = f.score(real, labels), f.score(noise, labels)
    assert 0 < f.threshold < 1  # calibrated: 95% of real training digits reach it
    assert float((s_real >= f.threshold).float().mean()) > 0.8
    assert float((s_noise >= f.threshold).float().mean()) < 0.2


def test_a_study_of_triggering_inputs_says_which_classifier_people_agree_with(ga_diff):
    from datetime import datetime

    from engine.labelling import statistics as label_stats
    from engine.labelling import validity as labelling
    from store import judging
    from store import labels as ls

    home, cid, store = ga_diff
    cfg = labelling.StudyConfig(campaigns=[cid], k=2, gold_rate=0.0, triggering=True, sample=6)
    sid = labelling.create_study(store, home, cfg)
    items = ls.items(store, sid).set_index("item_id")
    assert (items["kind"] == "triggering").all() and len(items) == 6
    assert (items["predicted"] != items["predicted_b"]).all()
    # Both labellers give A's label to the first four items, B's to the last two.
    for who in ("ann", "bob"):
        judging.join(store, sid, who)
        while (item := judging.next_item(store, sid, who)) is not None:
            row = items.loc[item]
            answer = row["predicted"] if item < 4 else row["predicted_b"]
            judging.answer(store, sid, item, who, int(answer), datetime.now())
    s, v, _ = label_stats.load(store, sid)
    sides = label_stats.model_agreement(v, s["rule"]).iloc[0]
    assert (sides["valid"], sides["humans_agree_a"], sides["humans_agree_b"]) == (6, 4, 2)


def test_the_cli_names_a_missing_second_classifier_in_one_line(tmp_path: Path):
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "run",
            "--fitness",
            "divergence",
            "--seeds",
            "1",
            "--home",
            str(tmp_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--classifier-b" in lines[0] and "Traceback" not in out.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "run",
            "--classifier-b",
            "lenet5",
            "--validator",
            "ssim-nearest=abc",
            "--home",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "is not a number" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_an_interrupted_nsga2_campaign_resumes_to_the_same_archive(tmp_path: Path):
    """The archive is written with its generation's rows, so a resume's replay neither
    loses nor repeats a find."""
    from engine.campaign.resume import resume_campaign

    raw = {
        "generator": "gan",
        "classifier": "convnet",
        "classifier_b": "lenet5",
        "strategy": "nsga2",
        "seeds": 2,
        "seed": 5,
        "validators": {},
        "strategy_params": {"generations": 6, "population": 12, "cluster_every": 2},
    }

    def stop_at_4(p) -> None:
        if p.generation == 4:
            raise KeyboardInterrupt

    whole = run_campaign(parse_config(raw), tmp_path / "a").campaign_id
    cut = run_campaign(parse_config(raw), tmp_path / "b", progress=stop_at_4)
    assert cut.status == "interrupted"
    b = Store(tmp_path / "b" / "latentfuzz.duckdb")
    assert len(sd.archive(b, cut.campaign_id)) > 0
    assert resume_campaign(tmp_path / "b", cut.campaign_id).status == "finished"
    a = sd.archive(Store(tmp_path / "a" / "latentfuzz.duckdb"), whole)
    r = sd.archive(b, cut.campaign_id)
    cols = ["entry", "seed_idx", "generation", "label", "pred", "pred_b", "fitness"]
    assert len(a) > 0
    assert a[cols].equals(r[cols])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"strategy": "nsga2", "strategy_params": {"embedding": "foo"}}, "embedding"),
        ({"validators": {"ssim-nearest": 5.0}}, "outside its scores' range"),
        ({"validators": {"discriminator": -0.5}}, "outside its scores' range"),
    ],
)
def test_review_findings_are_refused_in_one_line(raw: dict, message: str):
    with pytest.raises(ConfigError, match=message) as e:
        resolve(parse_config({"generator": "gan", "classifier_b": "lenet5", **raw}))
    assert "\n" not in str(e.value)


def test_a_search_with_its_first_finds_gets_representatives_at_once():
    from engine.search.diversity import DiversityArchive

    arch = DiversityArchive(2, "pca", 0)
    f = torch.nn.functional.normalize(torch.rand(3, 4), dim=1)
    arch.add(f[:1], torch.tensor([0]))
    arch.recluster()
    assert not arch.unrepresented()
    arch.add(f[1:], torch.tensor([1, 1]))  # search 1 finds its first inputs later
    assert arch.unrepresented()
    arch.recluster()
    assert not arch.unrepresented()


def test_a_campaign_that_searched_nothing_has_no_figures_and_its_page_says_so(
    tmp_path: Path, monkeypatch
):
    """B says 1 for every image, so on class-3 seeds A and B disagree from the start and
    no seed is viable: nothing is searched, and no figures come from zero evaluations."""
    from tests.helpers import page_opener

    class One(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.zeros(x.shape[0], 10)
            out[:, 1] = 1.0
            return out

    path = tmp_path / "one.pt"
    torch.jit.save(torch.jit.script(One()), str(path))
    cfg = parse_config(
        {
            "generator": "gan",
            "classifier_b": str(path),
            "strategy": "nsga2",
            "seeds": 2,
            "target_class": 3,
            "strategy_params": {"generations": 2, "population": 8},
        }
    )
    cid = run_campaign(cfg, tmp_path).campaign_id
    store = Store(tmp_path / "latentfuzz.duckdb")
    assert sc.summary(store, cid)["viable"] == 0
    assert sm.metrics(store, cid)["differential"] is None
    at = page_opener(tmp_path, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert any("latentfuzz validate" in i.value for i in at.info)


def test_a_wall_clock_campaign_is_not_resumed(tmp_path: Path):
    from engine.campaign.resume import resume_campaign
    from engine.core.errors import LatentfuzzError

    def stop(p) -> None:
        raise KeyboardInterrupt

    cfg = parse_config(
        {
            "generator": "gan",
            "classifier_b": "lenet5",
            "strategy": "nsga2",
            "seeds": 1,
            "validators": {},
            "strategy_params": {"generations": 3, "population": 8, "seconds": 600},
        }
    )
    cut = run_campaign(cfg, tmp_path, progress=stop)
    assert cut.status == "interrupted"
    with pytest.raises(LatentfuzzError, match="wall-clock budget"):
        resume_campaign(tmp_path, cut.campaign_id)


def test_its_export_names_both_answers_and_files_disagreements_apart(ga_diff, tmp_path):
    """The zip filed its seeds under misclassified/ as "predicted5": A's answer alone."""
    import zipfile

    from engine.io.export import export_zip

    home, cid, store = ga_diff
    seeds = sc.seeds(store, cid)
    export_zip(store, home, cid, tmp_path / "d.zip")
    names = zipfile.ZipFile(tmp_path / "d.zip").namelist()
    for r in seeds[seeds["result_image"].notna()].itertuples():
        folder = "disagree" if r.misclassified else "agree"
        stem = (
            f"{folder}/seed{r.seed_idx:04d}_expected{r.seed_label}_A{int(r.final_pred)}"
            f"_B{int(r.final_pred_b)}_iter{int(r.iterations)}"
        )
        assert f"{stem}_result.png" in names, names
    assert not [n for n in names if n.startswith("misclassified/")]


def test_a_validator_with_an_empty_threshold_is_refused():
    """`--validator discriminator=` ran with the default threshold, as if none was meant."""
    from engine.cli.differential import parse_validators
    from engine.core.errors import LatentfuzzError

    assert parse_validators(["discriminator", "ssim-nearest=0.4"]) == {
        "discriminator": None,
        "ssim-nearest": 0.4,
    }
    with pytest.raises(LatentfuzzError, match="the threshold is empty; give NAME=THRESHOLD"):
        parse_validators(["discriminator="])
