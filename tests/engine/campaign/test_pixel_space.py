"""Campaigns of the pixel-space baselines: the strategy's own generator, the refusals
before anything is written, and each baseline's budget spent exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.search.strategies import STRATEGIES
from store import Store
from store import campaigns as sc
from tests.engine.campaign.test_checkpoint import (
    assert_identical,
    every_generation,  # noqa: F401  (the fixture)
    interrupted_and_resumed,
)
from tests.engine.classifiers.test_onnx import Net, export

#: Small settings per baseline, searching on past failures so that every seed spends its
#: whole budget.
SMALL = {
    "pixel-ga": {"generations": 3, "population": 6, "elites": 2},
    "mutation": {"generations": 3, "population": 5, "queue": 4},
    "fgsm": {"epsilons": 4},
    "pgd": {"steps": 3, "restarts": 2},
}


def test_every_pixel_space_strategy_is_covered():
    own = {n for n in STRATEGIES.names() if STRATEGIES.get(n).generator_family == "pixel"}
    assert own == set(SMALL)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_baseline_spends_exactly_its_budget_on_every_seed(home: Path, name: str):
    cfg = parse_config(
        {
            "strategy": name,
            "seeds": 2,
            "seed": 3,
            "strategy_params": {**SMALL[name], "stop_at_failure": False},
        }
    )
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    row = sc.campaign(store, res.campaign_id)
    assert row["generator"] == "pixel" and row["config"]["generator"] == "pixel"
    cls = STRATEGIES.get(name)
    budget = cls.budget(cls.Params(**SMALL[name]))
    assert row["config"]["evaluation_budget"] == budget
    seeds = sc.seeds(store, res.campaign_id)
    assert seeds["viable"].all()
    assert seeds["evaluations"].tolist() == [budget, budget]
    assert res.search_evaluations == 2 * budget


def test_the_strategys_own_generator_is_recorded_and_resolves_again():
    r = resolve(parse_config({"strategy": "fgsm", "seeds": 2}))
    assert r.generator.family == "pixel" and r.generator_name == "pixel"
    assert r.model_hashes == {r.classifier_name: r.model_hashes[r.classifier_name]}
    # A stored config names it, and is taken as it was stored (a resume).
    again = resolve(parse_config(r.config.model_dump()))
    assert again.generator_name == "pixel"


def refused(home: Path, *args: str) -> str:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "run",
            "--home",
            str(home),
            "--seeds",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert not (home / "latentfuzz.duckdb").exists() and not (home / "campaigns").exists()
    return lines[0]


def test_another_generator_named_for_a_pixel_strategy_is_refused(tmp_path: Path):
    line = refused(tmp_path / "h", "--strategy", "pgd", "--generator", "gan")
    assert "strategy 'pgd' searches pixel space, but generator 'gan' was given" in line
    assert "drop generator (--generator)" in line


def test_the_pixel_generator_for_a_latent_strategy_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="generator 'pixel' is searched only by strategies"):
        resolve(parse_config({"strategy": "ga", "generator": "pixel", "seeds": 2}))


def test_an_onnx_classifier_is_refused_by_the_gradient_attacks(tmp_path: Path):
    onnx_file = export(Net().eval(), tmp_path / "net.onnx")
    line = refused(tmp_path / "h", "--strategy", "fgsm", "--classifier", str(onnx_file))
    assert "strategy 'fgsm' takes gradients through the classifier, but net.onnx" in line
    # A black-box baseline runs it.
    r = resolve(parse_config({"strategy": "mutation", "classifier": str(onnx_file), "seeds": 2}))
    assert r.generator_name == "pixel"


def test_a_gradient_attack_needs_a_signed_objective():
    with pytest.raises(ConfigError, match="fitness 'boundary'; use fitness margin or targeted"):
        resolve(parse_config({"strategy": "pgd", "fitness": "boundary", "seeds": 2}))


def test_a_gradient_attack_refuses_two_classifiers_and_escape_matrices():
    with pytest.raises(ConfigError, match="attacks one classifier, but classifier_b"):
        resolve(parse_config({"strategy": "fgsm", "classifier_b": "lenet5", "seeds": 2}))
    with pytest.raises(ConfigError, match="not an escape matrix"):
        resolve(parse_config({"strategy": "pgd", "escape_per_pair": 1}))


@pytest.mark.parametrize("name", ["mutation", "pgd"])
def test_a_baseline_stopped_half_way_resumes_from_its_checkpoint_to_identical_results(
    tmp_path: Path, every_generation, name: str
):
    params = {"mutation": {"generations": 6, "population": 5, "queue": 4}, "pgd": {"steps": 5}}
    raw = {"strategy": name, "seeds": 3, "seed": 2, "strategy_params": params[name]}
    a, b, _ = interrupted_and_resumed(tmp_path, raw, 3)
    assert_identical(a, b)
