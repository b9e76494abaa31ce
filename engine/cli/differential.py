"""Differential testing commands: `validate`, `diff-study`, `models compress`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from engine.cli.common import HomeOpt, Table, console, err, fmt, visible
from engine.cli.common import open_store as _store
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from store import interrupts

#: diff-study's default pairs: a different architecture, and the compressed twin.
PAIRS = ("mnist-convnet:mnist-lenet5", "mnist-convnet:mnist-convnet-pruned80")


FeaturesOpt = Annotated[
    str,
    typer.Option(
        help="geometric diversity's features, from the dataset's default classifier: conv "
        "(input of its first linear layer) | penultimate | pixels"
    ),
]
GeoSubsetOpt = Annotated[
    int, typer.Option(help="geometric diversity: inputs per draw (DiffGAN: 1000)")
]
GeoDrawsOpt = Annotated[int, typer.Option(help="geometric diversity: draws averaged (DiffGAN: 30)")]
#: Most inputs per draw and draws: a draw is a dense Gram matrix of that side.
MAX_GEO_SUBSET, MAX_GEO_DRAWS = 10_000, 1000


def geometric_spec(features: str, subset: int, draws: int) -> Any:
    """The options as a GeometricSpec, or a one-line error naming the bad one."""
    # Deferred (start-up time: loads torch).
    from engine.search.diversity import GEO_FEATURES, GeometricSpec

    if features not in GEO_FEATURES:
        raise LatentfuzzError(
            f"--features is {features!r}, expected one of {', '.join(GEO_FEATURES)}"
        )
    for opt, value, most in (
        ("--geo-subset", subset, MAX_GEO_SUBSET),
        ("--geo-draws", draws, MAX_GEO_DRAWS),
    ):
        if not 1 <= value <= most:
            raise LatentfuzzError(f"{opt} is {value}, expected 1 to {most:,}")
    return GeometricSpec(features, subset, draws)


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command("diff-study")(diff_study)


#: `--validator NAME=calibrated:STUDY`: the threshold fitted on a validity study.
CALIBRATED = "calibrated:"


def parse_validators(items: list[str], calibrated: bool = False) -> dict[str, float | str | None]:
    """['ssim-nearest=0.4', 'discriminator'] -> {'ssim-nearest': 0.4, 'discriminator': None}.
    With `calibrated` (validate), 'NAME=calibrated:STUDY' -> {NAME: 'STUDY'}: a str value
    is the validity study whose fitted threshold to use (calibrated_thresholds)."""
    out: dict[str, float | str | None] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if eq and not value.strip():  # "discriminator=" meant a threshold, not the default
            raise LatentfuzzError(
                f"--validator {item!r}: the threshold is empty; give NAME=THRESHOLD, e.g. "
                f"{name.strip() or 'ssim-nearest'}=0.4, or NAME alone for its default"
            )
        if value.strip().startswith(CALIBRATED):
            study = value.strip()[len(CALIBRATED) :].strip()
            if not calibrated:
                raise LatentfuzzError(
                    f"--validator {item!r}: a calibrated threshold is for `latentfuzz "
                    "validate ID --validator NAME=calibrated:STUDY`; here give NAME or "
                    "NAME=THRESHOLD"
                )
            if not study:
                raise LatentfuzzError(
                    f"--validator {item!r}: the study is empty; give NAME=calibrated:STUDY "
                    "with a study id from `latentfuzz labels list`"
                )
            out[name.strip()] = study
            continue
        try:
            threshold = float(value) if value else None
        except ValueError:
            raise LatentfuzzError(
                f"--validator {item!r}: the threshold {value!r} is not a number; "
                "expected NAME, NAME=THRESHOLD or NAME=calibrated:STUDY, e.g. ssim-nearest=0.4"
            ) from None
        if threshold is not None and not math.isfinite(threshold):
            raise LatentfuzzError(f"--validator {item!r}: the threshold must be finite")
        out[name.strip()] = threshold
    return out


def calibrated_thresholds(
    store: Any, chosen: dict[str, float | str | None]
) -> tuple[dict[str, float | None], dict[str, tuple[str, float]]]:
    """`chosen` with each study replaced by the threshold fitted on it, and {validator:
    (study, threshold)} of those replaced."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.study_calibration import calibrated_threshold

    used = {
        name: (v, calibrated_threshold(store, v, name))
        for name, v in chosen.items()
        if isinstance(v, str)
    }
    fixed = {n: used[n][1] if n in used else v for n, v in chosen.items()}
    return fixed, used


def parse_pairs(text: str) -> list[list[str]]:
    """'a:b,c:d' -> [['a', 'b'], ['c', 'd']], or a one-line error naming the bad item."""
    out = []
    for item in text.split(","):
        parts = [x.strip() for x in item.split(":")]
        if len(parts) != 2 or not all(parts):
            raise LatentfuzzError(
                f"--pairs item {item!r} is not a classifier pair; expected A:B, e.g. "
                "mnist-convnet:mnist-lenet5 (comma-separated for several)"
            )
        out.append(parts)
    return out


def validate(
    campaign: Annotated[str, typer.Argument(help="campaign id")],
    validator: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME, NAME=THRESHOLD or NAME=calibrated:STUDY (the threshold fitted on a "
            "validity study by `labels calibrate`; repeat) [the campaign's, else all that apply]"
        ),
    ] = None,
    features: FeaturesOpt = "conv",
    geo_subset: GeoSubsetOpt = 1000,
    geo_draws: GeoDrawsOpt = 30,
    home: HomeOpt = None,
) -> None:
    """Score a campaign's archived and result images with validity filters and recompute
    its differential figures."""
    spec = geometric_spec(features, geo_subset, geo_draws)
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.campaign import triggering as differential
    from engine.campaign.config import from_record
    from engine.campaign.resolve import resolve

    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.validators import check_validators, default_validators
    from store import calibration
    from store import campaigns as sc
    from store import metrics as sm

    store = _store(home)
    row = sc.campaign(store, campaign)
    if row is None:
        raise LatentfuzzError(f"no campaign {campaign!r}; `latentfuzz campaigns` lists them")
    r = resolve(from_record(row["config"]))
    chosen, used = calibrated_thresholds(
        store, parse_validators(validator, calibrated=True) if validator else {}
    )
    chosen = chosen or r.validators or default_validators(r.generator)
    check_validators(chosen, r.generator, r.dataset)
    metrics = sm.metrics(store, campaign)
    evaluations = 0 if metrics is None else int(metrics["evaluations"])
    rows, figs = differential.close(
        r, store, resolve_home(home), campaign, evaluations, chosen, spec
    )
    if used:
        calibration.record_calibrated(store, campaign, used)
    for (kind, name), part in rows.groupby(["kind", "validator"]):
        study = f", calibrated on {used[name][0]}" if name in used else ""
        console.print(
            f"{kind} images, {name}: {int(part['valid'].sum())} of {len(part)} valid "
            f"(threshold {part['threshold'].iloc[0]:.3f}{study})",
            markup=False,
        )
    realism = (sm.metrics(store, campaign) or {}).get("realism")
    if realism:
        console.print(
            f"realism against {realism['reference_images']} real test images "
            f"({realism['images']} images, {realism['features']}): "
            f"FID (classifier features, not Inception) {fmt(realism['fid'], '.2f') or 'n/a'}, "
            f"KID {fmt(realism['kid'], '.4f') or 'n/a'}"
        )
    if figs is not None:
        console.print(
            f"triggering inputs {figs['triggering']}, valid {figs['valid_triggering']}, "
            f"geometric diversity {fmt(figs['geometric_diversity'], '.1f')} "
            f"({figs['geometric_draws']} draws of {figs['geometric_subset']}, "
            f"{figs['geometric_features']} features), Shannon diversity "
            f"{fmt(figs['shannon_diversity'], '.2f')} nats"
        )


def diff_study(
    pairs: Annotated[str, typer.Option(help="comma-separated A:B classifier pairs")] = ",".join(
        PAIRS
    ),
    generator: Annotated[str, typer.Option(help="zoo generator")] = "gan",
    seeds: Annotated[int, typer.Option(help="searches (seeds) per campaign")] = 4,
    evaluations: Annotated[int, typer.Option(help="evaluations per search, all methods")] = 1500,
    population: Annotated[int, typer.Option(help="NSGA-II and GA population")] = 100,
    repetitions: Annotated[int, typer.Option(help="campaigns per method and pair")] = 3,
    embedding: Annotated[str, typer.Option(help="NSGA-II's embedding: pca | umap")] = "pca",
    ablation: Annotated[
        bool,
        typer.Option(help="also run DiffGAN's ablation: NSGA-II on divergence alone"),
    ] = False,
    features: FeaturesOpt = "conv",
    geo_subset: GeoSubsetOpt = 1000,
    geo_draws: GeoDrawsOpt = 30,
    name: Annotated[str | None, typer.Option(help="study name [diff-<time>]")] = None,
    home: HomeOpt = None,
) -> None:
    """NSGA-II (DiffGAN) against a single-objective GA with the divergence fitness (and,
    with --ablation, NSGA-II on divergence alone), at equal evaluation budget, on each
    classifier pair; prints triggering inputs, valid ones, geometric and Shannon diversity
    and label-pair entropy (mean and standard deviation over repetitions)."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.studies.differential import StudyStopped, run_diff_study

    spec = geometric_spec(features, geo_subset, geo_draws)
    interrupts.stop_raises()
    try:
        table = run_diff_study(
            parse_pairs(pairs),
            generator,
            seeds,
            evaluations,
            population,
            repetitions,
            embedding,
            name,
            home,
            ablation=ablation,
            spec=spec,
        )
    except StudyStopped as e:
        err.print(str(e), markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    print_study(table)


def print_study(df: Any) -> None:
    t = Table(
        "A vs B",
        "method",
        "runs",
        "triggering",
        "valid triggering",
        "geometric diversity (valid)",
        "subset",
        "Shannon diversity (valid)",
        "label-pair entropy (valid)",
        caption="mean ± SD over runs; Shannon diversity in nats (intended classes), "
        "label-pair entropy in bits",
    )
    for _, r in df.iterrows():
        t.add_row(
            # Two lines on purpose (a str cell's line break is escaped as the names' are).
            Text(f"{visible(str(r['classifier']))}\nvs {visible(str(r['classifier_b']))}"),
            r["method"],
            str(r["runs"]),
            f"{r['triggering_mean']:.0f} ± {fmt(r['triggering_sd'], '.0f')}",
            f"{r['valid_triggering_mean']:.0f} ± {fmt(r['valid_triggering_sd'], '.0f')}",
            f"{fmt(r['geometric_diversity_mean'], '.1f')} ± "
            f"{fmt(r['geometric_diversity_sd'], '.1f')}",
            f"{fmt(r['geometric_subset_min'], '.0f')}-{fmt(r['geometric_subset_max'], '.0f')}",
            f"{fmt(r['shannon_diversity_mean'], '.2f')} ± {fmt(r['shannon_diversity_sd'], '.2f')}",
            f"{fmt(r['label_entropy_mean'], '.2f')} ± {fmt(r['label_entropy_sd'], '.2f')}",
        )
    console.print(t)


def register_zoo(zoo_app: typer.Typer) -> None:
    zoo_app.command("compress")(zoo_compress)


def zoo_compress(
    name: Annotated[str, typer.Argument(help="zoo classifier")] = "mnist-convnet",
    amount: Annotated[float, typer.Option(help="share of weights pruned")] = 0.8,
    dataset: str = "mnist",
    out: Annotated[Path | None, typer.Option(help="zoo folder [the bundled models/]")] = None,
) -> None:
    """Make a compressed twin of a zoo classifier (global magnitude pruning) and card it."""
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.train.compress import compress_classifier

    card = compress_classifier(name, amount, dataset, out)
    m = card["metrics"]
    console.print(
        f"{card['name']}: sparsity {card['compression']['sparsity']:.3f}, test accuracy "
        f"{m['test_accuracy']:.3f} (original {fmt(m['original_test_accuracy'], '.3f')}), "
        f"agrees with {name} on {m['agreement_with_original']:.1%} of test images"
    )


def register_bench(bench_app: typer.Typer) -> None:
    bench_app.command("nsga2")(bench_nsga2_cmd)
    bench_app.command("ssim")(bench_ssim_cmd)


def bench_nsga2_cmd(
    embeddings: Annotated[str, typer.Option(help="comma-separated: pca, umap")] = "pca,umap",
    seeds: Annotated[int, typer.Option(help="NSGA-II runs")] = 4,
    generations: Annotated[int, typer.Option(help="generations per run")] = 20,
    population: Annotated[int, typer.Option(help="population per run")] = 50,
) -> None:
    """NSGA-II's own share of a generation's time, and PCA vs UMAP for its diversity
    objective at equal budget (GAN, convnet vs LeNet-5)."""
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.bench.nsga2 import bench_nsga2

    rows = bench_nsga2(tuple(embeddings.split(",")), seeds, generations, population)
    t = Table(
        "embedding",
        "s / generation",
        "NSGA-II share",
        "models share",
        "command s",
        "triggering",
        "geometric diversity",
        "label entropy",
        title=f"NSGA-II, {seeds} runs x {population}, {generations} generations",
    )
    for r in rows:
        t.add_row(
            r["embedding"],
            f"{r['seconds_per_generation']:.3f}",
            f"{r['nsga2_share']:.1%}",
            f"{r['model_share']:.1%}",
            f"{r['command_seconds']:.1f}",
            str(r["triggering"]),
            f"{fmt(r['geometric_diversity'], '.1f')} (n={r['geometric_subset']})",
            fmt(r["label_entropy"], ".2f"),
        )
    console.print(t)


def bench_ssim_cmd(
    queries: Annotated[int, typer.Option(help="generated images scored")] = 1000,
    recall: Annotated[int, typer.Option(help="of them, checked against brute force")] = 50,
) -> None:
    """The ssim-nearest filter: N GAN images against the training split (timed), and how
    often the L2 pre-selection finds the brute-force best."""
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.bench.nsga2 import bench_ssim

    r = bench_ssim(queries, recall)
    console.print(
        f"ssim-nearest: {r['queries']} images x {r['references']} references, "
        f"{r['candidates']} candidates each: {r['seconds']:.2f} s "
        f"(+{r['setup_seconds']:.2f} s once for the references); brute force "
        f"{r['brute_force_seconds_per_query'] * r['queries']:.0f} s estimated; recall "
        f"{r['recall']:.2f} on {r['recall_queries']} images (largest shortfall "
        f"{r['max_shortfall']:.4f})"
    )
