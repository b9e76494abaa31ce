"""Argus's figures per lambda (docs/measured/papers.md): ER, SR, label diversity, and MSE /
SSIM to the original test image at every lambda of the grid, the paper's own beside its
three lambdas, then pooled."""

from __future__ import annotations

from pathlib import Path

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.home import db_path
from engine.figures.base import figure, number, table
from store import Store
from store.interpolation import SHOWN, per_lambda

FULL = {"seeds": 30, "seed": 1, "strategy_params": {}}
QUICK = {"seeds": 2, "seed": 1, "strategy_params": {"k": 1, "lambda_steps": 3}}
#: Argus's reported success rate and label diversity at its three lambdas (issue 35).
PAPER = {0.1: ("100%", "3.6"), 0.2: ("100%", "5.1"), 0.3: ("100%", "8.6")}

HEADERS = ("lambda", *(h for _, h, _ in SHOWN), "Argus: SR", "Argus: label diversity")


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    extra = "".join(f" -p {k}={v}" for k, v in s["strategy_params"].items())
    return (
        f"latentfuzz run --strategy interpolate --seeds {s['seeds']} --seed {s['seed']}{extra}"
        " && latentfuzz show ID"
    )


@figure("argus-lambda", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    cfg = parse_config({"dataset": "mnist", "generator": "vae", "strategy": "interpolate", **s})
    cid = run_campaign(cfg, home).campaign_id
    rows = []
    for r in per_lambda(Store(db_path(home)), cid).to_dict("records"):
        lam = None if r["pooled"] else round(float(r["lambda"]), 2)
        paper = PAPER.get(lam, ("", ""))
        rows.append(
            (
                "pooled (every lambda)" if lam is None else f"{lam:.2f}",
                *(number(r[k], f) for k, _, f in SHOWN),
                *paper,
            )
        )
    return table(HEADERS, rows)
