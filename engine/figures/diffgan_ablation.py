"""DiffGAN's ablation (docs/measured/papers.md): NSGA-II on both objectives, on divergence
alone, and the GA, at one budget on the same seeds; geometric diversity at one subset size
for every method, DiffGAN's Shannon diversity and the label-pair entropy."""

from __future__ import annotations

from pathlib import Path

from engine.figures.base import figure, mean_sd, table
from engine.search.diversity import GeometricSpec
from engine.studies.differential import run_diff_study

PAIR = ["mnist-convnet", "mnist-lenet5"]
FULL = {"seeds": 4, "evaluations": 1500, "population": 100, "repetitions": 2, "subset": 400}
QUICK = {"seeds": 1, "evaluations": 60, "population": 10, "repetitions": 1, "subset": 5}
COLUMNS = (
    ("triggering", "triggering inputs", ",.0f"),
    ("valid_triggering", "valid", ",.0f"),
    ("geometric_diversity", "geometric diversity (valid, 30 draws)", ",.1f"),
    ("shannon_diversity", "Shannon diversity (valid, nats)", ".2f"),
    ("label_entropy", "label-pair entropy (valid, bits)", ".2f"),
)


def command(quick: bool) -> str:
    s = QUICK if quick else FULL
    return (
        f"latentfuzz diff-study --pairs {':'.join(PAIR)} --seeds {s['seeds']} --evaluations "
        f"{s['evaluations']} --population {s['population']} --repetitions {s['repetitions']} "
        f"--ablation --geo-subset {s['subset']}"
    )


@figure("diffgan-ablation", command)
def build(home: Path, quick: bool) -> str:
    s = QUICK if quick else FULL
    df = run_diff_study(
        [PAIR],
        "gan",
        s["seeds"],
        s["evaluations"],
        s["population"],
        s["repetitions"],
        home=home,
        ablation=True,
        spec=GeometricSpec(subset=s["subset"]),
    )
    rows = [
        (str(r["method"]), *(mean_sd(r, stem, spec) for stem, _, spec in COLUMNS))
        for _, r in df.iterrows()
    ]
    return table(("method (convnet vs LeNet-5)", *(h for _, h, _ in COLUMNS)), rows)
