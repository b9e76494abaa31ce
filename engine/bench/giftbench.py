"""`latentfuzz bench giftbench`: latentfuzz's search against a GIFTbench-style per-seed loop.

For each size, in pairs that interleave the two sides (a shared machine's speed drifts
by a third within minutes; a pair's two runs are seconds apart): `latentfuzz run --seeds N
--generations G --perturbation high --seed 1` as a user runs it (its own process; its rate
is the campaign row's seed-generations over its wall seconds), then the loop of
engine/bench/giftbench_loop.py on the same models and seeds in this process. The unit is
seed-generations per second: latentfuzz does not re-evaluate elites, so evaluations per
second would count GIFTbench's repeated work as speed. Both sides' failures found and mean
iterations are printed: close figures say they ran the same search.

With `--neighbour N`, the whole comparison runs again beside N busy processes
(engine/bench/neighbour.py). The breakdown runs the loop's variants in the same pairs:
eager to the folded graph, elites re-evaluated to children only, batch 25 per seed to all
seeds batched; the ratios between neighbours multiply to the last variant's lead over
GIFTbench's way, and latentfuzz over the last variant is what is left: the engine's own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from engine.bench import giftbench_loop as gl
from engine.bench.neighbour import child_settings, describe, neighbours
from engine.bench.scale import campaign_at, run_args, run_cli

#: The acceptance's leads at 10 and 100 seeds.
TARGETS = {10: 3.0, 100: 5.0}


def geomean(ratios: list[float]) -> float:
    """The geometric mean: in each pair the steps' ratios multiply to the pair's whole lead,
    so their geometric means multiply to the geometric mean of the leads (medians do not)."""
    return float(np.exp(np.mean(np.log(ratios))))


def latentfuzz_run(seeds: int, generations: int, home: Path, device: str) -> dict:
    """One `latentfuzz run` in its own process; its seed-generations per second from its
    campaign row (the search's wall seconds) and seeds rows."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import Store
    from store import campaigns as sc

    args = run_args(seeds, generations, "vae", "high", home, device)
    seconds, _ = run_cli(args, dict(os.environ))
    store = Store(home / "latentfuzz.duckdb")
    row = sc.campaign(store, sc.list_campaigns(store)["id"].iloc[0])
    s = sc.seeds(store, row["id"])
    s = s[s["viable"]]
    iterations = s["iterations"].fillna(0).astype(int)
    return {
        "seed_generations": int(iterations.sum()),
        "seconds": float(row["wall_seconds"]),
        "command_seconds": seconds,
        "rate": float(iterations.sum()) / float(row["wall_seconds"]),
        "failures": int(s["misclassified"].fillna(False).sum()),
        "mean_iterations": float(iterations.mean()),
        "viable": len(s),
        "environment": dict(row["environment"]),
    }


def loop_run(setup: gl.Setup, generations: int, variant: gl.Variant) -> dict:
    r = gl.run_loop(
        setup.seeds,
        setup.labels,
        setup.forward(variant.eager),
        generations,
        setup.low,
        setup.high,
        variant,
    )
    return {
        "seed_generations": r.seed_generations,
        "seconds": r.seconds,
        "rate": r.rate,
        "failures": sum(r.failed),
        "mean_iterations": float(np.mean(r.iterations)),
        "evaluations": sum(r.evaluations),
    }


def compare(
    seeds: int,
    generations: int,
    pairs: int,
    device: str,
    breakdown: bool,
    home: Path,
) -> dict:
    """`pairs` interleaved pairs at one size; medians of each side's rate, geometric means of
    per-pair ratios."""
    setup = gl.setup(seeds, "vae", device)
    variants = gl.BREAKDOWN if breakdown else (gl.GIFTBENCH,)
    for v in variants:  # builds the graph and each batch size's kernels before any clock
        for per_seed in {gl.POPULATION, gl.POPULATION - gl.ELITES}:
            n = per_seed * (1 if v.per_seed else len(setup.seeds))
            z = np.resize(setup.seeds, (n, setup.seeds.shape[1]))
            setup.forward(v.eager)(z, np.resize(setup.labels, n))
    # The first campaign of the model pair measures its batch size, cached after.
    env = campaign_at(2, 1, "vae", home, "high", device)["environment"]
    runs: dict[str, list[dict]] = {"latentfuzz": [], **{v.name: [] for v in variants}}
    for _ in range(pairs):
        runs["latentfuzz"].append(latentfuzz_run(seeds, generations, home, device))
        for v in variants:
            runs[v.name].append(loop_run(setup, generations, v))
    med = {k: float(np.median([r["rate"] for r in rs])) for k, rs in runs.items()}
    base = gl.GIFTBENCH.name
    lead = [a["rate"] / b["rate"] for a, b in zip(runs["latentfuzz"], runs[base], strict=True)]
    factors = []
    for a, b in zip(variants, variants[1:], strict=False):
        per_pair = [y["rate"] / x["rate"] for x, y in zip(runs[a.name], runs[b.name], strict=True)]
        factors.append((b.name, geomean(per_pair)))
    if breakdown:
        last = variants[-1].name
        own = [a["rate"] / b["rate"] for a, b in zip(runs["latentfuzz"], runs[last], strict=True)]
        factors.append(("latentfuzz's engine over the last", geomean(own)))
    return {
        "seeds": seeds,
        "viable": len(setup.seeds),
        "runs": runs,
        "rates": med,
        "lead": geomean(lead),
        "leads": lead,
        "factors": factors,
        "environment": env,
    }


def bench_giftbench(
    sizes: tuple[int, ...] = (10, 100),
    generations: int = 250,
    pairs: int = 3,
    neighbour: int = 0,
    breakdown: bool = True,
    device: str = "cpu",
    console: Console | None = None,
) -> dict:
    """The comparison at every size, quiet and (with `neighbour`) beside the neighbours."""
    console = console or Console()
    out: dict[str, list[dict]] = {}
    conditions = ["quiet"] + ([f"beside {neighbour} neighbours"] if neighbour else [])
    for cond in conditions:
        with neighbours(neighbour if cond != "quiet" else 0), tempfile.TemporaryDirectory() as h:
            out[cond] = [compare(n, generations, pairs, device, breakdown, Path(h)) for n in sizes]
    report(out, generations, pairs, device, console)
    return out


def report(out: dict, generations: int, pairs: int, device: str, console: Console) -> None:
    env = next(iter(out.values()))[0]["environment"]
    t = Table(
        "condition",
        "seeds (viable)",
        "latentfuzz seed-gens/s",
        "GIFTbench-style seed-gens/s",
        "lead (target)",
        "failures lf / loop",
        "mean iterations lf / loop",
        title=f"latentfuzz run vs a GIFTbench-style loop: vae, high, seed 1, {generations} "
        f"generations, {device}, {pairs} interleaved pairs (rates: medians; lead: geometric mean "
        f"of the per-pair ratios); this process (the loop): "
        f"{describe()}; {child_settings(env)}",
    )
    base = gl.GIFTBENCH.name
    for cond, rows in out.items():
        for r in rows:
            lf, gb = r["runs"]["latentfuzz"][-1], r["runs"][base][-1]
            t.add_row(
                cond,
                f"{r['seeds']} ({r['viable']})",
                f"{r['rates']['latentfuzz']:,.1f}",
                f"{r['rates'][base]:,.1f}",
                f"{r['lead']:.2f}x ({TARGETS.get(r['seeds'], float('nan')):g}x)",
                f"{lf['failures']} / {gb['failures']}",
                f"{lf['mean_iterations']:.1f} / {gb['mean_iterations']:.1f}",
            )
    console.print(t)
    for cond, rows in out.items():
        for r in rows:
            console.print(
                f"{cond}, {r['seeds']} seeds: lead per pair "
                + ", ".join(f"{x:.2f}x" for x in r["leads"])
            )
            if len(r["factors"]) > 1:
                console.print(
                    "  where it comes from (geometric mean of the per-pair ratios, each step "
                    "over the one before): "
                    + "; ".join(f"{name} {f:.2f}x" for name, f in r["factors"])
                    + f"; product {np.prod([f for _, f in r['factors']]):.2f}x, the lead"
                )
