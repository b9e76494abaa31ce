"""SINVAD's operators one by one: the Bernoulli reset mask, step decay, the per-seed step
and the stop rule, and a small campaign with its boundary objective."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from pydantic import ValidationError

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.search.fitness import BOUNDARY_UNCHANGED, Boundary, Escape
from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.operators import reset_mask
from engine.search.strategies.sinvad import Sinvad, SinvadParams, decay_step
from engine.search.termination import Status
from store import Store
from store import campaigns as sc

SPACE = SearchSpace((6,), -5.0, 5.0)


def rng(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_registered_with_the_papers_defaults():
    assert STRATEGIES.get("sinvad") is Sinvad
    p = SinvadParams()
    assert (p.population, p.elites, p.generations) == (50, 20, 500)
    assert (p.init_noise, p.step, p.decay, p.min_step, p.mask_p) == (0.7, 0.1, 0.7, 1e-3, 0.5)
    assert p.grow == 1.2  # the escape notebook's (RQ4)
    assert Sinvad.default_fitness == "boundary"


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"population": 20, "elites": 20}, "elites=20 must be smaller than population=20"),
        ({"step": 0.01, "min_step": 0.01}, "must be below step"),
        ({"decay": 1.0}, "less than 1"),
        ({"mask_p": 1.5}, "less than or equal to 1"),
    ],
)
def test_invalid_params_are_rejected(kw, match):
    with pytest.raises(ValidationError, match=match):
        SinvadParams(**kw)


def test_mask_resets_genes_to_the_seed_with_probability_p():
    seed = torch.zeros(2, 500)
    children = torch.ones(2, 40, 500)
    out = reset_mask(children, seed, 0.5, rng())
    reset = out == 0
    # Every gene is either the seed's or the child's, and about half are reset.
    assert ((out == 0) | (out == 1)).all()
    assert abs(reset.float().mean().item() - 0.5) < 0.01
    assert torch.equal(reset_mask(children, seed, 0.0, rng()), children)
    assert torch.equal(reset_mask(children, seed, 1.0, rng()), seed[:, None].expand_as(children))


def test_step_decays_by_the_factor_when_unchanged_and_resets_on_change():
    step = torch.tensor([0.1, 0.05, 0.02])
    best = torch.tensor([3.0, 2.0, 1.0])
    prev = torch.tensor([3.0, 2.5, 1.0])
    new = decay_step(step, 0.1, 0.7, best, prev)
    assert new.tolist() == pytest.approx([0.07, 0.1, 0.014])


def stops(s: Sinvad, generation: int) -> torch.Tensor:
    """(S,): the seeds SINVAD's termination stops after `generation`, none failing."""
    failed = torch.zeros(len(s.seed), dtype=torch.bool)
    return s.termination().stops(Status(generation, failed, s.state().step))


def test_each_seed_has_its_own_step_and_stops_below_the_floor():
    """Seed 0 stagnates, seed 1 improves every generation: only seed 0 decays and stops,
    after the number of decays that takes 0.1 below 1e-3 (0.1 x 0.7^13 < 1e-3)."""
    s = Sinvad(SinvadParams(population=4, elites=2), SPACE)
    g = rng()
    s.start(torch.zeros(2, 6), g)
    logits = torch.zeros(2, 4, 10)
    generations = 0
    for gen in range(1, 40):
        slots, _ = s.ask()
        scores = torch.zeros(2, len(slots))
        scores[0] = 5.0  # unchanged best
        scores[1] = -float(gen)  # a new best every generation
        s.tell(slots, scores, logits[:, : len(slots)])
        generations = gen
        if stops(s, gen).any():
            break
        s.advance(g)
    assert stops(s, generations).tolist() == [True, False]
    # Generation 1 sets the best; 13 stagnant generations take 0.1 to 0.1 x 0.7^13 < 1e-3.
    assert generations == 14
    assert s.state().step[0].item() == pytest.approx(0.1 * 0.7**13)
    assert s.state().step[1].item() == pytest.approx(0.1)


def test_children_mutate_only_genes_that_differ_from_the_seed():
    """Elites equal to the seed breed children equal to the seed: the noise only touches
    genes that differ from it, and the mask only resets towards it."""
    s = Sinvad(SinvadParams(population=5, elites=2, init_noise=1.0), SPACE)
    s.start(torch.zeros(1, 6), rng())
    s.pop[0, :2] = 0.0
    s.tell(torch.arange(5), torch.tensor([[0.0, 0.0, 9.0, 9.0, 9.0]]), torch.zeros(1, 5, 10))
    s.advance(rng(1))
    assert torch.equal(s.pop, torch.zeros(1, 5, 6))
    assert s.ask()[0].tolist() == [2, 3, 4]  # elites keep their scores


def test_campaign_finds_boundary_inputs_and_stops_by_the_step_rule(home: Path):
    params = {"generations": 300, "population": 12, "elites": 4}
    cfg = parse_config({"strategy": "sinvad", "seeds": 3, "seed": 1, "strategy_params": params})
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, res.campaign_id)
    gens = sc.generations(store, res.campaign_id)
    viable = seeds[seeds["viable"]]
    assert len(viable) > 0
    last = gens.groupby("seed_idx")["generation"].max()
    # Every viable seed stopped by the step rule, long before the budget.
    assert (last < 300).all()
    final_steps = gens.loc[gens.groupby("seed_idx")["generation"].idxmax(), "step"]
    assert (final_steps < 1e-3).all()
    failed = viable[viable["misclassified"].astype(bool)]
    assert len(failed) > 0
    assert (failed["final_fitness"] < BOUNDARY_UNCHANGED).all()
    assert (failed["final_pred"] != failed["seed_label"]).all()


U = BOUNDARY_UNCHANGED


def test_escape_step_rule_decays_on_stagnation_grows_when_none_reached_else_resets():
    step = torch.full((4,), 0.1)
    best = torch.tensor([U, U, 3.0, 3.0])
    prev = torch.tensor([U, 5.0, 5.0, 3.0])
    new = decay_step(step, 0.1, 0.7, best, prev, grow=1.2, unreached=U)
    # Unchanged (even at "not reached") x0.7; changed but none reached x1.2; improved:
    # back to the base step.
    assert new.tolist() == pytest.approx([0.07, 0.12, 0.1, 0.07])
    # A fitness without a "not reached" score has no growth branch.
    assert decay_step(step, 0.1, 0.7, best, prev, 1.2, None).tolist() == pytest.approx(
        [0.07, 0.1, 0.1, 0.07]
    )


def _steps(fitness, bests: list[float]) -> list[float]:
    """The step after each generation whose best score is bests[g] (one seed)."""
    s = Sinvad(SinvadParams(population=4, elites=2), SPACE)
    if fitness is not None:
        s.attach(SimpleNamespace(fitness=fitness), torch.zeros(1, dtype=torch.long))
    g = rng()
    s.start(torch.zeros(1, 6), g)
    out = []
    for b in bests:
        slots, _ = s.ask()
        scores = torch.full((1, len(slots)), U)
        scores[0, 0] = b
        s.tell(slots, scores, torch.zeros(1, len(slots), 10))
        out.append(s.state().step[0].item())
        s.advance(g)
    return out


def test_prev_best_starts_at_the_not_reached_score_as_in_the_reference():
    """The reference sets prev_best = 999, its "not reached" score: the first generation
    that reaches nothing already decays the step (a start at +inf reset it instead)."""
    got = _steps(Escape(), [U, U, 5.0, 5.0, 4.0])
    assert got == pytest.approx([0.07, 0.049, 0.1, 0.07, 0.1])
    assert _steps(Boundary(), [U])[0] == pytest.approx(0.07)  # the same in gen_bound_imgs
    # A margin's scores have no such value: its first generation never counts as stagnant.
    assert _steps(None, [U, U])[0] == pytest.approx(0.1)


def test_a_search_that_never_reaches_the_target_stops_after_13_generations():
    s = Sinvad(SinvadParams(population=4, elites=2), SPACE)
    s.attach(SimpleNamespace(fitness=Escape()), torch.zeros(1, dtype=torch.long))
    g = rng()
    s.start(torch.zeros(1, 6), g)
    for gen in range(1, 30):
        slots, _ = s.ask()
        s.tell(slots, torch.full((1, len(slots)), U), torch.zeros(1, len(slots), 10))
        if stops(s, gen).any():
            break
        s.advance(g)
    assert gen == 13  # 0.1 x 0.7^13 < 1e-3, as the reference's break after 13
