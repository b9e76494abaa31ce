"""`latentfuzz bench`: engine efficiency against the machine's limit, generator and
classifier inference time (and, from engine/cli/differential.py, NSGA-II and SSIM)."""

from __future__ import annotations

from typing import Annotated

import typer

from engine.cli.common import HomeOpt, console
from engine.cli.differential import bench_nsga2_cmd
from engine.cli.differential import register_bench as register_diff_bench

bench_app = typer.Typer(help="Benchmarks: engine efficiency, generator inference time.")
register_diff_bench(bench_app)  # bench nsga2, bench ssim


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    seeds: Annotated[int, typer.Option(help="seeds in the paired per-strategy campaigns")] = 10,
    generations: Annotated[int, typer.Option(help="generation budget")] = 250,
    perturbation: Annotated[str, typer.Option(help="step preset")] = "high",
    generator: Annotated[str, typer.Option(help="generator")] = "vae",
    repeats: Annotated[int, typer.Option(help="benchmark campaigns (median reported)")] = 3,
    strategies: Annotated[
        str,
        typer.Option(help="comma-separated strategies, one paired column each ('' skips)"),
    ] = "ga,sinvad,random",
    sizes: Annotated[
        str, typer.Option(help="seed counts measured against the physical limit ('' skips)")
    ] = "10,100,1000",
    large_generations: Annotated[
        int, typer.Option(help="generation budget from 1,000 seeds on")
    ] = 25,
    nsga2: Annotated[
        bool, typer.Option(help="NSGA-II's own share of a generation (bench nsga2 has more)")
    ] = True,
    device: Annotated[
        str | None, typer.Option(help="cpu | cuda | cuda:N [cuda when a GPU is present, else cpu]")
    ] = None,
    home: HomeOpt = None,
) -> None:
    """The physical limit (raw decode+classify at the best batch size), each size's engine
    efficiency against it, start-up and --help time; then per strategy, efficiency paired
    with a bare twin of every batch, and store share."""
    if ctx.invoked_subcommand is not None:
        return
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.campaign import bench_device, bench_engine
    from engine.bench.scale import bench_scale
    from engine.studies.strategy import check_strategies

    device = bench_device(device)
    counts = tuple(int(x) for x in sizes.split(",") if x.strip())
    if counts:
        bench_scale(
            counts,
            generations,
            large_generations,
            generator,
            console,
            perturbation,
            device=device,
        )
    names = [s.strip() for s in strategies.split(",") if s.strip()]
    if names:
        bench_engine(
            seeds=seeds,
            generations=generations,
            perturbation=perturbation,
            generator=generator,
            repeats=repeats,
            home=home,
            console=console,
            strategies=tuple(check_strategies(names)),
            device=device,
        )
    if nsga2:
        bench_nsga2_cmd(embeddings="pca", seeds=4, generations=10, population=50)


@bench_app.command("generators")
def bench_generators_cmd(
    dataset: str = "mnist",
    write_cards: Annotated[bool, typer.Option(help="record the figures in the cards")] = True,
) -> None:
    """Inference time per image at batch 1 and 25 for every bundled generator (GIFTbench
    Table II) and classifier."""
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.bench.campaign import bench_classifiers, bench_generators

    bench_generators(dataset, write_cards=write_cards, console=console)
    bench_classifiers(dataset, write_cards=write_cards, console=console)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
