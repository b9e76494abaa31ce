"""`latentfuzz bench`'s honest half: the engine against the machine's limit, at every size.

    physical limit    = raw decode+classify evaluations/s sustained at the best batch size:
                        a sweep of every candidate size (engine/campaign/batching.py) ranks them,
                        then the three best run back to back for a few seconds each, in
                        two turns, and the fastest counts; bare forward passes only (no checks,
                        search, store or images)
    engine efficiency = the campaign's evaluations/s / the physical limit
    shape bound       = the best efficiency a campaign evaluating as many candidates per
                        step as this one did could reach: each step's candidates split
                        into the fastest equal batches, at the sweep's rate by size; a
                        10-seed campaign's last seeds evaluate 15 candidates a generation,
                        which no engine runs at the best batch's rate
    loop efficiency   = engine efficiency / shape bound: what the engine's own work
                        (search, checks, store, images) leaves of what the shape allows

The limit does not depend on the batch size the campaign happened to use, so a badly
chosen batch shows as low efficiency instead of hiding in a slow twin. It is sustained
throughput, not the fastest of a few single calls (which a campaign, running for minutes,
cannot average), and it is measured just before and just after each size's campaigns, their
mean counting: on this shared machine throughput drifts by a third within minutes, so a
limit measured once for all sizes compares each campaign with another minute's machine.
A size whose campaign is short (10 seeds: about 2 s) runs until its runs add up to 10 s,
at most 5 runs, and the run of median evaluations/s counts (all are printed). Each
campaign runs as the user runs it, `latentfuzz run` in its own process, which also gives its
start-up time (command to the end of the first generation, through
$LATENTFUZZ_FIRST_GENERATION_FILE, which the CLI stamps at its first progress report; at
1,000 seeds that generation's 25,000 evaluations are most of it) and its peak memory
(the child's maximum resident set, from wait4).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from engine.bench.neighbour import child_settings, describe
from engine.campaign import batching
from engine.core.malloc import keep_freed_memory

FIRST_GENERATION_ENV = "LATENTFUZZ_FIRST_GENERATION_FILE"
#: Sizes below the campaign sweep's smallest, for the shape bound.
SMALL_SIZES = (1, 2, 4, 8)
CLI = [sys.executable, "-m", "engine.entry"]  # signals taken from its first line


def limit_forward(generator: str = "vae", device: str = "cpu"):
    """The bare decode+classify of n latents for the bench's generator and default
    classifier (engine.campaign.batching.raw_forward)."""
    # Deferred (start-up time: loads duckdb, pyarrow, safetensors).
    from engine.campaign.config import parse_config
    from engine.campaign.resolve import resolve

    keep_freed_memory()  # the allocator the campaigns run with (engine/core/malloc.py)
    r = resolve(parse_config({"seeds": 1, "generator": generator, "device": device}))
    return batching.raw_forward(r.generator, r.classifier, max(batching.CANDIDATES))


def physical_limit(fn, budget_s: float = 20.0) -> dict[int, float]:
    """Raw evaluations/s by batch size, every candidate size tried (5 runs each, the
    fastest kept, then the best and its neighbours again in turns), in this process with
    this process's torch threads: the ranking."""

    sizes = SMALL_SIZES + batching.CANDIDATES
    return batching.sweep(
        fn, 1 << 30, budget_s=budget_s, candidates=sizes, reps=5, stop_past_peak=False
    )


def candidates_per_step(store, cid: str) -> list[int]:
    """How many candidates campaign `cid` evaluated at once, step by step: its seeds, then
    each generation's candidates over all seeds still searching (from the generations
    rows' running evaluation count per seed). A survivor's image decoded again for a strip
    (engine/campaign/loop.py `images_of`: never in the GA, a few in other strategies) is not
    counted."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    g = sc.generations(store, cid)[["seed_idx", "generation", "evaluations"]]
    new = g["evaluations"] - g.groupby("seed_idx")["evaluations"].shift(fill_value=0)
    per_generation = new.groupby(g["generation"]).sum().sort_index()
    n_seeds = int(sc.campaign(store, cid)["n_seeds"])
    return [n_seeds, *map(int, per_generation)]


def shape_bound(counts: list[int], curve: dict[int, float]) -> float:
    """The highest efficiency against the best size's rate that evaluating `counts`
    candidates step by step allows: each step split into the k equal batches that run
    fastest at `curve`'s rate (items/s by batch size, linear between the sizes measured)."""
    sizes = np.array(sorted(curve), dtype=float)
    rate = np.array([curve[int(b)] for b in sizes])
    seconds = 0.0
    for n in counts:
        k = np.arange(max(1, int(np.ceil(n / sizes[-1]))), max(1, n) + 1)
        seconds += n / np.interp(n / k, sizes, rate).max()
    return sum(counts) / seconds / rate.max() if seconds else 1.0


def sustained(fn, batch: int, seconds: float) -> float:
    """Evaluations/s of `fn(batch)` run back to back for about `seconds` (one call first,
    untimed: a size's first call builds its kernels)."""
    fn(batch)
    n, t = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t) < seconds:
        fn(batch)
        n += batch
    return n / elapsed


def sustained_limit(fn, ranked: list[int], seconds: float, turns: int = 2) -> tuple[float, int]:
    """(evals/s, batch): the fastest sustained throughput among the sweep's best sizes,
    each run `turns` times in turns for `seconds` in all (a slow moment is not one size's)."""
    best: dict[int, float] = {}
    for _ in range(turns):
        for b in ranked:
            best[b] = max(best.get(b, 0.0), sustained(fn, b, seconds / turns))
    return max((v, b) for b, v in best.items())


def run_cli(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(seconds, peak resident KiB) of one `latentfuzz` command."""
    with tempfile.TemporaryFile() as errs:
        t = time.perf_counter()
        p = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=errs)
        # wait4 reaps the child itself: its own peak memory, not the largest child's so far.
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            errs.seek(0)
            tail = errs.read().decode(errors="replace")[-500:]
            raise RuntimeError(f"latentfuzz {' '.join(args)} failed: {tail}")
    return seconds, usage.ru_maxrss


def run_args(
    seeds: int, generations: int, generator: str, perturbation: str, home: Path, device: str
) -> list[str]:
    """`latentfuzz run`'s arguments for a bench campaign (seed 1, quiet)."""
    return [
        "run",
        "--seeds",
        str(seeds),
        "--generations",
        str(generations),
        "--generator",
        generator,
        "--perturbation",
        perturbation,
        "--seed",
        "1",
        "--quiet",
        "--home",
        str(home),
        "--device",
        device,
    ]


def campaign_at(
    seeds: int,
    generations: int,
    generator: str,
    home: Path,
    perturbation: str = "high",
    device: str = "cpu",
) -> dict[str, float]:
    """One CLI campaign at `seeds`; figures from its process and its campaign row."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import Store
    from store import campaigns as sc

    stamp = home / f"first-{seeds}.txt"
    env = {**os.environ, FIRST_GENERATION_ENV: str(stamp)}
    start = time.time()
    _, peak_kib = run_cli(run_args(seeds, generations, generator, perturbation, home, device), env)
    store = Store(home / "latentfuzz.duckdb")
    row = sc.campaign(store, sc.list_campaigns(store)["id"].iloc[0])
    evals, wall = float(row["evaluations"]), float(row["wall_seconds"])
    return {
        "counts": candidates_per_step(store, row["id"]),
        "seeds": seeds,
        "generations": generations,
        "evaluations": evals,
        "campaign_evals_per_s": evals / wall,
        "store_share": float(row["store_seconds"]) / wall,
        "startup_s": float(stamp.read_text()) - start,
        "peak_memory_gb": peak_kib / 2**20,
        "batch_size": row["config"]["batch_size"],
        "environment": dict(row["environment"]),
    }


def median_run(runs: list[dict]) -> dict:
    """The run of median evaluations/s (the lower middle one of an even count), whole: its
    store share, start-up and memory come with it."""
    ranked = sorted(runs, key=lambda r: r["campaign_evals_per_s"])
    return dict(ranked[(len(ranked) - 1) // 2])


def help_seconds(n: int = 3) -> float:
    """Median seconds of `latentfuzz --help`."""
    return float(np.median([run_cli(["--help"], dict(os.environ))[0] for _ in range(n)]))


def measure(
    sizes: tuple[int, ...] = (10, 100, 1000),
    generations: int = 250,
    large_generations: int = 25,
    generator: str = "vae",
    perturbation: str = "high",
    limit_budget_s: float = 20.0,
    device: str = "cpu",
    sustain_s: float = 3.0,
    min_campaign_s: float = 10.0,
    max_runs: int = 5,
    one_seed: bool = False,
) -> dict:
    """The sweep, then one campaign per size against the sustained limit measured around
    it, in a home of its own; with `one_seed`, also a 1-seed, 1-generation campaign's
    seconds from command to exit (after the warm-up, as a user's second campaign)."""
    fn = limit_forward(generator, device)
    peak = dict(sorted(physical_limit(fn, limit_budget_s).items()))
    ranked = sorted(peak, key=peak.get, reverse=True)[:3]
    rows = []
    out: dict = {"peak": peak, "ranked": ranked, "sizes": rows}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        # The first campaign of a model pair measures its batch size (cached after): a
        # warm-up, so every size is timed as a user's second campaign runs.
        out["environment"] = campaign_at(2, 1, generator, home, perturbation, device)["environment"]
        if one_seed:
            out["one_seed_s"] = run_cli(
                [*run_args(1, 1, generator, perturbation, home, device)], dict(os.environ)
            )[0]
        for n in sizes:
            g = large_generations if n >= 1000 else generations
            before, b1 = sustained_limit(fn, ranked, sustain_s)
            runs = [campaign_at(n, g, generator, home, perturbation, device)]
            # A 10-seed campaign lasts about 2 s: one slow second of a shared machine
            # moves it by a fifth. Short campaigns run again until their runs add up to
            # `min_campaign_s` (at most `max_runs`), and the median run counts.
            while (
                sum(r["evaluations"] / r["campaign_evals_per_s"] for r in runs) < min_campaign_s
                and len(runs) < max_runs
            ):
                runs.append(campaign_at(n, g, generator, home, perturbation, device))
            after, b2 = sustained_limit(fn, ranked, sustain_s)
            row = median_run(runs)
            row.update(
                limit=(before + after) / 2,
                limit_before=before,
                limit_after=after,
                limit_batch=b1 if before >= after else b2,
                runs=[r["campaign_evals_per_s"] for r in runs],
            )
            row["efficiency"] = row["campaign_evals_per_s"] / row["limit"]
            row["shape_bound"] = shape_bound(row.pop("counts"), peak)
            rows.append(row)
        shutil.rmtree(home / "campaigns", ignore_errors=True)
    return out


def bench_scale(
    sizes: tuple[int, ...] = (10, 100, 1000),
    generations: int = 250,
    large_generations: int = 25,
    generator: str = "vae",
    console: Console | None = None,
    perturbation: str = "high",
    help_runs: int = 3,
    limit_budget_s: float = 20.0,
    device: str = "cpu",
    sustain_s: float = 3.0,
    min_campaign_s: float = 10.0,
    max_runs: int = 5,
) -> dict:
    """The sweep, then one campaign per size (`large_generations` from 1,000 seeds on), each
    against the sustained limit measured around it; start-up and --help time. Returns the
    figures."""
    console = console or Console()
    m = measure(
        sizes,
        generations,
        large_generations,
        generator,
        perturbation,
        limit_budget_s,
        device,
        sustain_s,
        min_campaign_s,
        max_runs,
    )
    peak, ranked, rows = m["peak"], m["ranked"], m["sizes"]
    help_s = help_seconds(help_runs)
    t = Table(
        "seeds",
        "generations",
        "evaluations",
        "campaign evals/s",
        "physical limit",
        "engine efficiency",
        "shape bound",
        "store share",
        "start-up (s)",
        "peak memory (GB)",
        "batch",
        title=f"latentfuzz bench: {generator}, {perturbation}, seed 1, {device}; this process: "
        f"{describe()}; {child_settings(m['environment'])}",
    )
    for r in rows:
        t.add_row(
            str(r["seeds"]),
            str(r["generations"]),
            f"{r['evaluations']:,.0f}",
            f"{r['campaign_evals_per_s']:,.0f}",
            f"{r['limit']:,.0f} (batch {r['limit_batch']})",
            f"{r['efficiency']:.3f}",
            f"{r['shape_bound']:.3f}",
            f"{100 * r['store_share']:.2f}%",
            f"{r['startup_s']:.2f}",
            f"{r['peak_memory_gb']:.2f}",
            str(r["batch_size"]),
        )
    console.print(t)
    for r in rows:  # whole figures too: a narrow terminal cuts the table's cells
        console.print(
            f"{r['seeds']} seeds, {r['generations']} generations: {r['evaluations']:,.0f} "
            f"evaluations, {r['campaign_evals_per_s']:,.1f} evals/s against a physical limit "
            f"of {r['limit']:,.1f} (before {r['limit_before']:,.1f}, after "
            f"{r['limit_after']:,.1f}), efficiency {r['efficiency']:.3f} (shape bound "
            f"{r['shape_bound']:.3f}, loop {r['efficiency'] / r['shape_bound']:.3f}), store "
            f"share {100 * r['store_share']:.2f}%, start-up {r['startup_s']:.2f} s, peak memory "
            f"{r['peak_memory_gb']:.2f} GB, batch {r['batch_size']}"
            + (
                f"; median of {len(r['runs'])} runs of "
                + ", ".join(f"{v:,.0f}" for v in r["runs"])
                + " evals/s"
                if len(r["runs"]) > 1
                else ""
            )
        )
    console.print(
        "sweep by batch size (raw decode+classify evals/s, fastest of 5 calls): "
        + ", ".join(f"{b}: {v:,.0f}" for b, v in peak.items())
        + f"; sustained limits at the three best, {', '.join(map(str, ranked))}, "
        f"{sustain_s:g} s each in two turns"
    )
    console.print(f"latentfuzz --help: {help_s:.2f} s (median of {help_runs})")
    for line in caveats(rows):
        console.print(line)
    return {**m, "help_seconds": help_s}


#: Before and after limits further apart than this: the machine's speed moved during the
#: size's campaigns, and their efficiency compares them with a machine they did not run on.
MAX_DRIFT = 0.15


def caveats(rows: list[dict]) -> list[str]:
    """Lines that say which figures the machine, not the engine, decided."""
    out = []
    for r in rows:
        lo, hi = sorted((r["limit_before"], r["limit_after"]))
        if hi > (1 + MAX_DRIFT) * lo:
            out.append(
                f"{r['seeds']} seeds: the limit moved by {100 * (hi / lo - 1):.0f}% between "
                f"before ({r['limit_before']:,.0f}) and after ({r['limit_after']:,.0f}) its "
                "campaigns: the machine's speed changed while they ran, so their efficiency "
                "is not the engine's; rerun on a quiet machine"
            )
    if any(r["efficiency"] > 1 for r in rows):
        out.append(
            "efficiency above 1: the machine was busier while the limit was "
            "measured than during a campaign; rerun on a quiet machine"
        )
    return out
