"""The NSGA-II against the GA table of docs/measured/studies.md (`latentfuzz diff-study`):
triggering inputs, valid ones, their geometric diversity and label-pair entropy, mean ±
SD over repetitions, the larger mean of each pair in bold."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from engine.figures.base import figure, mean_sd, table
from engine.search.diversity import GeometricSpec
from engine.studies.differential import run_diff_study

PAIRS = [["mnist-convnet", "mnist-lenet5"], ["mnist-convnet", "mnist-convnet-pruned80"]]
#: `subset`: valid inputs per draw of the geometric diversity, one size for every campaign
#: (it compares only at equal size), at most what the sparsest campaign finds: DiffGAN's
#: 1,000 is more than NSGA-II finds against the pruned twin.
FULL = {
    "pairs": PAIRS,
    "seeds": 4,
    "evaluations": 1500,
    "population": 100,
    "repetitions": 3,
    "subset": 100,
}
QUICK = {
    "pairs": PAIRS[:1],
    "seeds": 1,
    "evaluations": 60,
    "population": 10,
    "repetitions": 1,
    "subset": 5,
}
#: How the docs name the zoo's classifiers.
SHOWN = {
    "mnist-convnet": "convnet",
    "mnist-lenet5": "LeNet-5",
    "mnist-convnet-pruned80": "pruned twin",
}
#: (column stem, header, format) of each figure, mean ± SD.
COLUMNS = (
    ("triggering", "triggering inputs", ",.0f"),
    ("valid_triggering", "valid triggering inputs", ",.0f"),
    ("geometric_diversity", "geometric diversity (valid, 30 draws of the subset)", ".1f"),
    ("label_entropy", "label-pair entropy (valid, bits)", ".2f"),
)


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    pairs = ",".join(":".join(p) for p in s["pairs"])
    return (
        f"latentfuzz diff-study --pairs {pairs} --seeds {s['seeds']} --evaluations "
        f"{s['evaluations']} --population {s['population']} --repetitions {s['repetitions']} "
        f"--geo-subset {s['subset']}"
    )


@figure("differential", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    df = run_diff_study(
        s["pairs"],
        "gan",
        s["seeds"],
        s["evaluations"],
        s["population"],
        s["repetitions"],
        home=home,
        spec=GeometricSpec(subset=s["subset"]),
    )
    rows = []
    for _, pair in df.groupby(["classifier", "classifier_b"], sort=False):
        top = {stem: pd.to_numeric(pair[f"{stem}_mean"]).max() for stem, _, _ in COLUMNS}
        for _, r in pair.iterrows():
            a, b = (SHOWN.get(r[k], r[k]) for k in ("classifier", "classifier_b"))
            rows.append(
                (
                    f"{a} vs {b}",
                    str(r["method"]),
                    *(
                        mean_sd(r, stem, spec, len(pair) > 1 and r[f"{stem}_mean"] == top[stem])
                        for stem, _, spec in COLUMNS
                    ),
                )
            )
    return table(("A vs B", "method", *(h for _, h, _ in COLUMNS)), rows)
