"""The interpolate lambda table of docs/measured/studies.md: Argus's error rate and SSIM to
the seed at every lambda of the grid."""

from __future__ import annotations

from pathlib import Path

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.home import db_path
from engine.figures.base import figure, number, table
from store import Store
from store.metrics import metrics

FULL = {"seeds": 30, "seed": 1, "strategy_params": {}}
QUICK = {"seeds": 2, "seed": 1, "strategy_params": {"k": 1, "lambda_steps": 3}}


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    extra = "".join(f" -p {k}={v}" for k, v in s["strategy_params"].items())
    return f"latentfuzz run --strategy interpolate --seeds {s['seeds']} --seed {s['seed']}{extra}"


@figure("interpolate-lambda", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    cfg = parse_config({"dataset": "mnist", "generator": "vae", "strategy": "interpolate", **s})
    cid = run_campaign(cfg, home).campaign_id
    per = (metrics(Store(db_path(home)), cid) or {}).get("per_generation") or []
    rows = [
        ("error rate", *(number(g["error_rate"], ".3f") for g in per)),
        ("SSIM to the seed", *(number(g["mean_ssim"], ".3f") for g in per)),
    ]
    return table(("lambda", *(number(g["step"], ".2f") for g in per)), rows)
