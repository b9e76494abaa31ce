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


@torch.no_grad()
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


def bench_engine(seeds: int = 10, generations: int = 250, perturbation: str = "high",
                 generator: str = "vae", home: Path | None = None,
                 console: Console | None = None) -> dict[str, float]:
    console = console or Console()
    cfg = parse_config({"seeds": seeds, "generator": generator, "seed": 1,
                        "strategy_params": {"generations": generations, "perturbation": perturbation}})
    with tempfile.TemporaryDirectory() as tmp:
        h = resolve_home(home) if home else Path(tmp)
        res = run_campaign(cfg, h)
    resolved = resolve(cfg)
    raw = raw_seconds(resolved, res.batch_sizes)
    out = {
        "evaluations": res.evaluations,
        "campaign_seconds": res.wall_seconds,
        "campaign_evals_per_s": res.evaluations / res.wall_seconds,
        "raw_seconds": raw,
        "raw_evals_per_s": res.evaluations / raw,
        "efficiency": raw / res.wall_seconds,
        "store_seconds": res.store_seconds,
        "store_share": res.store_seconds / res.wall_seconds,
        "batches": len(res.batch_sizes),
        "mean_batch": res.evaluations / max(1, len(res.batch_sizes)),
    }
    t = Table("metric", "value", title=f"latentfuzz bench: {generator}, {seeds} seeds, "
              f"{generations} generations, {perturbation}, torch threads {torch.get_num_threads()}")
    for k, v in out.items():
        t.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    console.print(t)
    console.print(f"engine efficiency {out['efficiency']:.3f} (target >= 0.9), "
                  f"store share {100 * out['store_share']:.2f}% (target <= 5%)")
    return out
