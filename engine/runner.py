"""The campaign runner: the one loop that wires dataset, generator, classifier, fitness,
strategy and store together. Nothing in it knows which generator or strategy it runs.

Per generation, for all active seeds at once: ask the strategy for candidates, decode and
classify them in bounded batches, score them, tell the strategy, record one row per seed
(and optionally per individual), retire seeds that failed or ran out of budget, breed.
"""

from __future__ import annotations

import platform
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.config import CampaignConfig, Resolved, resolve
from engine.fitness import top2
from engine.home import campaign_dir, db_path
from engine.images import ImageSink, to_uint8
from store import CampaignWriter, Store, create_campaign
from store.writer import now


@dataclass
class CampaignResult:
    campaign_id: str
    status: str
    summary: dict[str, Any]
    evaluations: int = 0
    wall_seconds: float = 0.0
    store_seconds: float = 0.0
    model_seconds: float = 0.0
    batch_sizes: list[int] = field(default_factory=list)


@dataclass
class Progress:
    generation: int
    generations: int
    active: int
    viable: int
    failed: int
    evaluations: int


def new_campaign_id() -> str:
    # Not from the campaign RNG: ids must differ between identical runs.
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def environment(r: Resolved) -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "model_sha256": r.model_hashes,
        "python": sys.version.split()[0],
        "latentfuzz": version("latentfuzz"),
        **{pkg: version(pkg) for pkg in ("torch", "duckdb", "numpy", "pandas", "diffusers")},
        "platform": platform.platform(),
        "torch_threads": torch.get_num_threads(),
    }


class Evaluator:
    """Decode + classify in bounded batches; keeps the batch sizes for benchmarks."""

    def __init__(self, r: Resolved) -> None:
        self.gen, self.clf, self.batch = r.generator, r.classifier, r.config.batch_size
        self.batch_sizes: list[int] = []
        self.seconds = 0.0

    def __call__(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latents (N, *L), labels (N,) -> logits (N, K), uint8 images (N, C, H, W)."""
        t0 = time.perf_counter()
        try:
            return self._evaluate(z, labels)
        finally:
            self.seconds += time.perf_counter() - t0

    def _evaluate(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, images = [], []
        dev = self.gen.device
        for i in range(0, z.shape[0], self.batch):
            zb, yb = z[i : i + self.batch].to(dev), labels[i : i + self.batch].to(dev)
            x = self.gen.decode(zb, yb if self.gen.conditional else None)
            logits.append(self.clf.logits(x).cpu())
            images.append(to_uint8(x).cpu())
            self.batch_sizes.append(int(zb.shape[0]))
        if len(logits) == 1:
            return logits[0], images[0]
        return torch.cat(logits), torch.cat(images)


def _seed_dir(cid: str, s: int) -> str:
    return f"campaigns/{cid}/seed_{s:04d}"


def run_campaign(
    cfg: CampaignConfig,
    home: Path,
    progress: Callable[[Progress], None] | None = None,
    models_root: Path | None = None,
    campaign_id: str | None = None,
) -> CampaignResult:
    """Run one campaign to completion (or Ctrl-C) and return its summary.

    The config is resolved and validated before the store is touched.
    """
    r = resolve(cfg, models_root)
    store = Store(db_path(home))
    cid = campaign_id or new_campaign_id()
    campaign_dir(home, cid).mkdir(parents=True, exist_ok=False)
    rng = torch.Generator().manual_seed(cfg.seed)
    t0 = time.perf_counter()
    create_campaign(store, {
        "id": cid, "name": cfg.name or cid, "status": "running", "created_at": now(),
        "dataset": cfg.dataset, "generator": r.generator_name, "classifier": r.classifier_name,
        "strategy": cfg.strategy, "preset": r.preset, "n_seeds": cfg.seeds,
        "target_class": cfg.target_class, "random_seed": cfg.seed,
        "config": {**cfg.model_dump(), "strategy_params": r.strategy.params.model_dump()},
        "environment": environment(r), "dir": f"campaigns/{cid}", "pid": _pid(),
    })  # fmt: skip
    writer = CampaignWriter(store, cid, cfg.flush_seconds)
    writer.seconds = time.perf_counter() - t0  # the campaign row is store time too
    sink = ImageSink(home)
    evaluate = Evaluator(r)
    status, error = "finished", None
    try:
        # Inference mode: no autograd bookkeeping on the many small tensor ops of a generation.
        with torch.inference_mode():
            _search(r, cid, rng, writer, sink, evaluate, t0, progress)
    except KeyboardInterrupt:
        status = "interrupted"
    except Exception as e:
        status, error = "failed", f"{type(e).__name__}: {e}"
        raise
    finally:
        sink.close()
        wall = time.perf_counter() - t0
        evals = int(sum(evaluate.batch_sizes))
        writer.finish(status, {"wall_seconds": wall, "evaluations": evals,
                               "store_seconds": writer.seconds}, error)
    from store import queries

    return CampaignResult(cid, status, queries.summary(store, cid), evals, wall,
                          writer.seconds, evaluate.seconds, evaluate.batch_sizes)


def _pid() -> int:
    import os

    return os.getpid()


def _search(
    r: Resolved,
    cid: str,
    rng: torch.Generator,
    writer: CampaignWriter,
    sink: ImageSink,
    evaluate: Evaluator,
    t0: float,
    progress: Callable[[Progress], None] | None,
) -> None:
    cfg, gen, strat = r.config, r.generator, r.strategy
    test = r.dataset.load("test")
    seeds = gen.draw_seeds(cfg.seeds, test.images, test.labels, rng, cfg.target_class)
    labels = seeds.labels

    # Viability: the classifier must give the intended label to the generated seed image.
    seed_logits, seed_imgs = evaluate(seeds.latents, labels)
    viable = seed_logits.argmax(1) == labels
    seed_paths = [f"{_seed_dir(cid, s)}/seed.png" for s in range(cfg.seeds)]
    sink.save(seed_paths, seed_imgs)
    writer.append(
        "seeds", seed_idx=np.arange(cfg.seeds),
        source_index=seeds.source_index.numpy(), seed_label=labels.numpy(),
        seed_pred=seed_logits.argmax(1).numpy(), seed_margin=r.fitness(seed_logits, labels).numpy(),
        viable=viable.numpy(), status=np.where(viable.numpy(), "searching", "non_viable"),
        seed_image=seed_paths,
    )  # fmt: skip
    writer.append("images", seed_idx=np.arange(cfg.seeds), kind="seed",
                  path=seed_paths)

    active = torch.nonzero(viable).flatten()  # original seed indices still searching
    if len(active) == 0:
        return
    seed_latents = seeds.latents[active]
    strat.start(seed_latents, rng)
    best_so_far = torch.full((len(active),), float("inf"))
    evals = torch.zeros(len(active), dtype=torch.long)
    G = strat.max_generations()
    n_failed = 0
    strip_paths = [f"{_seed_dir(cid, i)}/improvements.png" for i in range(cfg.seeds)]
    last_strips = time.perf_counter()
    for g in range(1, G + 1):
        slots, cand = strat.ask()
        s, m = cand.shape[:2]
        y = labels[active]
        logits, imgs = evaluate(cand.reshape(s * m, *cand.shape[2:]), y.repeat_interleave(m))
        logits, imgs = logits.view(s, m, -1), imgs.view(s, m, *imgs.shape[1:])
        strat.tell(slots, r.fitness(logits.flatten(0, 1), y.repeat_interleave(m)).view(s, m), logits)
        evals += m

        pop, scores, pop_logits = strat.population()
        p = scores.shape[1]
        failing = r.criterion(pop_logits.flatten(0, 1), y.repeat_interleave(p)).view(s, p)
        best = scores.argmin(1)
        best_fit = scores.gather(1, best[:, None]).squeeze(1)
        best_logits = pop_logits[torch.arange(s), best]
        probs, top_lbl = top2(best_logits)
        improved = best_fit < best_so_far
        best_so_far = torch.minimum(best_so_far, best_fit)

        failed = failing.any(1)
        stop = failing.any(1) if getattr(strat.params, "stop_at_failure", True) else torch.zeros_like(failed)
        done = stop | (g == G)

        # Images are needed for improved bests and for finished seeds' results.
        result_slot = torch.where(failed, torch.where(failing, scores, float("inf")).argmin(1), best)
        want_best = _images_of(best, improved, slots, imgs, pop, y, evaluate, strat)
        image_col = np.full(s, None, dtype=object)
        frame_col = np.full(s, None, dtype=object)
        idx_imp = torch.nonzero(improved).flatten().numpy()
        strips = [strip_paths[int(active[i])] for i in idx_imp]
        image_col[idx_imp] = strips
        frame_col[idx_imp] = sink.add_frames(strips, want_best[improved])

        elapsed = time.perf_counter() - t0
        step = strat.step_size()
        writer.append(
            "generations", seed_idx=active.numpy(), generation=g,
            best_fitness=best_fit.numpy(), mean_fitness=scores.mean(1).numpy(),
            best_pred=best_logits.argmax(1).numpy(),
            top1_label=top_lbl[:, 0].numpy(), top1_prob=probs[:, 0].numpy(),
            top2_label=top_lbl[:, 1].numpy(), top2_prob=probs[:, 1].numpy(),
            step=step.numpy(), evaluations=evals.numpy(), elapsed_s=elapsed,
            image=image_col, image_frame=frame_col,
        )  # fmt: skip
        if cfg.record_individuals:
            is_new = torch.zeros(p, dtype=torch.bool)
            is_new[slots] = True
            writer.append(
                "individuals", seed_idx=active.repeat_interleave(p).numpy(),
                generation=g, individual=np.tile(np.arange(p), s),
                fitness=scores.flatten().numpy(), pred=pop_logits.argmax(2).flatten().numpy(),
                evaluated=is_new.repeat(s).numpy(),
            )  # fmt: skip

        if done.any():
            d = torch.nonzero(done).flatten()
            res_imgs = _images_of(result_slot, done, slots, imgs, pop, y, evaluate, strat)[done]
            res_logits = pop_logits[d, result_slot[d]]
            res_probs, _ = top2(res_logits)
            res_paths = [f"{_seed_dir(cid, int(active[i]))}/result.png" for i in d.tolist()]
            sink.save(res_paths, res_imgs)
            res_latent = pop[d, result_slot[d]]
            dist = (res_latent - seed_latents[d].reshape(len(d), -1)).norm(dim=1)
            writer.update_seeds(
                seed_idx=active[d].numpy(),
                status=np.where(failed[d].numpy(), "failed", "survived"),
                misclassified=failed[d].numpy(), iterations=g,
                evaluations=evals[d].numpy(), final_pred=res_logits.argmax(1).numpy(),
                final_fitness=scores[d, result_slot[d]].numpy(),
                final_top1=res_probs[:, 0].numpy(), final_top2=res_probs[:, 1].numpy(),
                latent_distance=dist.numpy(), result_image=res_paths, elapsed_s=elapsed,
                improvements_image=[strip_paths[int(active[i])] for i in d.tolist()],
            )  # fmt: skip
            sink.write_strips([strip_paths[int(active[i])] for i in d.tolist()], release=True)
            writer.append("images", seed_idx=active[d].numpy(), kind="result",
                          path=res_paths)
            n_failed += int(failed[d].sum())
        writer.maybe_flush()
        if time.perf_counter() - last_strips >= cfg.flush_seconds:
            sink.write_strips()  # keep running seeds' strips about as fresh as the store
            last_strips = time.perf_counter()
        if progress:
            progress(Progress(g, G, int((~done).sum()), len(viable.nonzero()), n_failed, int(sum(evaluate.batch_sizes))))

        keep = ~done
        if not keep.any():
            break
        if done.any():
            strat.keep(keep)
            active, best_so_far, evals = active[keep], best_so_far[keep], evals[keep]
            seed_latents = seed_latents[keep]
        strat.advance(rng)


def _images_of(
    want: torch.Tensor,
    mask: torch.Tensor,
    slots: torch.Tensor,
    imgs: torch.Tensor,
    pop: torch.Tensor,
    y: torch.Tensor,
    evaluate: Evaluator,
    strat: Any,
) -> torch.Tensor:
    """uint8 images of population slot want[i] for seeds where mask[i] (others: zeros).

    Slots evaluated this generation are taken from ``imgs``; any other (a survivor that
    became best without being re-evaluated, which the GA never produces) is decoded again.
    """
    out = torch.zeros((len(want), *imgs.shape[2:]), dtype=torch.uint8)
    pos = torch.full((pop.shape[1],), -1, dtype=torch.long)
    pos[slots] = torch.arange(len(slots))
    where = pos[want]
    fresh = mask & (where >= 0)
    out[fresh] = imgs[torch.nonzero(fresh).flatten(), where[fresh]]
    stale = torch.nonzero(mask & (where < 0)).flatten()
    if len(stale):
        z = pop[stale, want[stale]].reshape(len(stale), *strat.space.latent_shape)
        out[stale] = evaluate(z, y[stale])[1]
    return out
