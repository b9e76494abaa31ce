"""The effectiveness study table of docs/measured/index.md: every bundled generator at
each step preset, in the ICST study's layout, beside the study's published MNIST figures,
and each campaign's realism (FID and KID in the default classifier's penultimate features,
not Inception's: engine/campaign/realism.py)."""

from __future__ import annotations

from pathlib import Path

from engine.core.home import db_path
from engine.figures.base import figure, number, table
from engine.studies.effectiveness import run_study, study_realism
from store import Store

FULL = {"seeds": 20, "generations": 250, "seed": 1}
QUICK = {"seeds": 2, "generations": 3, "seed": 1}
#: ICST 2025, Table III, MNIST (100 seeds): % misclassification, iterations, per
#: (generator family, preset); GUIDE.md, "The benchmark study behind it".
ICST = {
    ("vae", "low"): "4.04, 245.41",
    ("vae", "high"): "100, 62.92",
    ("gan", "low"): "8.08, 242.05",
    ("gan", "high"): "96.97, 107.46",
    ("dm", "low"): "50.57, 164.61",
    ("dm", "high"): "100, 26.77",
}
HEADERS = (
    "generator",
    "perturbation",
    "% viable seeds",
    "% misclassification (#)",
    "iterations, mean (std): viable seeds, survivors at budget",
    "iterations to failure, mean (std): failing seeds",
    "ICST 2025, MNIST (100 seeds): % misclassification, iterations",
    "FID (classifier features, not Inception)",
    "KID (classifier features, not Inception)",
)


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    return (
        f"latentfuzz study --seeds {s['seeds']} --generations {s['generations']} --seed {s['seed']}"
    )


def _mean_std(mean: float | None, std: float | None) -> str:
    return f"{number(mean, '.1f')} ({'-' if std is None or std != std else format(std, '.1f')})"


@figure("effectiveness", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    _, df = run_study(home, s["seeds"], s["generations"], s["seed"])
    df = study_realism(Store(db_path(home)), df)
    rows = []
    for r in df.itertuples():
        family = str(r.generator).removeprefix("mnist-")
        rows.append(
            (
                family.upper(),
                str(r.preset),
                number(r.viable_pct, ".0f"),
                f"{number(r.misclassified_pct, '.0f')} ({int(r.misclassified)})",
                _mean_std(r.iterations_icst, r.iterations_icst_std),
                _mean_std(r.iterations_to_failure, r.iterations_to_failure_std),
                ICST.get((family, str(r.preset)), ""),
                number(r.fid, ".1f"),
                number(r.kid, ".3f"),
            )
        )
    return table(HEADERS, rows)
