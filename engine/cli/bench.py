"""`latentfuzz bench`: engine efficiency against the machine's limit, generator and
classifier inference time (and, from engine/cli/differential.py, NSGA-II and SSIM)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, console
from engine.cli.differential import bench_nsga2_cmd
from engine.cli.differential import register_bench as register_diff_bench
from engine.core.errors import ConfigError

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
    neighbour: Annotated[
        int,
        typer.Option(
            min=0,
            help="CPU-bound processes beside a second, loaded half of the size measurement; "
            "quiet and loaded figures side by side [0: quiet only]",
        ),
    ] = 0,
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
    if counts and neighbour:
        # Deferred (start-up time: loads torch, duckdb, pandas).
        from engine.bench.loaded import bench_loaded

        bench_loaded(
            neighbour,
            console,
            sizes=counts,
            generations=generations,
            large_generations=large_generations,
            generator=generator,
            perturbation=perturbation,
            device=device,
        )
    elif counts:
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


@bench_app.command("giftbench")
def bench_giftbench_cmd(
    seeds: Annotated[str, typer.Option(help="comma-separated seed counts")] = "10,100",
    generations: Annotated[int, typer.Option(min=1, help="generation budget")] = 250,
    pairs: Annotated[int, typer.Option(min=1, help="interleaved pairs per size")] = 3,
    neighbour: Annotated[
        int, typer.Option(min=0, help="CPU-bound processes beside a second, loaded pass")
    ] = 0,
    breakdown: Annotated[
        bool, typer.Option(help="also the loop's variants: where the lead comes from")
    ] = True,
    device: Annotated[
        str | None, typer.Option(help="cpu | cuda | cuda:N [cuda when a GPU is present, else cpu]")
    ] = None,
) -> None:
    """latentfuzz run against a per-seed loop written the way GIFTbench runs its GA (batch
    of 25 per seed, elites re-evaluated, numpy fitness per individual), same models, seeds
    and threads: seed-generations per second, failures found, mean iterations."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.campaign import bench_device
    from engine.bench.giftbench import bench_giftbench

    bench_giftbench(
        parse_sizes(seeds, "--seeds"),
        generations,
        pairs,
        neighbour,
        breakdown,
        bench_device(device),
        console,
    )


@bench_app.command("grid")
def bench_grid_cmd(
    cells: Annotated[int, typer.Option(min=1, help="VAE cells in the grid")] = 4,
    seeds: Annotated[int, typer.Option(min=1, help="seeds per cell")] = 10,
    generations: Annotated[int, typer.Option(min=1, help="generation budget")] = 250,
    repeats: Annotated[int, typer.Option(min=1, help="runs of each worker count, in turns")] = 1,
    neighbour: Annotated[int, typer.Option(min=0, help="CPU-bound processes beside it")] = 0,
    device: Annotated[
        str | None, typer.Option(help="cpu | cuda | cuda:N [cuda when a GPU is present, else cpu]")
    ] = None,
) -> None:
    """A grid of VAE cells with 1 worker, then 2, in one run (`latentfuzz grid` in a fresh
    temporary home each time): both wall times and the ratio."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.campaign import bench_device
    from engine.bench.grid import bench_grid

    bench_grid(cells, seeds, generations, (1, 2), repeats, neighbour, bench_device(device), console)


@bench_app.command("gpu")
def bench_gpu_cmd(
    device: Annotated[
        str, typer.Option(help="cuda | cuda:N; cpu rehearses the plan with tiny sizes")
    ] = "cuda",
    out: Annotated[
        Path | None, typer.Option(help="JSON file of the figures (a .md beside it) [TMP]")
    ] = None,
    budget: Annotated[float, typer.Option(min=1, help="wall budget in seconds")] = 480.0,
) -> None:
    """The GPU check in one command: the tests marked cuda, VAE/GAN/DM campaigns on the
    device, campaign-against-raw efficiency at 10/100/1,000 seeds; figures to one file."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.gpu import bench_gpu

    bench_gpu(device, out, budget, console=console)


def parse_sizes(text: str, option: str) -> tuple[int, ...]:
    """Comma-separated positive counts, or a one-line error naming the option."""
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ConfigError(
            f"{option} {text!r}: expected comma-separated positive counts, e.g. 10,100"
        )
    return sizes


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
