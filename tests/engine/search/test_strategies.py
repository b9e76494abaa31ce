"""What every strategy tells its callers: recorded state, flags, documented parameters,
and the elites under their old GIFTbench name."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.search.strategies import STRATEGIES, SearchSpace
from engine.search.strategies.ga import GAParams
from engine.search.strategies.operators import breed, select_elite
from store import Store
from store import campaigns as sc

SPACE = SearchSpace((6,), -5.0, 5.0)


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_every_parameter_is_described_for_generated_flags_and_forms(name: str):
    for field, info in STRATEGIES.get(name).Params.model_fields.items():
        assert info.description, f"{name}.{field} has no description"


def test_strategies_say_what_callers_used_to_test_by_name():
    flags = {
        n: (c.has_presets, c.multi_objective, c.step_label)
        for n, c in ((n, STRATEGIES.get(n)) for n in STRATEGIES.names())
    }
    assert flags == {
        "ga": (True, False, "mutation step"),
        "random": (True, False, "noise scale"),
        "sinvad": (False, False, "mutation step"),
        "interpolate": (False, False, "lambda"),
        "nsga2": (False, True, None),
        "pixel-ga": (True, False, "mutation step"),
        "mutation": (False, False, "queue length"),
        "fgsm": (False, False, "epsilon"),
        "pgd": (False, False, "epsilon"),
    }
    ga = STRATEGIES.get("ga")
    assert ga(GAParams(perturbation="low"), SPACE).preset == "low"
    sinvad = STRATEGIES.get("sinvad")
    assert sinvad(sinvad.Params(), SPACE).preset is None


def test_state_is_what_the_loop_records():
    ga = STRATEGIES.get("ga")(
        GAParams(population=4, elites=2, perturbation="custom", step=0.25), SPACE
    )
    ga.start(torch.zeros(3, 6), torch.Generator().manual_seed(0))
    state = ga.state()
    assert state.step.tolist() == [0.25] * 3 and state.objective2 is None


def test_breed_keeps_the_elites_and_breeds_the_rest():
    pop = torch.arange(2 * 5 * 4, dtype=torch.float32).view(2, 5, 4)
    scores = torch.tensor([[3.0, 0.0, 2.0, 1.0, 9.0], [0.0, 1.0, 2.0, 3.0, 4.0]])
    elite = select_elite(scores, 2)
    e_pop, kids = breed(
        pop, elite, 3, torch.zeros(2, 4), torch.zeros(2), torch.Generator().manual_seed(0)
    )
    assert torch.equal(e_pop[0], pop[0, [1, 3]]) and torch.equal(e_pop[1], pop[1, [0, 1]])
    assert kids.shape == (2, 3, 4)
    # Step 0: children are crossovers of the two elites, gene by gene from one or the other.
    assert ((kids == e_pop[:, :1]) | (kids == e_pop[:, 1:2])).all()


def test_best_left_is_read_as_elites_and_named_as_written():
    assert GAParams.renamed == {"best_left": "elites"}  # for flags and forms that list names
    assert "renamed" not in GAParams.model_fields
    assert GAParams(best_left=3).elites == 3
    assert "best_left" not in GAParams(best_left=3).model_dump()
    with pytest.raises(ValidationError, match="best_left=25 must be smaller than population"):
        GAParams(best_left=25)
    with pytest.raises(ValidationError, match="elites=25 must be smaller than population"):
        GAParams(elites=25)
    with pytest.raises(ValidationError, match="give elites only"):
        GAParams(best_left=3, elites=4)


def test_a_campaign_configured_with_best_left_stores_elites(tmp_path):
    cfg = parse_config(
        {"seeds": 2, "strategy_params": {"generations": 2, "population": 6, "best_left": 2}}
    )
    cid = run_campaign(cfg, tmp_path).campaign_id
    params = sc.campaign(Store(tmp_path / "latentfuzz.duckdb"), cid)["config"]["strategy_params"]
    assert params["elites"] == 2 and "best_left" not in params


def test_a_campaign_stored_with_best_left_resumes_to_the_same_results(tmp_path):
    """Campaigns stored before the rename say best_left in their config."""
    import json

    from engine.campaign.resume import resume_campaign

    raw = {
        "seeds": 3,
        "seed": 2,
        "strategy_params": {
            "generations": 6,
            "population": 6,
            "best_left": 2,
            "stop_at_failure": False,
        },
    }

    def stop_at_3(p) -> None:
        if p.generation == 3:
            raise KeyboardInterrupt

    whole = run_campaign(parse_config(raw), tmp_path / "a").campaign_id
    cut = run_campaign(parse_config(raw), tmp_path / "b", progress=stop_at_3)
    assert cut.status == "interrupted"
    store = Store(tmp_path / "b" / "latentfuzz.duckdb")
    old = sc.campaign(store, cut.campaign_id)["config"]
    params = old["strategy_params"]
    old["strategy_params"] = {("best_left" if k == "elites" else k): v for k, v in params.items()}
    with store.write() as con:
        con.execute(
            "UPDATE campaigns SET config = ? WHERE id = ?", [json.dumps(old), cut.campaign_id]
        )
    assert resume_campaign(tmp_path / "b", cut.campaign_id).status == "finished"
    a = sc.generations(Store(tmp_path / "a" / "latentfuzz.duckdb"), whole)
    b = sc.generations(store, cut.campaign_id)
    cols = ["seed_idx", "generation", "best_fitness", "step", "evaluations"]
    assert len(a) == 18 and a[cols].equals(b[cols])


def test_a_grid_with_a_best_left_axis_still_checks_and_compares_as_elites():
    from engine.studies.grid import check_cells
    from engine.studies.spec import parse_grid

    spec = parse_grid(
        {"name": "g", "base": {"seeds": 2}, "axes": {"strategy_params.best_left": [2, 3]}}
    )
    cells = spec.cells()
    check_cells(cells, None)  # resolves every cell, as `latentfuzz grid` does first
    stored = {"strategy": "ga", "strategy_params": {**GAParams().model_dump(), "elites": 2}}
    assert cells[0].differs_from(stored) == []
    assert cells[1].differs_from(stored) == ["strategy_params.elites: 2 -> 3"]


@pytest.mark.parametrize(
    ("name", "setting", "extra"),
    [
        ("ga", "step", {"perturbation": "custom"}),
        ("ga", "init_step", {}),
        ("ga", "max_step", {}),
        ("random", "step", {"perturbation": "custom"}),
        ("sinvad", "step", {}),
        ("sinvad", "init_noise", {}),
        ("sinvad", "min_step", {}),
    ],
)
def test_steps_are_bounded_before_they_overflow_a_float32(name: str, setting: str, extra: dict):
    # `--step 1e308` passed validation and overflowed in torch.full mid-campaign.
    params = STRATEGIES.get(name).Params
    for huge in (1e308, 3.5e38, 1e7):
        with pytest.raises(ValidationError, match="less than or equal to"):
            params(**{setting: huge, **extra})
