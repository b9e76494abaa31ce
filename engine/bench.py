"""Benchmarks. `latentfuzz bench`: how close a campaign runs to the models' raw speed.

The campaign's evaluator records the size of every decode+classify batch it issued. The
raw figure replays exactly those batch sizes through the same models, calling their bare
forward passes (no checks, no search, no store, no images), so the ratio isolates what
the engine adds. Store share is the wall time spent inside store calls over campaign time.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from engine.config import parse_config, resolve
from engine.home import resolve_home
from engine.runner import run_campaign


@torch.inference_mode()
def raw_seconds(resolved, batch_sizes: list[int], repeats: int = 3) -> float:
    """Best-of-`repeats` time to decode + classify the given batch sizes with bare forwards."""
    gen, clf = resolved.generator, resolved.classifier
    g = torch.Generator().manual_seed(0)
    n_max = max(batch_sizes)
    z = gen.sample_prior(n_max, g).clamp(*gen.latent_bounds)
    y = torch.randint(0, gen.num_classes, (n_max,), generator=g)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for b in batch_sizes:
            x = gen._decode(z[:b], y[:b])
            clf._logits(x)
        best = min(best, time.perf_counter() - t)
    return best


def bench_engine(
    seeds: int = 10,
    generations: int = 250,
    perturbation: str = "high",
    generator: str = "vae",
    repeats: int = 5,
    home: Path | None = None,
    console: Console | None = None,
) -> dict[str, float]:
    """Interleave `repeats` campaigns with raw replays of their batch sizes, after one
    warm-up campaign so that both sides run with warm kernels.

    A shared virtual machine's timings drift by tens of percent between runs, and the
    drift only ever adds time, so each side is taken at its fastest (as timeit does);
    the store share is the one of the fastest campaign. The campaign's own split of its
    wall time (time inside model calls) is printed too: it is immune to that drift."""
    console = console or Console()
    cfg = parse_config(
        {
            "seeds": seeds,
            "generator": generator,
            "seed": 1,
            "strategy_params": {"generations": generations, "perturbation": perturbation},
        }
    )
    resolved = resolve(cfg)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        h = resolve_home(home) if home else Path(tmp)
        run_campaign(cfg, h)  # warm-up: kernel selection for every batch size
        for _ in range(repeats):
            res = run_campaign(cfg, h)
            raw = raw_seconds(resolved, res.batch_sizes, repeats=1)
            rows.append(
                {
                    "campaign_s": res.wall_seconds,
                    "raw_s": raw,
                    "store_s": res.store_seconds,
                    "model_s": res.model_seconds,
                    "evaluations": res.evaluations,
                    "batches": len(res.batch_sizes),
                }
            )
    fastest = min(rows, key=lambda r: r["campaign_s"])
    raw_best = min(r["raw_s"] for r in rows)
    n = fastest["evaluations"]
    out = {
        "evaluations": n,
        "campaign_seconds": fastest["campaign_s"],
        "campaign_evals_per_s": n / fastest["campaign_s"],
        "raw_seconds": raw_best,
        "raw_evals_per_s": n / raw_best,
        "efficiency": raw_best / fastest["campaign_s"],
        "model_time_share": fastest["model_s"] / fastest["campaign_s"],
        "store_seconds": fastest["store_s"],
        "store_share": fastest["store_s"] / fastest["campaign_s"],
        "batches": fastest["batches"],
        "mean_batch": n / fastest["batches"],
    }
    eff = [r["raw_s"] / r["campaign_s"] for r in rows]
    share = [r["store_s"] / r["campaign_s"] for r in rows]
    t = Table(
        "metric",
        "value",
        title=f"latentfuzz bench: {generator}, {seeds} seeds, "
        f"{generations} generations, {perturbation}, {repeats} repeats, "
        f"torch threads {torch.get_num_threads()}",
    )
    for k, v in out.items():
        t.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    console.print(t)
    console.print(
        "per repeat (paired): efficiency "
        + ", ".join(f"{e:.3f}" for e in eff)
        + "; store share "
        + ", ".join(f"{100 * x:.2f}%" for x in share)
    )
    console.print(
        f"engine efficiency {out['efficiency']:.3f} (target >= 0.9), "
        f"store share {100 * out['store_share']:.2f}% (target <= 5%)"
    )
    return out
