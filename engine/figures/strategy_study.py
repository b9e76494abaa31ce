"""The strategy study table of docs/measured/studies.md: strategies at an equal budget."""

from __future__ import annotations

from pathlib import Path

from engine.core.home import db_path
from engine.figures.base import figure, number, table
from engine.studies.strategy import run_strategy_study
from store import Store
from store import campaigns as sc

#: The strategies compared, in the table's order: one more is one more name here.
COMPARED = ("ga", "sinvad", "random", "pixel-ga", "mutation", "fgsm", "pgd")
FULL = {"seeds": 30, "seed": 1, "generations": 250}
QUICK = {"seeds": 2, "seed": 1, "generations": 3}

HEADERS = (
    "strategy",
    "searches",
    "objective",
    "budget / seed",
    "% misclassification (#)",
    "evaluations",
    "failures / 1,000 evals",
    "error rate",
    "success rate",
    "label diversity",
    "MSE",
    "SSIM",
    "top-2 gap, results / test: median (mean)",
)


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    gens = f" --generations {s['generations']}" if quick else ""
    return (
        f"latentfuzz study --strategies {','.join(COMPARED)} --seeds {s['seeds']} "
        f"--seed {s['seed']}{gens}"
    )


@figure("strategy-study", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    _, df = run_strategy_study(home, list(COMPARED), s["seeds"], s["generations"], s["seed"])
    store = Store(db_path(home))
    rows = []
    for r in df.itertuples():
        camp = sc.campaign(store, r.campaign)
        preset = camp.get("preset")
        rows.append(
            (
                f"{r.strategy} ({preset})" if preset else r.strategy,
                "pixels" if camp["generator"] == "pixel" else f"{camp['generator']} latents",
                str(r.fitness),
                f"{int(r.budget):,}",
                f"{number(r.misclassified_pct, '.0f')} ({int(r.misclassified)})",
                f"{int(r.evaluations):,}",
                number(r.failures_per_1k, ".2f"),
                number(r.error_rate, ".3f"),
                number(r.success_rate, ".2f"),
                number(r.label_diversity, ".2f"),
                number(r.mean_mse, ".4f"),
                number(r.mean_ssim, ".3f"),
                f"{number(r.result_gap_median, '.4f')} ({number(r.result_gap_mean, '.3f')}) / "
                f"{number(r.test_gap_median, '.4f')} ({number(r.test_gap_mean, '.3f')})",
            )
        )
    return table(HEADERS, rows)
