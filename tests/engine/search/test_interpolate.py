"""Argus's interpolation: the draw of other-class images, the lambda grid as generations,
the refusal of generators without an encoder, and the per-lambda metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.search.strategies import STRATEGIES
from engine.search.strategies.interpolate import (
    Interpolate,
    InterpolateParams,
    draw_others,
    interpolate,
    lambdas,
)
from store import Store
from store import campaigns as sc
from store import metrics as sm


def test_registered_with_the_argus_grid():
    assert STRATEGIES.get("interpolate") is Interpolate
    grid = lambdas(InterpolateParams())
    assert grid[0].item() == pytest.approx(0.05) and grid[-1].item() == pytest.approx(0.5)
    assert len(grid) == 10
    with pytest.raises(ValidationError, match="swap them"):
        InterpolateParams(lambda_min=0.6, lambda_max=0.5)


def test_interpolation_formula():
    seed, others = torch.zeros(1, 3), torch.ones(1, 2, 3) * 4
    assert torch.equal(interpolate(seed, others, 0.25), torch.ones(1, 2, 3))
    assert torch.equal(interpolate(seed, others, 0.0), torch.zeros(1, 2, 3))


def test_others_are_k_images_of_every_other_class_drawn_from_the_rng():
    pool = torch.arange(40) % 4  # 10 images of each of 4 classes
    labels = torch.tensor([0, 2])
    idx = draw_others(labels, pool, 3, 4, torch.Generator().manual_seed(0))
    assert idx.shape == (2, 9)
    assert pool[idx[0]].tolist() == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert pool[idx[1]].tolist() == [0, 0, 0, 1, 1, 1, 3, 3, 3]
    assert len(set(idx[0].tolist())) == 9  # no image twice
    again = draw_others(labels, pool, 3, 4, torch.Generator().manual_seed(0))
    other = draw_others(labels, pool, 3, 4, torch.Generator().manual_seed(1))
    assert torch.equal(idx, again) and not torch.equal(idx, other)


@pytest.mark.parametrize("generator", ["gan", "dm"])
def test_generators_without_an_encoder_are_refused_in_one_line(generator: str):
    cfg = parse_config({"strategy": "interpolate", "generator": generator})
    with pytest.raises(ConfigError, match="needs an encoder generator.*use --generator vae"):
        resolve(cfg)


def test_each_lambda_is_one_generation_with_its_error_rate_and_ssim(home: Path):
    cfg = parse_config(
        {
            "strategy": "interpolate",
            "seeds": 4,
            "seed": 1,
            "strategy_params": {"k": 3, "lambda_steps": 4},
        }
    )
    res = run_campaign(cfg, home)
    store = Store(home / "latentfuzz.duckdb")
    gens = sc.generations(store, res.campaign_id)
    viable = int(res.summary["viable"])
    assert len(gens) == 4 * viable  # the whole grid for every viable seed
    steps = sorted(gens["step"].unique())
    assert steps == pytest.approx([0.05, 0.2, 0.35, 0.5])
    m = sm.metrics(store, res.campaign_id)
    per = m["per_generation"]
    assert [p["step"] for p in per] == pytest.approx(steps)
    assert all(p["evaluations"] == viable * 9 * 3 for p in per)
    assert all(0 <= p["mean_ssim"] <= 1 and p["mean_mse"] >= 0 for p in per)
    # Interpolating towards other classes moves the image away from the seed.
    assert per[-1]["mean_mse"] > per[0]["mean_mse"]
    assert m["evaluations"] == viable * 9 * 3 * 4
    camp = sc.campaign(store, res.campaign_id)
    assert camp["config"]["evaluation_budget"] == 9 * 3 * 4
    # The Campaign page shows Argus's figures by lambda, then pooled over them.
    from dashboard.metrics import by_lambda
    from store.interpolation import per_lambda

    table = by_lambda(per_lambda(store, res.campaign_id))
    assert list(table.columns) == ["0.05", "0.20", "0.35", "0.50", "pooled"]
    shown = table.loc["SSIM to the decoded seed"].tolist()[:-1]
    assert shown == [f"{p['mean_ssim']:.3f}" for p in per]
    shown = table.loc["SSIM to the original"].tolist()[:-1]
    assert shown == [f"{p['mean_ssim_original']:.3f}" for p in per]
    # The campaign's criterion is misclassification: its error rate is Argus's ER.
    assert table.loc["ER"].tolist()[:-1] == [f"{p['error_rate']:.3f}" for p in per]
    assert table.loc["images"].tolist() == [f"{viable * 27:,}"] * 4 + [f"{viable * 27 * 4:,}"]


def test_the_campaign_page_shows_figures_by_lambda_only_for_interpolation(home, monkeypatch):
    from tests.helpers import page_opener

    interp = run_campaign(
        parse_config(
            {
                "strategy": "interpolate",
                "seeds": 2,
                "seed": 1,
                "strategy_params": {"k": 2, "lambda_steps": 3},
            }
        ),
        home,
    ).campaign_id
    ga = run_campaign(
        parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}}), home
    ).campaign_id
    open_page = page_opener(home, monkeypatch)
    for cid, shown in ((interp, True), (ga, False)):
        at = open_page("campaign.py", id=cid, tab="Metrics")
        assert not at.exception, at.exception
        said = any("Argus's figures per lambda" in md.value for md in at.markdown)
        assert said is shown
        pooled = any("pooled over every lambda" in c.value for c in at.caption)
        assert pooled is shown
