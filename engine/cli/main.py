"""The `latentfuzz` command line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.text import Text

from engine.cli.bundle import register as register_bundle
from engine.cli.campaigns import register as register_campaign_commands
from engine.cli.common import (
    HomeOpt,
    Table,
    console,
    err,
    fmt,
    one_line,
    received,
    shown_status,
    start_up_interruptible,
    warn_unfinished,
)
from engine.cli.common import open_store as _store
from engine.cli.data import register as register_data
from engine.cli.differential import register as register_diff
from engine.cli.differential import register_bench as register_diff_bench
from engine.cli.differential import register_zoo as register_diff_zoo
from engine.cli.escape import register as register_escape
from engine.cli.import_results import register as register_import_results
from engine.cli.labels import labels_app
from engine.cli.models import register as register_models
from engine.cli.sd import register as register_sd
from engine.cli.train import register as register_train
from engine.cli.ui import register as register_ui
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Test image classifiers by searching generative models' latent spaces.",
)
app.add_typer(labels_app, name="labels")
register_campaign_commands(app)  # resume, delete, rename, tag, note, doctor
register_ui(app)  # ui
register_train(app)  # train classifier|vae|gan|dm
register_data(app)  # data add, check, list, remove
register_escape(app)  # escape
register_diff(app)  # validate, diff-study, zoo compress
register_import_results(app)  # import-results
register_bundle(app)  # import, grid


def status_line(s: dict[str, Any]) -> str:
    """GIFTbench's status bar, with the counters named for what they count."""
    from store import campaigns as sc
    from store.failures import failed_as
    from store.liveness import RESUMABLE

    pct = "n/a" if s.get("misclassified_pct") is None else f"{s['misclassified_pct']:.1f}%"
    icst = "n/a" if s.get("iterations_icst") is None else f"{s['iterations_icst']:.1f}"
    fail = "n/a" if s.get("iterations_to_failure") is None else f"{s['iterations_to_failure']:.1f}"
    return (
        f"viable seeds {s['viable']} of {s['seeds_total']}, "
        f"{failed_as(s.get('criterion'))} {s['misclassified']} "
        f"({pct} of viable), {sc.ICST_ITERATIONS} {icst}, "
        f"{sc.FAILURE_ITERATIONS} {fail}"
        + (f"; {sc.unfinished_note(s)}" if s.get("interrupted") else "")
        # A failed campaign's seeds are stopped too, and resume refuses it.
        + (f" (`latentfuzz resume {s['campaign_id']}` finishes them)"
           if s.get("interrupted") and s.get("status") in RESUMABLE else "")
    )  # fmt: skip


def _strategy_settings(strategy: str) -> list[str] | None:
    """The parameters of `strategy`; None for an unknown one (the config's check names it)."""
    from engine.search.strategies import STRATEGIES

    if strategy not in STRATEGIES.names():
        return None
    return list(STRATEGIES.get(strategy).Params.model_fields)


def _check_strategy_flags(strategy: str, flagged: dict[str, Any]) -> None:
    """A flag of the GA family that the chosen strategy has no setting for, named as the
    flag ("strategy_params.generations: not a setting here" for `--generations`)."""
    known = _strategy_settings(strategy)
    if known is not None and (extra := [k for k in flagged if k not in known]):
        flags = ", ".join("--" + k.replace("_", "-") for k in extra)
        raise LatentfuzzError(
            f"{flags}: strategy {strategy!r} has no such setting; its settings are "
            f"{', '.join(known)} (give them under strategy_params in a --config YAML file)"
        )


@app.command()
@start_up_interruptible
def run(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML config; flags override it")
    ] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name [mnist]")] = None,
    generator: Annotated[str | None, typer.Option(help="zoo generator or family [vae]")] = None,
    classifier: Annotated[
        str | None, typer.Option(help="zoo classifier, or a TorchScript or ONNX file")
    ] = None,
    classifier_b: Annotated[
        str | None,
        typer.Option(help="a second classifier: differential testing (fitness divergence)"),
    ] = None,
    validator: Annotated[
        list[str] | None,
        typer.Option(
            help="validity filter NAME or NAME=THRESHOLD (repeat); default: all that apply"
        ),
    ] = None,
    strategy: Annotated[str | None, typer.Option(help="search strategy [ga]")] = None,
    seeds: Annotated[int | None, typer.Option(help="number of seeds [10]")] = None,
    generations: Annotated[
        int | None, typer.Option(help="generation budget per seed [250]")
    ] = None,
    population: Annotated[int | None, typer.Option(help="population per seed [25]")] = None,
    best_left: Annotated[int | None, typer.Option(help="elites kept [10]")] = None,
    perturbation: Annotated[
        str | None, typer.Option(help="low | high | strong | custom [strong]")
    ] = None,
    step: Annotated[float | None, typer.Option(help="step when --perturbation custom")] = None,
    reset_to: Annotated[
        str | None,
        typer.Option(help="step after an improvement: initial (2 x step, GIFTbench) | step"),
    ] = None,
    guidance: Annotated[
        float | None, typer.Option(help="diffusion: guidance during the search [card's]")
    ] = None,
    seed_guidance: Annotated[
        float | None, typer.Option(help="diffusion: guidance for the seed images [card's]")
    ] = None,
    target_class: Annotated[int | None, typer.Option(help="seed class")] = None,
    fitness: Annotated[
        str | None, typer.Option(help="margin | targeted | boundary | divergence [the strategy's]")
    ] = None,
    criterion: Annotated[str | None, typer.Option(help="failure criterion [the fitness's]")] = None,
    target: Annotated[
        int | None, typer.Option(help="class a targeted search must reach (--fitness targeted)")
    ] = None,
    escape_per_pair: Annotated[
        int | None,
        typer.Option(help="class-escape matrix: N targeted searches per (source, target) pair"),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="random seed [0]")] = None,
    name: Annotated[str | None, typer.Option(help="campaign name")] = None,
    batch_size: Annotated[int | None, typer.Option(help="max images per decode call")] = None,
    no_individuals: Annotated[
        bool, typer.Option("--no-individuals", help="skip per-individual rows")
    ] = False,
    data_dir: Annotated[str | None, typer.Option(help="folder of a local dataset")] = None,
    device: Annotated[str | None, typer.Option(help="cpu | cuda | cuda:N [cpu]")] = None,
    home: HomeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    campaign_id: Annotated[
        str | None, typer.Option("--id", hidden=True, help="campaign id (the dashboard sets it)")
    ] = None,
) -> Any:
    """Run a campaign and print GIFTbench's status line."""
    # Ctrl-C and the dashboard's stop button (SIGTERM): see start_up_interruptible.
    from engine.core.ids import check_id_syntax

    if campaign_id is not None:
        check_id_syntax(campaign_id)  # refused before torch and the models are even imported
    from engine.campaign.startup import STEPS, report

    report(resolve_home(home), campaign_id, STEPS[0])  # the dashboard shows each start-up step
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from engine.campaign.config import load_yaml, parse_config
    from engine.campaign.runner import StoppedAfterClose, run_campaign
    from store import interrupts

    raw: dict[str, Any] = load_yaml(config) if config else {}
    flat = {
        "dataset": dataset,
        "generator": generator,
        "classifier": classifier,
        "classifier_b": classifier_b,
        "strategy": strategy,
        "seeds": seeds,
        "target_class": target_class,
        "fitness": fitness,
        "criterion": criterion,
        "target": target,
        "escape_per_pair": escape_per_pair,
        "seed": seed,
        "name": name,
        "batch_size": batch_size,
        "data_dir": data_dir,
        "device": device,
    }
    raw.update({k: v for k, v in flat.items() if v is not None})
    if no_individuals:
        raw["record_individuals"] = False
    if validator:
        from engine.cli.differential import parse_validators

        raw["validators"] = parse_validators(validator)
    sp = {
        "generations": generations,
        "population": population,
        "best_left": best_left,
        "perturbation": perturbation,
        "step": step,
        "reset_to": reset_to,
    }
    gp = {"guidance": guidance, "seed_guidance": seed_guidance}
    raw["generator_params"] = {
        **raw.get("generator_params", {}),
        **{k: v for k, v in gp.items() if v is not None},
    }
    given = raw.get("strategy_params", {})
    if not isinstance(given, dict):
        raise LatentfuzzError(
            f"strategy_params is {given!r} ({type(given).__name__}), expected a mapping of "
            "settings, e.g. strategy_params: {generations: 100, population: 25}"
        )
    strategy = raw.get("strategy") or "ga"
    flagged = {k: v for k, v in sp.items() if v is not None}
    _check_strategy_flags(strategy, flagged)
    raw["strategy_params"] = {**given, **flagged}
    presets = "perturbation" in (_strategy_settings(strategy) or ["perturbation"])
    if step is not None and perturbation is None and presets:
        raw["strategy_params"]["perturbation"] = "custom"  # SINVAD's step has no presets
    cfg = parse_config(raw)
    from engine.campaign.config import objectives
    from store.failures import failed_as

    failed = failed_as(objectives(cfg)[1].name)  # "A and B disagree" for two classifiers
    h = resolve_home(home)
    interrupts.checkpoint()  # the imports are done: a Ctrl-C during them stops here
    report(h, campaign_id, STEPS[1])
    with Progress(
        TextColumn("[bold]gen {task.completed}/{task.total}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=err,
        # Only on a terminal: on a pipe the bar drew nothing useful and left an empty line
        # before a refusal (`--generations 0`), which was then not one line.
        disable=quiet or not err.is_terminal,
        # Gone when the command ends: a refusal (an unknown generator, say) printed
        # below a "gen 0/None" bar that never moved.
        transient=True,
    ) as bar:
        task = bar.add_task("campaign", total=None, info="starting")
        # `latentfuzz bench` times start-up (command to first generation) through this file.
        stamp = os.environ.get("LATENTFUZZ_FIRST_GENERATION_FILE")

        def on_progress(p) -> None:
            nonlocal stamp
            if stamp:
                Path(stamp).write_text(repr(time.time()))
                stamp = None
            bar.update(
                task,
                completed=p.generation,
                total=p.generations,
                info=f"active {p.active}/{p.viable}  {failed} {p.failed}  evals {p.evaluations}",
            )

        stopped = False
        try:
            result = run_campaign(cfg, h, progress=on_progress, campaign_id=campaign_id)
        except StoppedAfterClose as e:  # pressed while it closed: it closed all the same
            result, stopped = e.result, True
        except KeyboardInterrupt:
            stopped_in_close(h)
            raise  # in the start-up (it said the above, which was not so)
    console.print(
        f"campaign [bold]{result.campaign_id}[/] {result.status} in {result.wall_seconds:.1f}s "
        f"({result.evaluations:,} model evaluations, {result.search_evaluations:,} of them by "
        "the search)"
    )
    console.print(status_line(result.summary))
    if result.status == "interrupted" or stopped:
        raise typer.Exit(130)
    return result


def stopped_in_close(home: Path) -> None:
    """After a KeyboardInterrupt out of a campaign's close: say what became of it in one
    line and exit 130; return if it came from elsewhere (the start-up)."""
    from store import interrupts, recovery

    if recovery.pending(home):  # a Ctrl-C while the last rows waited for the store
        err.print("interrupted while waiting for the store; the campaign's last rows are in "
                  "a recovery file that the next command writes",
                  markup=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(130) from None
    if (cid := interrupts.forced()) is not None:
        err.print(f"stopped while campaign {cid} was closing; it is listed as crashed, and "
                  f"`latentfuzz resume {cid}` completes it",
                  markup=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(130) from None


@app.command()
def campaigns(home: HomeOpt = None) -> None:
    """List campaigns, newest first."""
    from store import campaigns as sc
    from store.failures import failed_as

    df = sc.list_campaigns(_store(home))
    if df.empty:
        console.print("no campaigns yet; start one with `latentfuzz run`")
        return
    cols = {  # header -> the row's text
        "id": lambda r: r.id,
        "name": lambda r: "" if r.name == r.id else str(r.name),
        "status": lambda r: shown_status(home, r.id, r.status),
        "dataset": lambda r: r.dataset,
        "generator": lambda r: r.generator,
        "classifier": lambda r: str(r.classifier)
        + (f" vs {r.classifier_b}" if fmt(r.classifier_b) else ""),
        "strategy": lambda r: f"{r.strategy}" + (f" {r.preset}" if fmt(r.preset) else ""),
        "viable": lambda r: f"{r.viable}/{r.n_seeds}",
        # "misclassified 3" read as three errors of A for a differential campaign.
        "failing": lambda r: f"{r.misclassified}" + (
            f" ({p}%)" if (p := fmt(r.misclassified_pct, ".0f")) else "") + (
            "" if (k := failed_as(fmt(r.criterion))) == "misclassified" else f" {k}"),
        "iterations (ICST)": lambda r: fmt(r.iterations_icst, ".1f"),
        "iter. to failure": lambda r: fmt(r.iterations_to_failure, ".1f"),
        "created": lambda r: str(r.created_at)[:16],
    }  # fmt: skip
    narrow = console.width < 150
    if narrow:
        # A terminal of 80 columns cut every one of the 12 columns to "…": here the ones
        # that tell campaigns apart, without borders, the name last; `show ID` has the rest.
        keep = ("id", "status", "generator", "strategy", "failing", "iterations (ICST)",
                *(("name",) if console.width >= 110 else ()))  # fmt: skip
        cols = {"ICST" if k.startswith("iter") else k: cols[k] for k in keep}
        cols["ICST"] = lambda r: fmt(r.iterations_icst, ".0f")
    t = Table(*cols, box=None if narrow else box.HEAVY_HEAD, pad_edge=not narrow)
    for c in t.columns[:-1] if narrow else t.columns[:1]:
        c.no_wrap = True
    for r in df.itertuples():
        t.add_row(*(f(r) for f in cols.values()))
    console.print(t)


@app.command()
def show(campaign_id: str, home: HomeOpt = None) -> None:
    """Print a campaign's per-seed table and status line."""
    from store import campaigns as sc
    from store.failures import failed_as

    store = _store(home)
    c = sc.campaign(store, campaign_id)
    if c is None:
        raise LatentfuzzError(f"no campaign {campaign_id!r}; `latentfuzz campaigns` lists them")
    # Names are the user's text: "[v2]" in one was read as markup and vanished.
    console.print(Text.assemble(
        (c["id"], "bold"), f" {shown_status(home, c['id'], c['status'])}",
        f"  {c['name']!r}" if c["name"] and c["name"] != c["id"] else "",
        f"  {c['dataset']} / {c['generator']} / {c['classifier']}",
        f" vs {c['classifier_b']}" if c.get("classifier_b") else "",
        f" / {c['strategy']} {c['preset'] or ''}  seed {c['random_seed']}",
    ))  # fmt: skip
    df = sc.seeds(store, campaign_id)
    failed = failed_as((c["config"] or {}).get("criterion"))
    two = bool(c.get("classifier_b"))  # a differential campaign: both classifiers' answers

    def pred(r) -> str:
        a = fmt(r.final_pred, "d")
        return f"{a} / {fmt(r.final_pred_b, 'd')}" if two and a else a

    t = Table(
        "seed",
        "label",
        "viable",
        "status",
        "iterations",
        "final pred (A / B)" if two else "final pred",
        "final fitness",
        "result image",
    )
    for r in df.itertuples():
        t.add_row(
            str(r.seed_idx),
            str(r.seed_label),
            "yes" if r.viable else "no",
            failed if r.status == "misclassified" else r.status,
            fmt(r.iterations, "d"),
            pred(r),
            fmt(r.final_fitness, ".3f"),
            fmt(r.result_image),
        )
    console.print(t)
    console.print(status_line(sc.summary(store, campaign_id)))
    if c["error"]:
        console.print(f"error: {c['error']}", markup=False, highlight=False)


@app.command()
def export(
    campaign_id: str,
    zip_path: Annotated[
        Path | None, typer.Option("--zip", help="zip of image pairs and seeds.csv to write")
    ] = None,
    bundle: Annotated[
        Path | None,
        typer.Option("--bundle", help="bundle to write (a zip): rows, images, manifest"),
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Write seed/result image pairs and the per-seed CSV to a zip file (--zip), or the
    whole campaign as a bundle that `latentfuzz import` reads (--bundle)."""
    from engine.io.export import export_zip
    from store import campaigns as sc

    if (zip_path is None) == (bundle is None):
        raise LatentfuzzError("give one of --zip FILE (image pairs) or --bundle FILE (campaign)")
    h = resolve_home(home)
    store = _store(home)
    c = sc.campaign(store, campaign_id)
    if c is not None and not (bundle is not None and c["status"] == "running"):
        warn_unfinished(home, campaign_id, c["status"])  # a bundle of a running one is refused
    if bundle is not None:
        from engine.cli.bundle import export_bundle_cmd

        export_bundle_cmd(campaign_id, bundle, home)
        return
    n = export_zip(store, h, campaign_id, zip_path)
    console.print(f"wrote {zip_path} ({n} image pairs + seeds.csv)", markup=False)


bench_app = typer.Typer(help="Benchmarks: engine efficiency, generator inference time.")
app.add_typer(bench_app, name="bench")
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
    from engine.bench.campaign import bench_device, bench_engine
    from engine.bench.scale import bench_scale
    from engine.studies.strategy import check_strategies

    device = bench_device(device)
    counts = tuple(int(x) for x in sizes.split(",") if x.strip())
    if counts:
        bench_scale(
            counts, generations, large_generations, generator, console, perturbation,
            device=device,
        )  # fmt: skip
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
        from engine.cli.differential import bench_nsga2_cmd

        bench_nsga2_cmd(embeddings="pca", seeds=4, generations=10, population=50)


@bench_app.command("generators")
def bench_generators_cmd(
    dataset: str = "mnist",
    write_cards: Annotated[bool, typer.Option(help="record the figures in the cards")] = True,
) -> None:
    """Inference time per image at batch 1 and 25 for every bundled generator (GIFTbench
    Table II) and classifier."""
    from engine.bench.campaign import bench_classifiers, bench_generators

    bench_generators(dataset, write_cards=write_cards, console=console)
    bench_classifiers(dataset, write_cards=write_cards, console=console)


@app.command()
def study(
    seeds: Annotated[int, typer.Option(help="seeds per campaign")] = 20,
    generations: Annotated[int, typer.Option(help="generation budget")] = 250,
    seed: Annotated[int, typer.Option(help="random seed of every campaign")] = 1,
    dataset: str = "mnist",
    generators: Annotated[str | None, typer.Option(help="comma-separated [all bundled]")] = None,
    presets: Annotated[str, typer.Option(help="comma-separated presets")] = "low,high,strong",
    show: Annotated[str | None, typer.Option(help="only print the table of study ID")] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            help="comma-separated strategies to compare at the GA's evaluation "
            "budget, e.g. ga,sinvad,random (one generator: --generators, default vae)"
        ),
    ] = None,  # fmt: skip
    workers: Annotated[
        int, typer.Option(help="cells at a time, each its own process (0: this process)")
    ] = 1,
    home: HomeOpt = None,
) -> None:
    """Run the ICST effectiveness study: every bundled generator x preset, same seeds and
    budget (a grid: `latentfuzz grid` runs any such grid)."""
    from engine.core.csv_io import to_csv
    from engine.studies.effectiveness import run_study
    from store import studies as ss

    h = resolve_home(home)
    if strategies is not None or (show is not None and _is_strategy_study(home, show)):
        _strategy_study(h, home, strategies, seeds, generations, seed, dataset, generators, show,
                        workers)  # fmt: skip
        return
    if show is None:

        def done(g: str, p: str, res) -> None:
            err.print(
                f"{g} {p}: {status_line(res.summary)} ({res.wall_seconds:.0f}s)", markup=False
            )

        def failed(g: str, p: str, error: str) -> None:
            err.print(f"{g} {p}: failed: {error}", markup=False, highlight=False)

        show, _ = run_study(
            h,
            seeds,
            generations,
            seed,
            dataset,
            generators.split(",") if generators else None,
            tuple(presets.split(",")),
            on_campaign=done,
            workers=workers,
            on_failed=failed,
        )
    table = ss.study_table(_store(home), show)
    if table.empty:
        raise LatentfuzzError(
            f"no study {show!r}; studies: {list(ss.campaign_studies(_store(home))['study'])}"
        )
    console.print(
        study_table(
            table, show, seeds=int(table["seeds"].iloc[0]), seed=seed, generations=generations
        )
    )
    path = h / "studies" / f"{show}.csv"
    path.parent.mkdir(exist_ok=True)
    to_csv(table, path)  # formula cells neutralised
    console.print(f"saved {path}", markup=False)


def _is_strategy_study(home: Path | None, study_id: str) -> bool:
    from store import studies as ss

    return ss.strategy_table(_store(home), study_id)["strategy"].nunique() > 1


def _strategy_study(h: Path, home, strategies, seeds, generations, seed, dataset, generators,
                    show, workers: int = 1) -> None:  # fmt: skip
    """`study --strategies`: one campaign per strategy at an equal evaluation budget."""
    from engine.core.csv_io import to_csv
    from engine.studies.strategy import print_table, run_strategy_study
    from store import studies as ss

    if show is None:

        def done(name: str, res) -> None:
            err.print(f"{name}: {status_line(res.summary)} ({res.wall_seconds:.0f}s)", markup=False)

        show, _ = run_strategy_study(
            h, [s.strip() for s in strategies.split(",") if s.strip()], seeds, generations,
            seed, dataset, (generators or "vae").split(",")[0], on_campaign=done,
            workers=workers,
        )  # fmt: skip
    table = ss.strategy_table(_store(home), show)
    console.print(print_table(table, show))
    path = h / "studies" / f"{show}.csv"
    path.parent.mkdir(exist_ok=True)
    to_csv(table, path)  # formula cells neutralised
    console.print(f"saved {path}", markup=False)


def study_table(df, study_id: str, seeds: int, seed: int, generations: int) -> Table:
    t = Table(
        "generator",
        "perturbation",
        "% viable seeds",
        "% misclassification (#)",
        "iterations, mean (std): viable seeds, survivors at budget",
        "iterations to failure, mean (std): failing seeds",
        title=f"{study_id}: {seeds} seeds per cell, {generations} generations, seed {seed}",
    )
    for r in df.itertuples():
        t.add_row(
            r.generator,
            str(r.preset),
            f"{r.viable_pct:.0f}",
            f"{fmt(r.misclassified_pct, '.0f') or 'n/a'} ({r.misclassified})",
            f"{fmt(r.iterations_icst, '.1f') or 'n/a'} "
            f"({fmt(r.iterations_icst_std, '.1f') or '-'})",
            f"{fmt(r.iterations_to_failure, '.1f') or 'n/a'} "
            f"({fmt(r.iterations_to_failure_std, '.1f') or '-'})",
        )
    return t


zoo_app = typer.Typer(
    no_args_is_help=True,
    help="Models: the bundled zoo and your own (under $LATENTFUZZ_HOME/models).",
)
# `models` and `zoo` are one group: `latentfuzz models import` reads as users expect.
app.add_typer(zoo_app, name="models")
app.add_typer(zoo_app, name="zoo")
register_diff_zoo(zoo_app)  # zoo compress
register_models(zoo_app)  # models import, models import-generator
register_sd(zoo_app)  # models import-pipeline


@zoo_app.command("list")
def zoo_list(home: HomeOpt = None) -> None:
    """Every zoo model with its quality and inference figures."""
    from engine.core.home import use_home
    from engine.models import zoo

    use_home(home)  # user models live under it; listing creates nothing

    t = Table(
        "name", "kind", "dataset", "source", "parameters", "quality", "ms/img b1", "ms/img b25"
    )
    for c in zoo.list_cards():
        m = c.get("metrics", {})
        q = (
            f"accuracy {m['test_accuracy']:.3f}"
            if "test_accuracy" in m
            else f"viability {fmt(m.get('viability'), '.3f') or 'not measured'}"
        )
        inf = c.get("inference", {})
        t.add_row(
            c["name"],
            c["kind"],
            c["dataset"],
            "bundled" if zoo.is_bundled(c["name"]) else "yours",
            f"{c['parameters']:,}",
            q,
            fmt(inf.get("ms_per_image_b1"), ".3f"),
            fmt(inf.get("ms_per_image_b25"), ".3f"),
        )
    console.print(t)


@zoo_app.command("measure")
def zoo_measure(
    name: Annotated[str | None, typer.Argument(help="generator [all generators]")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset [the card's; mnist]")] = None,
    data_dir: Annotated[str | None, typer.Option(help="folder of the dataset's files")] = None,
    bundled: Annotated[
        bool, typer.Option(help="also the bundled zoo's cards (the project's models/ folder)")
    ] = False,
    classifier: Annotated[
        str | None,
        typer.Option(help="measures viability [the card's, else the dataset's default]"),
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Re-measure generators' latent bounds, viability and inference time into their cards:
    your generators of the dataset, or the one named."""
    from engine.datasets import get_dataset
    from engine.models import zoo
    from engine.models.measure import finish_generator_card
    from engine.studies.effectiveness import bundled_generators

    resolve_home(home)  # user models live under it
    if dataset is None:
        dataset = zoo.load_card(name)["dataset"] if name else "mnist"
    ds = get_dataset(dataset, data_dir)
    names = [name] if name else bundled_generators(dataset)
    # The bundled cards are the project's published figures: a user's `models measure`
    # rewrote them with this machine's timings (and in an installed package, inside it).
    if not bundled and (theirs := [n for n in names if zoo.is_bundled(n)]):
        if name:
            raise LatentfuzzError(
                f"{name} is a bundled model, whose card holds the project's figures; pass "
                "--bundled to measure it again into that card"
            )
        names = [n for n in names if n not in theirs]
        if not names:
            raise LatentfuzzError(
                f"no generator of yours for dataset {dataset} (the bundled "
                f"{', '.join(theirs)} are measured only with --bundled)"
            )
    for n in names:
        # The classifier it was measured with: an imported decoder's viability, measured
        # with the user's own classifier at import, became "not measured".
        was = (zoo.load_card(n).get("metrics") or {}).get("viability_classifier")
        card = finish_generator_card(n, ds, classifier or was, None)
        v = card["metrics"]["viability"]
        console.print(
            f"{n}: viability {fmt(v, '.4f') or 'not measured'} "
            f"({card['metrics']['viability_how']}), latent range "
            f"{card['latent_range']:.3f}, {card['inference']}"
        )


def flow_command_lists(t: typer.Typer) -> None:
    """Each command's line in its group's list: its docstring's first paragraph as one
    flowing text. Typer kept the docstring's line breaks there, so the list broke lines
    after a few words ("from its last written generation, to the" / "same results ...")."""
    for info in t.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.strip().split("\n\n")[0].split())
    for group in t.registered_groups:
        flow_command_lists(group.typer_instance)


flow_command_lists(app)


def literal_brackets(command) -> None:
    """Help texts are rich markup: a default in brackets, "[mnist]", vanished as a style
    tag ("dataset name"), while "[10]" stayed."""
    from rich.markup import escape

    for p in command.params:
        if getattr(p, "help", None):
            p.help = escape(p.help)
    for sub in getattr(command, "commands", {}).values():
        literal_brackets(sub)


def main() -> None:
    # Not engine.datasets' DatasetError (a LatentfuzzError), whose import pulls in torch,
    # nor store.connection's module, which pulls in DuckDB and pandas.
    from store.errors import StoreBusy, StoreError

    try:
        from typer._click import exceptions as click_errors
    except ImportError:  # a typer that uses click itself
        from click import exceptions as click_errors

    try:
        # Not standalone: typer would print a usage error as a boxed panel of several
        # lines; here it is one line, as every other error.
        command = typer.main.get_command(app)
        literal_brackets(command)
        code = command(standalone_mode=False)
    except getattr(click_errors, "NoArgsIsHelpError", ()):
        sys.exit(2)  # the group's help, which typer has printed (as standalone mode does)
    except click_errors.ClickException as e:
        where = getattr(getattr(e, "ctx", None), "command_path", None) or "latentfuzz"
        err.print("[red]error:[/] ", end="")
        got = received(e, sys.argv[1:])
        got = f"got {got!r}; " if got is not None else ""
        err.print(f"{' '.join(e.format_message().split())} ({got}`{where} --help` lists what "
                  "it takes)", markup=False, highlight=False, soft_wrap=True)  # fmt: skip
        sys.exit(e.exit_code)
    except typer.Abort:
        err.print("aborted", markup=False, highlight=False)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - a bug's traceback is re-raised below
        said = str(e) if isinstance(e, (LatentfuzzError, StoreError, StoreBusy)) else one_line(e)
        if said is None:
            raise
        # One line, no traceback; markup off so that paths with [brackets] print as they are.
        err.print("[red]error:[/] ", end="")
        err.print(said, markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    if isinstance(code, int) and code:
        sys.exit(code)  # typer.Exit(n) and Ctrl-C's 130, which it returns when not standalone


if __name__ == "__main__":
    main()
