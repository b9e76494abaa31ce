"""The campaign runner: the one loop that wires dataset, generator, classifier, fitness,
strategy and store together. Nothing in it knows which generator or strategy it runs.

Per generation, for all active seeds at once: ask the strategy for candidates, decode and
classify them in bounded batches, score them, tell the strategy, record one row per seed
(and optionally per individual), retire seeds that failed or ran out of budget, breed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.archive import Archive
from engine.batching import batch_record
from engine.batching import choose as choose_batch
from engine.campaign_id import check_id_syntax, check_new_id
from engine.config import CampaignConfig, Resolved, resolve
from engine.errors import LatentfuzzError, ModelError
from engine.fitness import Context, margin, top2
from engine.home import campaign_dir, db_path
from engine.images import ImageSink, to_uint8
from engine.metrics import MetricsTracker, test_reference
from engine.seeding import plan_seeds
from store import CampaignWriter, Store, create_campaign, queries, recovery
from store.liveness import CampaignLock
from store.metrics import write_metrics
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
    #: Benchmark runs only: time of the bare-forward twin of every batch (not in wall_seconds).
    raw_seconds: float = 0.0
    #: Time in the strategy's own work (see, tell, advance): NSGA-II's sorting, crowding
    #: and diversity update, the GA's breeding.
    strategy_seconds: float = 0.0


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
    """Decode + classify in bounded batches; keeps the batch sizes for benchmarks.

    A differential campaign's images are decoded once and classified by both classifiers:
    the logits returned are A's (N, K) then B's, side by side (N, 2K); ``Campaign.split``
    takes them apart. Strategies carry them with each individual without reading them.
    """

    def __init__(self, r: Resolved) -> None:
        self.gen, self.clf, self.batch = r.generator, r.classifier, r.config.batch_size
        self.clf_b = r.classifier_b
        self.batch_sizes: list[int] = []
        self.seconds = 0.0
        #: Benchmark twins' time (engine/bench.py); zero in an ordinary campaign.
        self.raw_seconds = 0.0

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
            with model_errors("generator", zb.shape[0]):
                x = self.gen.decode(zb, yb if self.gen.conditional else None)
            with model_errors("classifier", zb.shape[0]):
                out = self.clf.logits(x).cpu()
            if self.clf_b is not None:
                with model_errors("classifier B", zb.shape[0]):
                    out = torch.cat([out, self.clf_b.logits(x).cpu()], 1)
            logits.append(out)
            images.append(to_uint8(x).cpu())
            self.batch_sizes.append(int(zb.shape[0]))
        if len(logits) == 1:
            return logits[0], images[0]
        return torch.cat(logits), torch.cat(images)


@contextlib.contextmanager
def model_errors(what: str, n: int) -> Iterator[None]:
    """Turn a model's own exception (a classifier that fails only on large batches, a
    TorchScript error with its interpreter traceback) into one line that ends the campaign
    `failed` with the model's message."""
    try:
        yield
    except (ModelError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - any model failure ends the campaign the same way
        lines = [x.strip() for x in str(e).splitlines() if x.strip()]
        msg = lines[-1] if lines else type(e).__name__
        raise ModelError(
            f"the {what} failed on a batch of {n} images: {msg}; fix the model, or lower "
            "batch_size (--batch-size) if it only fails on large batches"
        ) from e


def _seed_dir(cid: str, s: int) -> str:
    return f"campaigns/{cid}/seed_{s:04d}"


def run_campaign(
    cfg: CampaignConfig,
    home: Path,
    progress: Callable[[Progress], None] | None = None,
    models_root: Path | None = None,
    campaign_id: str | None = None,
    evaluator: type[Evaluator] | None = None,
    study: str | None = None,
) -> CampaignResult:
    """Run one campaign to completion (or Ctrl-C) and return its summary.

    The config is resolved and validated before the store is touched.
    """
    if campaign_id is not None:
        check_id_syntax(campaign_id)  # before anything is loaded or written
    r = resolve(cfg, models_root)
    cfg = r.config  # with what resolve derives (an escape campaign's seed count)
    store = Store(db_path(home))
    store.require_writable()
    recovery.ingest(store)  # rows an earlier campaign saved when its user stopped it waiting
    cid = campaign_id or new_campaign_id()
    check_new_id(cid, store, home)
    # The measured batch size goes into the stored config, so `resume` replays the search
    # with the very batches it ran with (results can differ in the last bit between sizes).
    batch = choose_batch(r, home, cfg.batch_memory_mb)
    r.config = cfg = cfg.model_copy(update={"batch_size": batch.batch_size})
    campaign_dir(home, cid).mkdir(parents=True, exist_ok=False)
    # Held for the campaign's life, taken before its row exists: a reader that finds the
    # row `running` and the lock free knows the process is gone (store/liveness.py).
    lock = CampaignLock(home, cid).acquire()
    t0 = time.perf_counter()
    try:
        create_campaign(store, {
            "id": cid, "name": cfg.name or cid, "status": "running", "created_at": now(),
            "dataset": cfg.dataset, "generator": r.generator_name,
            "classifier": r.classifier_name, "classifier_b": r.classifier_b_name,
            "strategy": cfg.strategy, "preset": r.preset,
            "n_seeds": cfg.seeds, "target_class": cfg.target_class, "random_seed": cfg.seed,
            "config": {**cfg.model_dump(), "fitness": r.fitness.name, "archive": r.archive,
                       "criterion": r.criterion.name,
                       "strategy_params": r.strategy.params.model_dump(),
                       "evaluation_budget": r.strategy.evaluation_budget(),
                       "generator_params": r.generator.options()},
            "environment": {**environment(r), "batch": batch_record(batch)},
            "dir": f"campaigns/{cid}", "pid": os.getpid(),
            "study": study,
        })  # fmt: skip
    except BaseException:
        lock.release()
        raise
    return execute(r, store, home, cid, lock, t0, progress, evaluator)


def execute(
    r: Resolved,
    store: Store,
    home: Path,
    cid: str,
    lock: CampaignLock,
    t0: float,
    progress: Callable[[Progress], None] | None = None,
    evaluator: type[Evaluator] | None = None,
    wrap: Callable[[CampaignWriter], Any] | None = None,
) -> CampaignResult:
    """Search and close the campaign `cid`, whose row exists and whose lock this process
    holds; releases the lock. `wrap` puts a filter between the search and the writer (a
    resumed campaign's replay, engine/resume.py)."""
    cfg = r.config
    rng = torch.Generator().manual_seed(cfg.seed)
    writer = CampaignWriter(store, cid, cfg.flush_seconds)
    writer.seconds = time.perf_counter() - t0  # the campaign row is store time too
    sink = ImageSink(home)
    evaluate = (evaluator or Evaluator)(r)
    status, error, failure = "finished", None, None
    try:
        campaign = Campaign(r, cid, rng, wrap(writer) if wrap else writer, sink, evaluate, t0)
        # Inference mode: no autograd bookkeeping on the many small tensor ops of a generation.
        with torch.inference_mode():
            campaign.run(progress)
    except KeyboardInterrupt:
        status = "interrupted"
    except Exception as e:
        status, error, failure = "failed", describe(e), e
    finally:
        raw = evaluate.raw_seconds
        evals = int(sum(evaluate.batch_sizes))
        try:
            sink.close()  # every image on disk before the campaign is closed
        except Exception as e:
            if failure is None:
                status, error, failure = "failed", describe(e), e
        wall = time.perf_counter() - t0 - raw
        try:
            writer.finish(
                status,
                {"wall_seconds": wall, "evaluations": evals, "store_seconds": writer.seconds},
                error,
            )
        except Exception as e:
            # A full disk can refuse the closing write too: the rows written so far stay,
            # and readers mark the campaign crashed once this process has gone.
            failure = failure or e
        finally:
            if status != "finished" or failure is not None:
                lock.release()
    if failure is not None:
        raise user_error(failure, cid) from failure
    if status == "finished":
        # Still holding the lock: the campaign cannot be deleted while its metrics and
        # validity scores are written (a differential campaign's take seconds).
        try:
            with torch.inference_mode():
                key = (cfg.dataset, r.model_hashes[r.classifier_name])
                gaps, confusion = test_reference(r.dataset, r.classifier, cfg.batch_size, key)
            row = campaign.metrics.row(gaps, confusion)
            write_metrics(store, cid, row)
            if (r.archive or r.validators) and row["evaluations"]:
                from engine import differential

                differential.close(r, store, home, cid, row["evaluations"])
        finally:
            lock.release()
    return CampaignResult(
        cid,
        status,
        queries.summary(store, cid),
        evals,
        wall,
        writer.seconds,
        evaluate.seconds - raw,
        evaluate.batch_sizes,
        raw,
        campaign.strategy_seconds,
    )


def _disk_full(e: BaseException) -> bool:
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or (
        "no space left on device" in str(e).lower()
    )


def describe(e: BaseException) -> str:
    """The campaign row's error: one line."""
    if _disk_full(e):
        where = getattr(e, "filename", None)
        return "no space left on device" + (f" (writing {where})" if where else "")
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def user_error(e: BaseException, cid: str) -> BaseException:
    """What the caller sees: the model's or the disk's one-line message, else the error."""
    if _disk_full(e):
        return LatentfuzzError(
            f"campaign {cid} failed: {describe(e)}; it keeps what it wrote. Free some space, "
            f"then `latentfuzz resume {cid}` continues it"
        )
    return e


@dataclass
class Generation:
    """What one generation found, per active seed (S active, M evaluated, P population)."""

    g: int
    slots: torch.Tensor  # (M,) population slots evaluated now
    images: torch.Tensor  # (S, M, C, H, W) uint8, of those slots
    pop: torch.Tensor  # (S, P, D) latents
    scores: torch.Tensor  # (S, P) fitness, minimised
    logits: torch.Tensor  # (S, P, K) classifier A's
    logits_b: torch.Tensor | None  # (S, P, K) classifier B's (differential campaigns)
    objective2: torch.Tensor | None  # (S, P) a multi-objective strategy's second objective
    best: torch.Tensor  # (S,) slot of the lowest fitness
    improved: torch.Tensor  # (S,) best fitness dropped this generation
    failed: torch.Tensor  # (S,) some individual fails the criterion
    result: torch.Tensor  # (S,) slot reported as the seed's result if it stops now
    done: torch.Tensor  # (S,) the seed stops after this generation
    found: tuple | None = None  # Archive.add's arguments: this generation's failing inputs


class Campaign:
    """The search of one campaign: all seeds at once, one generation per loop turn."""

    def __init__(
        self,
        r: Resolved,
        cid: str,
        rng: torch.Generator,
        writer: CampaignWriter,
        sink: ImageSink,
        evaluate: Evaluator,
        t0: float,
    ) -> None:
        self.r, self.cid, self.rng, self.writer, self.sink, self.evaluate = (
            r,
            cid,
            rng,
            writer,
            sink,
            evaluate,
        )
        self.cfg, self.strategy, self.t0 = r.config, r.strategy, t0
        # A fitness that refines failures (SINVAD's boundary) keeps a failed seed searching.
        self.stop_at_failure = (
            getattr(self.strategy.params, "stop_at_failure", True)
            and not r.fitness.refines_failures
        )
        self.strips = [f"{_seed_dir(cid, i)}/improvements.png" for i in range(self.cfg.seeds)]
        self.n_failed = 0
        self.strategy_seconds = 0.0
        self.k = r.classifier.num_classes
        self.archive = Archive(cid, writer, sink) if r.archive else None

    def split(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The evaluator's logits (..., K) or (..., 2K) -> A's (..., K) and B's or None."""
        if self.r.classifier_b is None:
            return logits, None
        return logits[..., : self.k], logits[..., self.k :]

    def run(self, progress: Callable[[Progress], None] | None = None) -> None:
        if not self.draw_seeds():
            return
        self.strategy.attach(self.r, self.labels[self.active])
        self.strategy.start(self.seed_latents, self.rng)
        G = self.strategy.max_generations()
        last_strips = time.perf_counter()
        for g in range(1, G + 1):
            gen = self.evaluate_generation(g, last=g == G)
            with self.writer.batch():  # a reader sees a generation whole or not at all
                self.record(gen)
                if gen.done.any():
                    self.finish_seeds(gen)
            self.writer.maybe_flush()
            if time.perf_counter() - last_strips >= self.cfg.flush_seconds:
                # Appends only the new frames: strip work per flush does not grow with g.
                self.sink.write_strips()  # running seeds' frames about as fresh as the store
                last_strips = time.perf_counter()
            if progress:
                progress(
                    Progress(
                        g,
                        G,
                        int((~gen.done).sum()),
                        self.n_viable,
                        self.n_failed,
                        int(sum(self.evaluate.batch_sizes)),
                    )
                )
            if gen.done.all():
                break
            if gen.done.any():
                self.retire(~gen.done)
            t = time.perf_counter()
            self.strategy.advance(self.rng)
            self.strategy_seconds += time.perf_counter() - t

    def draw_seeds(self) -> bool:
        """Draw seeds, check viability, record them; False when none is viable."""
        cfg, r = self.cfg, self.r
        test = r.dataset.load("test")
        seeds, self.targets = plan_seeds(
            cfg, r.generator, test.images, test.labels, r.dataset.num_classes, self.rng
        )
        self.labels = seeds.labels
        # Viable: the classifier gives the intended label to the generated seed image, and
        # the seed does not already fail the criterion (a seed of the target class).
        with r.generator.seeding():
            both, images = self.evaluate(seeds.latents, seeds.labels)
        logits, logits_b = self.split(both)
        flat = seeds.latents.flatten(1).float()
        ctx = Context(seeds.labels, flat, flat, self.targets, logits_b)
        viable = (logits.argmax(1) == seeds.labels) & ~r.criterion(logits, ctx)
        self.metrics = MetricsTracker(cfg.seeds, images)
        paths = [f"{_seed_dir(self.cid, s)}/seed.png" for s in range(cfg.seeds)]
        self.sink.save(paths, images)
        idx = np.arange(cfg.seeds)
        with self.writer.batch():
            self.writer.append(
                "seeds", seed_idx=idx, source_index=seeds.source_index.numpy(),
                seed_label=seeds.labels.numpy(), seed_pred=logits.argmax(1).numpy(),
                seed_pred_b=None if logits_b is None else logits_b.argmax(1).numpy(),
                seed_margin=margin(logits, seeds.labels).numpy(), viable=viable.numpy(),
                status=np.where(viable.numpy(), "searching", "non-viable"), seed_image=paths,
                target=None if self.targets is None else self.targets.numpy(),
            )  # fmt: skip
            self.writer.append("images", seed_idx=idx, kind="seed", path=paths)
        self.active = torch.nonzero(viable).flatten()  # dataset-order seed indices still searching
        self.n_viable = len(self.active)
        self.seed_latents = seeds.latents[self.active]
        if self.targets is not None:
            self.targets = self.targets[self.active]
        self.best_so_far = torch.full((self.n_viable,), float("inf"))
        self.evals = torch.zeros(self.n_viable, dtype=torch.long)
        # Generation of each seed's first failure (0: none yet); ICST's "iterations" is
        # 1-based, and a seed searched on past its failure still reports the first one.
        self.first_failure = torch.zeros(self.n_viable, dtype=torch.long)
        return self.n_viable > 0

    def evaluate_generation(self, g: int, last: bool) -> Generation:
        r = self.r
        slots, cand = self.strategy.ask()
        s, m = cand.shape[:2]
        y = self.labels[self.active]
        both, images = self.evaluate(cand.flatten(0, 1), y.repeat_interleave(m))
        both, images = both.view(s, m, -1), images.view(s, m, *images.shape[1:])
        logits, logits_b = self.split(both)
        ctx = self.context(cand, logits_b)
        scores = r.fitness(logits.flatten(0, 1), ctx).view(s, m)
        failing_now = r.criterion(logits.flatten(0, 1), ctx).view(s, m)
        t = time.perf_counter()
        self.strategy.see(slots, images, failing_now)
        self.strategy.tell(slots, scores, both)
        self.strategy_seconds += time.perf_counter() - t
        # Archived in record(), inside the generation's batch: a reader (and a resume's
        # replay) sees a generation's finds with its rows or not at all.
        found = None
        if self.archive is not None:
            found = (
                g, self.active.repeat_interleave(m), y.repeat_interleave(m),
                images.flatten(0, 1), logits.flatten(0, 1),
                None if logits_b is None else logits_b.flatten(0, 1),
                scores.flatten(), failing_now.flatten(),
            )  # fmt: skip
        self.metrics.evaluated(
            self.active, logits, y, failing_now, g, float(self.strategy.step_size().mean()),
            images if self.strategy.image_metrics else None,
        )  # fmt: skip
        self.evals = self.evals + m

        pop, scores, pop_both = self.strategy.population()
        p = scores.shape[1]
        pop_logits, pop_logits_b = self.split(pop_both)
        failing = r.criterion(pop_logits.flatten(0, 1), self.context(pop, pop_logits_b)).view(s, p)
        best = scores.argmin(1)
        best_fit = scores.gather(1, best[:, None]).squeeze(1)
        improved = best_fit < self.best_so_far
        self.best_so_far = torch.minimum(self.best_so_far, best_fit)
        failed = failing.any(1)
        self.first_failure = torch.where((self.first_failure == 0) & failed, g, self.first_failure)
        # A failed seed's result is its best failing individual; otherwise its best.
        result = torch.where(failed, torch.where(failing, scores, float("inf")).argmin(1), best)
        done = (failed & self.stop_at_failure) | last
        stop = self.strategy.finished()  # the strategy's own stop rule, if it has one
        if stop is not None:
            done = done | stop
        return Generation(
            g, slots, images, pop, scores, pop_logits, pop_logits_b,
            self.strategy.objective2(), best, improved, failed, result, done, found,
        )  # fmt: skip

    def context(self, z: torch.Tensor, logits_b: torch.Tensor | None = None) -> Context:
        """The objective context of latents (S, M, ...) of the active seeds, and of
        classifier B's logits (S, M, K) where there is a second classifier, flattened to
        N = S x M individuals."""
        m = z.shape[1]

        def rep(t: torch.Tensor) -> torch.Tensor:
            return t.repeat_interleave(m, 0)

        return Context(
            expected=rep(self.labels[self.active]),
            latents=z.flatten(2).flatten(0, 1).float(),
            seed_latents=rep(self.seed_latents.flatten(1).float()),
            target=None if self.targets is None else rep(self.targets),
            logits_b=None if logits_b is None else logits_b.flatten(0, 1),
        )

    def record(self, gen: Generation) -> None:
        """One generations row per active seed (plus individuals rows), improvement frames."""
        s, p = gen.scores.shape
        rows = torch.arange(s)
        best_logits = gen.logits[rows, gen.best]
        best_b = None if gen.logits_b is None else gen.logits_b[rows, gen.best].argmax(1).numpy()
        probs, top = top2(best_logits)
        image = np.full(s, None, dtype=object)
        frame = np.full(s, None, dtype=object)
        idx = torch.nonzero(gen.improved).flatten().numpy()
        if len(idx):
            strips = [self.strips[int(self.active[i])] for i in idx]
            image[idx] = strips
            frame[idx] = self.sink.add_frames(
                strips, self.images_of(gen, gen.best, gen.improved)[idx]
            )
        self.writer.append(
            "generations", seed_idx=self.active.numpy(), generation=gen.g,
            best_fitness=gen.scores[rows, gen.best].numpy(),
            mean_fitness=gen.scores.mean(1).numpy(),
            best_pred=best_logits.argmax(1).numpy(),
            best_pred_b=best_b,
            top1_label=top[:, 0].numpy(), top1_prob=probs[:, 0].numpy(),
            top2_label=top[:, 1].numpy(), top2_prob=probs[:, 1].numpy(),
            step=self.strategy.step_size().numpy(), evaluations=self.evals.numpy(),
            elapsed_s=time.perf_counter() - self.t0, image=image, image_frame=frame,
        )  # fmt: skip
        if self.cfg.record_individuals:
            evaluated = torch.zeros(p, dtype=torch.bool)
            evaluated[gen.slots] = True
            self.writer.append(
                "individuals", seed_idx=self.active.repeat_interleave(p).numpy(),
                generation=gen.g, individual=np.tile(np.arange(p), s),
                fitness=gen.scores.flatten().numpy(), pred=gen.logits.argmax(2).flatten().numpy(),
                evaluated=evaluated.repeat(s).numpy(),
                pred_b=None if gen.logits_b is None else gen.logits_b.argmax(2).flatten().numpy(),
                objective2=None if gen.objective2 is None else gen.objective2.flatten().numpy(),
            )  # fmt: skip

        if self.archive is not None and gen.found is not None:
            self.archive.add(*gen.found)  # after the generations rows (resume's replay)

    def finish_seeds(self, gen: Generation) -> None:
        """Final outcome, result image and strip of every seed that stops now."""
        d = torch.nonzero(gen.done).flatten()
        seed_idx = self.active[d]
        slot = gen.result[d]
        logits = gen.logits[d, slot]
        probs, _ = top2(logits)
        results = [f"{_seed_dir(self.cid, int(i))}/result.png" for i in seed_idx]
        strips = [self.strips[int(i)] for i in seed_idx]
        result_images = self.images_of(gen, gen.result, gen.done)[d]
        self.sink.save(results, result_images)
        self.metrics.finished(seed_idx, gen.failed[d], logits, result_images)
        self.sink.write_strips(strips, release=True)
        distance = (gen.pop[d, slot] - self.seed_latents[d].flatten(1)).norm(dim=1)
        self.writer.update_seeds(
            seed_idx=seed_idx.numpy(),
            status=np.where(gen.failed[d].numpy(), "misclassified", "survived"),
            misclassified=gen.failed[d].numpy(),
            iterations=torch.where(self.first_failure[d] > 0, self.first_failure[d], gen.g).numpy(),
            evaluations=self.evals[d].numpy(), final_pred=logits.argmax(1).numpy(),
            final_pred_b=None if gen.logits_b is None else gen.logits_b[d, slot].argmax(1).numpy(),
            final_fitness=gen.scores[d, slot].numpy(), final_top1=probs[:, 0].numpy(),
            final_top2=probs[:, 1].numpy(), latent_distance=distance.numpy(),
            result_image=results, improvements_image=strips,
            elapsed_s=time.perf_counter() - self.t0,
        )  # fmt: skip
        self.writer.append("images", seed_idx=seed_idx.numpy(), kind="result", path=results)
        self.n_failed += int(gen.failed[d].sum())

    def retire(self, keep: torch.Tensor) -> None:
        """Drop finished seeds from the batch."""
        self.strategy.keep(keep)
        self.active, self.best_so_far = self.active[keep], self.best_so_far[keep]
        self.evals, self.seed_latents = self.evals[keep], self.seed_latents[keep]
        self.first_failure = self.first_failure[keep]
        if self.targets is not None:
            self.targets = self.targets[keep]

    def images_of(self, gen: Generation, want: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """uint8 images (S, C, H, W) of population slot want[i] where mask[i] (else zeros).

        Slots evaluated this generation come from the evaluation; any other (a survivor
        that became best without a new evaluation, which the GA never produces) is decoded.
        """
        out = torch.zeros((len(want), *gen.images.shape[2:]), dtype=torch.uint8)
        pos = torch.full((gen.pop.shape[1],), -1, dtype=torch.long)
        pos[gen.slots] = torch.arange(len(gen.slots))
        where = pos[want]
        fresh = mask & (where >= 0)
        out[fresh] = gen.images[torch.nonzero(fresh).flatten(), where[fresh]]
        stale = torch.nonzero(mask & (where < 0)).flatten()
        if len(stale):
            z = gen.pop[stale, want[stale]].reshape(len(stale), *self.strategy.space.latent_shape)
            out[stale] = self.evaluate(z, self.labels[self.active][stale])[1]
        return out
