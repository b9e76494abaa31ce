"""`latentfuzz bench`'s honest half: the engine against the machine's limit, at every size.

    physical limit    = raw decode+classify evaluations/s at the best batch size, found by
                        a sweep of every candidate size (engine/batching.py), bare forward
                        passes only (no checks, search, store or images)
    engine efficiency = the campaign's evaluations/s / the physical limit

The limit does not depend on the batch size the campaign happened to use, so a badly
chosen batch shows as low efficiency instead of hiding in a slow twin. Each campaign runs
as the user runs it, `latentfuzz run` in its own process, which also gives its start-up
time (command to first generation, through $LATENTFUZZ_FIRST_GENERATION_FILE, which the CLI
stamps) and its peak memory (the child's maximum resident set, from wait4).
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
import torch
from rich.console import Console
from rich.table import Table

FIRST_GENERATION_ENV = "LATENTFUZZ_FIRST_GENERATION_FILE"
CLI = [sys.executable, "-m", "engine.cli"]


def physical_limit(
    generator: str = "vae", budget_s: float = 20.0, device: str = "cpu"
) -> dict[int, float]:
    """Raw evaluations/s by batch size, every candidate size tried (5 runs each, the
    fastest kept), in this process with this process's torch threads."""
    from engine import batching
    from engine.config import parse_config, resolve

    r = resolve(parse_config({"seeds": 1, "generator": generator, "device": device}))
    fn = batching.raw_forward(r.generator, r.classifier, max(batching.CANDIDATES))
    return batching.sweep(fn, 1 << 30, budget_s=budget_s, reps=5, stop_past_peak=False)


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


def campaign_at(
    seeds: int, generations: int, generator: str, home: Path, perturbation: str = "high",
    device: str = "cpu",
) -> dict[str, float]:  # fmt: skip
    """One CLI campaign at `seeds`; figures from its process and its campaign row."""
    from store import Store, queries

    stamp = home / f"first-{seeds}.txt"
    env = {**os.environ, FIRST_GENERATION_ENV: str(stamp)}
    start = time.time()
    _, peak_kib = run_cli(
        ["run", "--seeds", str(seeds), "--generations", str(generations), "--generator",
         generator, "--perturbation", perturbation, "--seed", "1", "--quiet", "--home", str(home),
         "--device", device],
        env,
    )  # fmt: skip
    store = Store(home / "latentfuzz.duckdb")
    row = queries.campaign(store, queries.list_campaigns(store)["id"].iloc[0])
    evals, wall = float(row["evaluations"]), float(row["wall_seconds"])
    return {
        "seeds": seeds,
        "generations": generations,
        "evaluations": evals,
        "campaign_evals_per_s": evals / wall,
        "store_share": float(row["store_seconds"]) / wall,
        "startup_s": float(stamp.read_text()) - start,
        "peak_memory_gb": peak_kib / 2**20,
        "batch_size": row["config"]["batch_size"],
    }


def help_seconds(n: int = 3) -> float:
    """Median seconds of `latentfuzz --help`."""
    return float(np.median([run_cli(["--help"], dict(os.environ))[0] for _ in range(n)]))


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
) -> dict:
    """The physical limit, then one campaign per size (`large_generations` from 1,000 seeds
    on), each against the limit; start-up and --help time. Returns the figures."""
    console = console or Console()
    before = physical_limit(generator, limit_budget_s, device)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        # The first campaign of a model pair measures its batch size (cached after): a
        # warm-up, so every size is timed as a user's second campaign runs.
        campaign_at(2, 1, generator, home, perturbation, device)
        for n in sizes:
            g = large_generations if n >= 1000 else generations
            rows.append(campaign_at(n, g, generator, home, perturbation, device))
        shutil.rmtree(home / "campaigns", ignore_errors=True)
    # Measured before and after the campaigns, the better of the two per size: on a shared
    # machine one sweep can land in a busy minute, and the limit is what the machine can do.
    after = physical_limit(generator, limit_budget_s, device)
    limit = {b: max(before.get(b, 0.0), after.get(b, 0.0)) for b in {**before, **after}}
    limit = dict(sorted(limit.items()))
    best = max(limit, key=limit.get)
    for r in rows:
        r["efficiency"] = r["campaign_evals_per_s"] / limit[best]
    help_s = help_seconds(help_runs)
    t = Table("seeds", "generations", "evaluations", "campaign evals/s", "engine efficiency",
              "store share", "start-up (s)", "peak memory (GB)", "batch",
              title=f"latentfuzz bench: {generator}, {perturbation}, seed 1, {device}, torch "
              f"threads "
              f"{torch.get_num_threads()}; physical limit {limit[best]:,.0f} evals/s at "
              f"batch {best}")  # fmt: skip
    for r in rows:
        t.add_row(str(r["seeds"]), str(r["generations"]), f"{r['evaluations']:,.0f}",
                  f"{r['campaign_evals_per_s']:,.0f}", f"{r['efficiency']:.3f}",
                  f"{100 * r['store_share']:.2f}%", f"{r['startup_s']:.2f}",
                  f"{r['peak_memory_gb']:.2f}", str(r["batch_size"]))  # fmt: skip
    console.print(t)
    for r in rows:  # whole figures too: a narrow terminal cuts the table's cells
        console.print(
            f"{r['seeds']} seeds, {r['generations']} generations: {r['evaluations']:,.0f} "
            f"evaluations, {r['campaign_evals_per_s']:,.1f} evals/s, efficiency "
            f"{r['efficiency']:.3f}, store share {100 * r['store_share']:.2f}%, start-up "
            f"{r['startup_s']:.2f} s, peak memory {r['peak_memory_gb']:.2f} GB, batch "
            f"{r['batch_size']}"
        )
    console.print(
        "physical limit by batch size (raw decode+classify evals/s): "
        + ", ".join(f"{b}: {v:,.0f}" for b, v in limit.items())
    )
    console.print(f"latentfuzz --help: {help_s:.2f} s (median of {help_runs})")
    if any(r["efficiency"] > 1 for r in rows):
        console.print("efficiency above 1: the machine was busier while the limit was "
                      "measured than during a campaign; rerun on a quiet machine")  # fmt: skip
    return {"limit": limit, "best_batch": best, "sizes": rows, "help_seconds": help_s,
            "limit_before": before, "limit_after": after}  # fmt: skip
