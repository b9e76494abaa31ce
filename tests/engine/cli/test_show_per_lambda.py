"""`latentfuzz show` prints Argus's figures per lambda for an interpolation campaign, with
the row pooled over the grid labelled so, and nothing of the kind for other strategies."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.common import console
from engine.cli.main import app
from store import Store
from store.interpolation import per_lambda

INTERPOLATE = {
    "strategy": "interpolate",
    "seeds": 2,
    "seed": 1,
    "strategy_params": {"k": 1, "lambda_steps": 3, "lambda_min": 0.1, "lambda_max": 0.3},
}


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's console takes its width when it is made, at import: under pytest-xdist
    that is 80 columns whatever the invocation says, and the table's headers wrap."""
    monkeypatch.setattr(console, "_width", 220)


def show(cid: str, home: Path) -> str:
    out = CliRunner().invoke(app, ["show", cid, "--home", str(home)], env={"COLUMNS": "220"})
    assert out.exit_code == 0, out.output
    return out.output


def test_show_prints_the_per_lambda_table_with_a_pooled_row(home: Path):
    cid = run_campaign(parse_config(INTERPOLATE), home).campaign_id
    text = show(cid, home)
    assert "Argus's figures per lambda" in text
    for header in ("ER", "SR", "label diversity", "MSE to original", "SSIM to decoded seed"):
        assert header in text
    df = per_lambda(Store(home / "latentfuzz.duckdb"), cid)
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    for r in df.to_dict("records"):
        name = "pooled" if r["pooled"] else f"{r['lambda']:.2f}"
        cells = [c.strip() for c in rows[name].split("│")[1:-1]]
        assert cells[3] == f"{r['error_rate']:.3f}"
        assert cells[4] == f"{r['success_rate']:.2f}"
        assert cells[5] == f"{r['label_diversity']:.2f}"
        assert cells[6] == f"{r['mse_original']:.4f}"
        assert cells[7] == f"{r['ssim_original']:.3f}"
    assert {"0.10", "0.20", "0.30", "pooled"} <= set(rows)
    assert "Pooled: over every lambda" in text


def test_show_says_why_figures_are_missing_and_other_strategies_print_none(home: Path):
    bare = run_campaign(
        parse_config({**INTERPOLATE, "record_individuals": False}), home
    ).campaign_id
    text = show(bare, home)
    assert "record_individuals off" in text
    ga = run_campaign(
        parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 2}}), home
    ).campaign_id
    assert "per lambda" not in show(ga, home)
