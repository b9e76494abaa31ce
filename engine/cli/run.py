"""`latentfuzz run`: one campaign from flags and a YAML config, with a progress bar."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from engine.campaign.startup import STEPS, report
from engine.cli.common import (
    HomeOpt,
    console,
    err,
    start_up_interruptible,
    status_line,
    stopped_in_close,
)
from engine.cli.differential import parse_validators
from engine.cli.strategy_flags import (
    check_flags,
    has_presets,
    lazy_flags,
    merge_settings,
    parse_params,
    with_strategy_flags,
)
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from engine.core.ids import check_id_syntax
from engine.core.threads import apply as apply_threads
from engine.core.threads import choose as choose_threads
from engine.core.untrusted import quote
from store import interrupts
from store.failures import failed_as


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
    guidance: Annotated[
        float | None, typer.Option(help="diffusion: guidance during the search [card's]")
    ] = None,
    seed_guidance: Annotated[
        float | None, typer.Option(help="diffusion: guidance for the seed images [card's]")
    ] = None,
    target_class: Annotated[int | None, typer.Option(help="seed class")] = None,
    fitness: Annotated[
        str | None,
        typer.Option(help="margin | targeted | escape | boundary | divergence [the strategy's]"),
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
    threads: Annotated[
        int | None,
        typer.Option(help="torch threads [the cores this process may use, or $LATENTFUZZ_THREADS]"),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            help="a strategy setting KEY=VALUE (repeat), e.g. -p generations=100; every "
            "setting also has its own flag (--generations 100)",
        ),
    ] = None,
    campaign_id: Annotated[
        str | None, typer.Option("--id", hidden=True, help="campaign id (the dashboard sets it)")
    ] = None,
    strategy_params: dict[str, Any] | None = None,
) -> Any:
    """Run a campaign and print GIFTbench's status line.

    Each strategy's settings are flags (made from its Params; the strategies that have a
    setting are named in its help), or -p KEY=VALUE."""
    # Ctrl-C and the dashboard's stop button (SIGTERM): see start_up_interruptible.

    if campaign_id is not None:
        check_id_syntax(campaign_id)  # refused before torch and the models are even imported
    choice = choose_threads(option=threads)  # a bad value too

    report(resolve_home(home), campaign_id, STEPS[0])  # the dashboard shows each start-up step

    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.campaign.config import load_yaml, parse_config
    from engine.campaign.runner import StoppedAfterClose, run_campaign

    apply_threads(choice.threads)  # torch is loaded, and has done no work yet
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
        raw["validators"] = parse_validators(validator)
    gp = {"guidance": guidance, "seed_guidance": seed_guidance}
    raw["generator_params"] = {
        **raw.get("generator_params", {}),
        **{k: v for k, v in gp.items() if v is not None},
    }
    given = raw.get("strategy_params", {})
    if not isinstance(given, dict):
        raise LatentfuzzError(
            f"strategy_params is {quote(given)} ({type(given).__name__}), expected a mapping of "
            "settings, e.g. strategy_params: {generations: 100, population: 25}"
        )
    strategy = raw.get("strategy") or "ga"
    pairs = parse_params(param)
    given_flags = {k: v for k, v in (strategy_params or {}).items() if v is not None}
    flagged = merge_settings(given_flags, pairs)
    check_flags(strategy, flagged, tuple(pairs))
    raw["strategy_params"] = {**given, **flagged}
    if "step" in flagged and "perturbation" not in flagged and has_presets(strategy):
        raw["strategy_params"]["perturbation"] = "custom"  # a step given is a custom preset
    cfg = parse_config(raw)
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.campaign.config import objectives

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


def register(app: typer.Typer) -> None:
    app.command("run", cls=lazy_flags(run))(with_strategy_flags(run, flags=False))
