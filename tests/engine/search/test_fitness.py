"""Objectives (fitness functions and failure criteria) through one Context: unit tests for
each, the config's defaults and checks, and campaigns with the targeted and boundary
objectives end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.campaign.config import objectives, parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.search.fitness import (
    BOUNDARY_UNCHANGED,
    CRITERIA,
    FITNESS,
    Boundary,
    Context,
    Margin,
    Misclassified,
    ReachedTarget,
    Targeted,
)
from store import Store
from store import campaigns as sc

LOGITS = torch.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
EXPECTED = torch.tensor([1, 0])


def test_registered_with_their_names():
    assert FITNESS.names() == ["boundary", "divergence", "escape", "margin", "targeted"]
    assert CRITERIA.names() == ["disagree", "misclassified", "targeted"]
    for reg in (FITNESS, CRITERIA):
        for name in reg:
            assert reg.get(name).name == name


def test_margin_is_expected_logit_minus_best_other():
    assert Margin()(LOGITS, Context(EXPECTED)).tolist() == [3.0, 1.0]
    assert Margin()(LOGITS, Context(torch.tensor([2, 2]))).tolist() == [-3.0, -1.0]


def test_targeted_is_best_other_minus_target_logit_and_fails_at_argmax_target():
    ctx = Context(EXPECTED, target=torch.tensor([2, 0]))
    # Row 0: t=2, others max 5 -> 5 - 2 = 3 (not reached); row 1: t=0 wins by 1 -> -1.
    assert Targeted()(LOGITS, ctx).tolist() == [3.0, -1.0]
    assert ReachedTarget()(LOGITS, ctx).tolist() == [False, True]
    # The expected label plays no part: only the target matters.
    ctx2 = Context(torch.tensor([0, 2]), target=torch.tensor([2, 0]))
    assert torch.equal(Targeted()(LOGITS, ctx2), Targeted()(LOGITS, ctx))


def test_boundary_is_a_constant_until_the_class_changes_then_l1_to_the_seed():
    z = torch.tensor([[1.0, -2.0], [0.5, 0.5]])
    seed = torch.zeros(2, 2)
    # Row 0: argmax 1 == expected 1 -> unchanged; row 1: argmax 0 != expected 2 -> L1 = 1.
    ctx = Context(torch.tensor([1, 2]), latents=z, seed_latents=seed)
    assert Boundary()(LOGITS, ctx).tolist() == [BOUNDARY_UNCHANGED, 1.0]
    # L1, not L2: |1| + |-2| = 3 once the class has changed.
    ctx = Context(torch.tensor([0, 2]), latents=z, seed_latents=seed)
    assert Boundary()(LOGITS, ctx).tolist() == [3.0, 1.0]
    assert Boundary.refines_failures and not Margin.refines_failures


def test_misclassified_criterion():
    assert Misclassified()(LOGITS, Context(EXPECTED)).tolist() == [False, False]
    assert Misclassified()(LOGITS, Context(torch.tensor([0, 2]))).tolist() == [True, True]


def test_an_objective_missing_its_context_says_which_field():
    with pytest.raises(ValueError, match="context.target"):
        Targeted()(LOGITS, Context(EXPECTED))
    with pytest.raises(ValueError, match="context.latents"):
        Boundary()(LOGITS, Context(EXPECTED))


def test_defaults_follow_the_strategy_and_the_fitness():
    f, c = objectives(parse_config({}))
    assert (f.name, c.name) == ("margin", "misclassified")
    f, c = objectives(parse_config({"strategy": "sinvad"}))
    assert (f.name, c.name) == ("boundary", "misclassified")
    f, c = objectives(parse_config({"fitness": "targeted", "target": 3}))
    assert (f.name, c.name) == ("targeted", "targeted")


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({"fitness": "targeted"}, "needs a target class; give target=<class>"),
        ({"fitness": "targeted", "target": 3, "target_class": 3}, "escape to another class"),
        ({"fitness": "nope"}, "fitness 'nope' unknown"),
        ({"criterion": "nope"}, "criterion 'nope' unknown"),
        # A target without a targeted objective was stored and ignored (a margin search).
        ({"target": 3}, r"target=3 is read only by a targeted objective.*--fitness targeted"),
        ({"target": 3, "fitness": "margin"}, "fitness 'margin' with criterion"),
    ],
)
def test_objective_config_errors(cfg, match):
    with pytest.raises(ConfigError, match=match):
        objectives(parse_config(cfg))


def test_a_data_dir_for_a_dataset_that_reads_no_files_is_refused():
    """`--data-dir /nonexistent` ran on the embedded MNIST and was stored in the config."""
    from engine.campaign.resolve import resolve

    with pytest.raises(ConfigError, match="dataset 'mnist' reads no files .*drop data_dir"):
        resolve(parse_config({"data_dir": "/nonexistent"}))


def test_target_beyond_the_classes_is_rejected_before_anything_is_written(home: Path):
    with pytest.raises(ConfigError, match="target=12, but mnist has classes 0..9"):
        run_campaign(parse_config({"fitness": "targeted", "target": 12}), home)
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())


def _run(home: Path, **kw):
    res = run_campaign(parse_config({"seeds": 4, "seed": 1, **kw}), home)
    return res, Store(home / "latentfuzz.duckdb")


def test_targeted_campaign_fails_only_by_reaching_the_target(home: Path):
    res, store = _run(
        home,
        fitness="targeted",
        target=3,
        strategy_params={"generations": 60, "perturbation": "custom", "step": 0.3},
    )
    seeds = sc.seeds(store, res.campaign_id)
    camp = sc.campaign(store, res.campaign_id)
    assert (camp["config"]["fitness"], camp["config"]["criterion"]) == ("targeted", "targeted")
    # A seed already of the target class fails at once: it is not viable.
    assert not seeds.loc[seeds["seed_label"] == 3, "viable"].any()
    failed = seeds[seeds["misclassified"].fillna(False).astype(bool)]
    assert len(failed) > 0
    assert (failed["final_pred"] == 3).all()
    assert (failed["final_fitness"] < 0).all()


def test_boundary_with_the_ga_keeps_refining_and_returns_the_closest_failure(home: Path):
    res, store = _run(
        home,
        fitness="boundary",
        strategy_params={"generations": 12, "perturbation": "custom", "step": 0.3},
    )
    cid = res.campaign_id
    seeds = sc.seeds(store, cid)
    viable = seeds[seeds["viable"]]
    failed = viable[viable["misclassified"].astype(bool)]
    assert len(failed) > 0
    # No seed stopped at its first failure: all ran the whole budget.
    gens = sc.generations(store, cid)
    assert (gens.groupby("seed_idx")["generation"].max() == 12).all()
    for _, row in failed.iterrows():
        ind = sc.individuals(store, cid, int(row["seed_idx"]))
        last = ind[ind["generation"] == 12]
        closest = last.loc[last["pred"] != row["seed_label"], "fitness"].min()
        assert row["final_fitness"] == pytest.approx(closest)
        assert row["final_fitness"] < BOUNDARY_UNCHANGED
        assert row["final_pred"] != row["seed_label"]
        # Refinement: the best failing distance never grows over the generations.
        best = gens[gens["seed_idx"] == row["seed_idx"]]["best_fitness"]
        assert (best.diff().dropna() <= 0).all()


def test_an_older_campaign_that_stored_an_ignored_target_or_data_dir_still_resolves():
    """Refusing them for new campaigns must not strand stored ones: resume and validate
    rebuild the config from the record."""
    from engine.campaign.config import from_record

    cfg = from_record(
        {"fitness": "margin", "criterion": "misclassified", "target": 3, "data_dir": "/nowhere"}
    )
    assert cfg.target is None and cfg.data_dir is None
    objectives(cfg)  # no refusal
    kept = from_record({"fitness": "targeted", "criterion": "targeted", "target": 3})
    assert kept.target == 3  # a target that was used stays
