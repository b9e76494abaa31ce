"""AppTest: per-campaign metrics on the Campaign and Compare pages, strategies compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.studies.strategy import run_strategy_study
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("home")
    _, table = run_strategy_study(home, ["ga", "sinvad"], seeds=3, generations=4)
    return home, table["campaign"].tolist()


@pytest.fixture
def app(study, monkeypatch):
    return page_opener(study[0], monkeypatch)


def test_campaign_page_shows_metrics_and_the_gap_histogram(app, study):
    _, (ga, sinvad) = study
    at = app("campaign.py", id=sinvad, tab="Seed detail")
    assert not at.exception
    assert "Metrics" in [h.value for h in at.subheader]
    table = next(m.value for m in at.markdown if "error rate" in m.value)
    assert "SSIM result vs seed" in table and "median top-2 gap, test images" in table
    assert any("SSIM: Gaussian window 11x11, sigma 1.5" in c.value for c in at.caption)
    # convergence, gap histogram, top-2 probabilities of a seed
    assert len(at.get("vega_lite_chart")) >= 3
    assert [m.label for m in at.metric][:2] == ["viable seeds", "misclassified"]


def test_compare_page_blocks_strategies_by_evaluation_budget_and_shows_metrics(app, study):
    _, ids = study
    at = app("compare.py")
    assert not at.exception
    assert sorted(at.multiselect[0].value) == sorted(ids)  # the newest study by default
    text = "\n".join(m.value for m in at.markdown)
    # GA 70 and sinvad 50 evaluations per seed at most (4 GA generations): two blocks.
    assert "**Block: mnist, mnist\\-vae, 70 evaluations per seed at most**" in text
    assert "**Block: mnist, mnist\\-vae, 50 evaluations per seed at most**" in text
    assert "| campaign | strategy | % viable seeds" in text
    metrics = next(m.value for m in at.markdown if "failures / 1k evals" in m.value)
    assert "| ga |" in metrics and "| sinvad |" in metrics
