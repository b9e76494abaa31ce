"""SINVAD's class-escape matrix: the seed plan, the config rules, the stored matrix, the
CLI and its CSV, and the test-set confusion stored beside it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch

from engine.campaign.config import ConfigError, parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from engine.campaign.seeding import plan_seeds
from engine.studies.escape import confusion_rates, grid
from store import Store
from store import campaigns as sc
from store import metrics as sm
from tests.helpers import CLI


def _resolved(**raw):
    return resolve(parse_config(raw))


def test_seed_plan_pairs_every_source_with_every_other_class():
    r = _resolved(escape_per_pair=3)
    test = r.dataset.load("test")
    seeds, targets = plan_seeds(
        r.config, r.generator, test.images, test.labels, 10, torch.Generator().manual_seed(0)
    )
    assert r.config.seeds == len(seeds.labels) == 3 * 10 * 9
    pairs = pd.DataFrame({"s": seeds.labels.numpy(), "t": targets.numpy()})
    counts = pairs.value_counts()
    assert len(counts) == 90 and (counts == 3).all()  # every (source, target), 3 times
    assert (pairs["s"] != pairs["t"]).all()
    # One matrix row shares its source images: targets differ, starting points do not.
    row = seeds.source_index[seeds.labels == 4].view(9, 3)
    assert (row == row[0]).all() and len(set(row[0].tolist())) == 3
    assert (test.labels[seeds.source_index] == seeds.labels).all()


def test_seed_plan_of_one_source_class():
    r = _resolved(escape_per_pair=2, target_class=7)
    test = r.dataset.load("test")
    seeds, targets = plan_seeds(
        r.config, r.generator, test.images, test.labels, 10, torch.Generator().manual_seed(0)
    )
    assert r.config.seeds == 18 and set(seeds.labels.tolist()) == {7}
    assert sorted(set(targets.tolist())) == [0, 1, 2, 3, 4, 5, 6, 8, 9]


def test_ordinary_campaigns_keep_their_seed_plan():
    r = _resolved(seeds=5, fitness="targeted", target=2, target_class=1)
    test = r.dataset.load("test")
    seeds, targets = plan_seeds(
        r.config, r.generator, test.images, test.labels, 10, torch.Generator().manual_seed(0)
    )
    assert targets.tolist() == [2] * 5 and set(seeds.labels.tolist()) == {1}
    assert (
        plan_seeds(
            _resolved(seeds=5).config,
            r.generator,
            test.images,
            test.labels,
            10,
            torch.Generator().manual_seed(0),
        )[1]
        is None
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"escape_per_pair": 2, "target": 3}, "drop target"),
        ({"escape_per_pair": 2, "fitness": "margin"}, "needs a targeted objective"),
        ({"escape_per_pair": 2, "seeds": 10}, "makes 180; leave seeds out"),
        ({"escape_per_pair": 999}, "ask for at most"),
    ],
)
def test_escape_config_errors_say_what_to_change(raw, message):
    with pytest.raises(ConfigError, match=message):
        _resolved(**raw)


def test_an_escape_campaign_stores_its_matrix_and_the_confusion(home: Path):
    cfg = parse_config(
        {"escape_per_pair": 2, "target_class": 3, "seed": 1, "strategy_params": {"generations": 30}}
    )
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, res.campaign_id)
    assert len(seeds) == 18 and sorted(seeds["target"].unique()) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    m = sc.escape_matrix(store, res.campaign_id)
    assert m["attempts"].tolist() == [2] * 9 and (m["source"] == 3).all()
    # The matrix is the seeds table grouped: recompute one cell by hand.
    for _, cell in m.iterrows():
        pair = seeds[(seeds["target"] == cell["target"]) & seeds["viable"]]
        assert cell["viable"] == len(pair)
        assert cell["successes"] == int(pair["misclassified"].sum())
        # A success is reaching the target, not any misclassification.
        won = pair[pair["misclassified"].astype(bool)]
        assert (won["final_pred"] == cell["target"]).all()
    assert m["successes"].sum() > 0  # the strong GA escapes from 3 somewhere in 30 steps
    conf = sm.metrics(store, res.campaign_id)["test_confusion"]
    assert len(conf) == 10 and all(len(r) == 10 for r in conf)
    test = resolve(cfg).dataset.load("test")
    assert sum(map(sum, conf)) == len(test)  # the whole (small) test split
    assert [sum(r) for r in conf] == torch.bincount(test.labels, minlength=10).tolist()
    # An ordinary campaign has no matrix.
    other = run_campaign(parse_config({"seeds": 2, "strategy_params": {"generations": 2}}), home)
    assert sc.escape_matrix(store, other.campaign_id).empty


def test_confusion_rates_and_grid():
    conf = confusion_rates([[8, 2, 0], [1, 1, 2], [0, 0, 0]])
    rates = conf.set_index(["source", "target"])["rate"]
    assert rates.dropna().to_dict() == {(0, 1): 0.2, (0, 2): 0.0, (1, 0): 0.25, (1, 2): 0.5}
    assert rates.loc[2].isna().all()  # a class without test images has no rate, not 0
    g = grid(conf, "rate", ["a", "b", "c"])
    assert list(g.index) == ["a", "b", "c"] and list(g.columns) == ["a", "b", "c"]
    assert g.loc["b", "c"] == 0.5 and pd.isna(g.loc["a", "a"])


def test_escape_cli_prints_the_matrix_and_writes_the_csv(home: Path, env, tmp_path: Path):
    out = tmp_path / "escape.csv"
    run = subprocess.run(
        [
            *CLI,
            "escape",
            "--per-pair",
            "1",
            "--source",
            "5",
            "--generations",
            "20",
            "--csv",
            str(out),
            "--home",
            str(home),
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "class escape: success rate, from source (rows) to target" in run.stdout
    assert "median iterations of the successful searches" in run.stdout
    assert "from \\ to" in run.stdout and "mean success rate" in run.stdout
    df = pd.read_csv(out)
    assert list(df.columns[:4]) == ["source", "source_name", "target", "target_name"]
    assert len(df) == 9 and (df["source"] == 5).all()
    cid = sc.list_campaigns(Store(home / "latentfuzz.duckdb"))["id"].iloc[0]
    again = subprocess.run(
        [*CLI, "escape", "--campaign", cid, "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0 and "class escape" in again.stdout
    assert run.stdout.endswith(again.stdout)  # the same matrix, read back from the store


def test_escape_of_a_campaign_without_targets_is_one_line(home: Path, env):
    cid = run_campaign(
        parse_config({"seeds": 2, "strategy_params": {"generations": 2}}), home
    ).campaign_id
    run = subprocess.run(
        [*CLI, "escape", "--campaign", cid, "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "has no per-seed targets" in run.stderr
