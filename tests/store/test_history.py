"""store/history.py and store/failures.py: a seed's improvements (the Campaign page's
timeline), the generations each seed searched, and the words for seed outcomes."""

from __future__ import annotations

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store, history
from store import campaigns as sc
from store.failures import status_as, target_outcome


def test_improvements_are_the_generations_whose_best_improved_with_their_frames(tmp_path):
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 6}})
    cid = run_campaign(cfg, tmp_path).campaign_id
    store = Store(tmp_path / "latentfuzz.duckdb")
    for seed in (0, 1):
        gens = sc.generations(store, cid, seed)
        imp = history.improvements(store, cid, seed)
        assert imp["generation"].tolist() == gens.loc[gens["image"].notna(), "generation"].tolist()
        assert imp["image_frame"].tolist() == list(range(len(imp)))  # one strip, in order
        assert imp["generation"].iloc[0] == 1  # the initial population's best is a frame
    run = history.generations_run(store, cid)
    last = sc.generations(store, cid).groupby("seed_idx")["generation"].max()
    assert dict(zip(run["seed_idx"], run["generations"], strict=True)) == last.to_dict()


def test_outcome_words_are_the_same_for_counts_and_cards():
    assert status_as("misclassified", "targeted") == "reached target"
    assert status_as("survived", "targeted") == "did not reach target"
    assert status_as("survived", None) == "survived"
    assert status_as("misclassified", "disagree") == "A and B disagree"
    assert status_as("searching", "targeted") == "searching"
    assert target_outcome(True, 4, 9) == "reached target 4"
    assert target_outcome(False, 4, 9) == "did not reach target 4 (predicted 9)"
