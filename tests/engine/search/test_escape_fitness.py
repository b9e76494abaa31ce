"""SINVAD's class-escape fitness (its Eq. 4): the score on constructed logits and latents,
the escape campaign's default objective, and its rule that every drawn seed is searched,
one the classifier already gets wrong included."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.campaign.config import objectives, parse_config
from engine.campaign.runner import run_campaign
from engine.search.fitness import (
    BOUNDARY_UNCHANGED,
    FITNESS,
    Context,
    Escape,
    Margin,
    ReachedTarget,
    Targeted,
)
from store import Store
from store import campaigns as sc

LOGITS = torch.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0], [0.0, 1.0, 9.0]])


def test_eq4_is_a_constant_until_the_target_is_top_then_l1_to_the_seed():
    z = torch.tensor([[1.0, -2.0], [0.5, 0.5], [-1.0, 3.0]])
    seed = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    ctx = Context(
        torch.tensor([0, 2, 1]), latents=z, seed_latents=seed, target=torch.tensor([1, 2, 2])
    )
    # Row 0: target 1 is top -> |1| + |-2| = 3 (L1, not L2). Row 1: class 0 is top, not the
    # target 2 -> the constant, although the expected class 2 lost too. Row 2: target 2 is
    # top -> |-2| + |2| = 4.
    assert Escape()(LOGITS, ctx).tolist() == [3.0, BOUNDARY_UNCHANGED, 4.0]
    assert FITNESS.get("escape") is Escape and Escape.criterion == "targeted"
    assert ReachedTarget()(LOGITS, ctx).tolist() == [True, False, True]
    # The reference goes on once the target is reached, pulling towards the seed.
    assert Escape.refines_failures and Escape.unreached == BOUNDARY_UNCHANGED
    assert Targeted.unreached is None and Margin.unreached is None


def test_escape_campaigns_use_eq4_unless_told_targeted():
    f, c = objectives(parse_config({"escape_per_pair": 2}))
    assert (f.name, c.name) == ("escape", "targeted")
    f, c = objectives(parse_config({"escape_per_pair": 2, "fitness": "targeted"}))
    assert (f.name, c.name) == ("targeted", "targeted")


def test_eq4_searches_every_seed_where_the_others_keep_giftbench_viability():
    ctx = Context(torch.tensor([1, 1, 1]), target=torch.tensor([2, 2, 0]))
    # Row 0: right (1) -> searched by all. Row 1: wrong (0). Row 2: wrong, at its target 0.
    crit = ReachedTarget()
    assert Escape().viable(LOGITS, ctx, crit).tolist() == [True, True, True]
    assert Targeted().viable(LOGITS, ctx, crit).tolist() == [True, False, False]
    assert Margin().viable(LOGITS, ctx, crit).tolist() == [True, False, False]


def test_an_escape_seed_the_classifier_gets_wrong_is_searched(home: Path):
    """Seed 1 draws a 5 whose generated image the classifier reads as a 0: the reference
    searches it towards every target (and 5 -> 0 succeeds at once); it was dropped."""
    params = {"generations": 10, "population": 6, "elites": 2}
    cfg = {"escape_per_pair": 1, "seed": 1, "strategy": "sinvad"}
    res = run_campaign(parse_config({**cfg, "strategy_params": params}), home)
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, res.campaign_id)
    wrong = seeds[seeds["seed_pred"] != seeds["seed_label"]]
    assert len(wrong) > 0  # the case this test is about
    assert seeds["viable"].all() and (seeds["status"] != "non-viable").all()
    searched = set(sc.generations(store, res.campaign_id)["seed_idx"])
    assert set(wrong["seed_idx"]) <= searched
    already = wrong[wrong["seed_pred"] == wrong["target"]]
    assert len(already) and already["misclassified"].astype(bool).all()
    m = sc.escape_matrix(store, res.campaign_id)
    assert (m["viable"] == m["attempts"]).all()


@pytest.mark.parametrize("fitness", ["escape", "targeted"])
def test_the_escape_cli_names_its_objective(fitness):
    f, _ = objectives(parse_config({"escape_per_pair": 1, "fitness": fitness}))
    assert f.name == fitness
