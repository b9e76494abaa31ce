"""The search of one campaign: all seeds at once, one generation per loop turn.

Per generation, for all active seeds at once: ask the strategy for candidates, decode and
classify them in bounded batches, score them, tell the strategy, record one row per seed
(and optionally per individual) with the strategy's recorded state, retire the seeds its
termination stops (engine/search/termination.py), breed.
Nothing in it knows which generator, strategy or objective it runs (engine/campaign/runner.py
opens and closes the campaign around it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.campaign.evaluator import Evaluator
from engine.campaign.metrics import MetricsTracker
from engine.campaign.resolve import Resolved
from engine.campaign.seeding import plan_seeds, seed_originals
from engine.core.home import seed_dir
from engine.core.images import ImageSink
from engine.search.archive import Archive
from engine.search.fitness import Context, margin, top2
from engine.search.strategies import SearchState
from engine.search.termination import Status, Termination
from store import CampaignWriter


@dataclass
class Progress:
    generation: int
    generations: int
    active: int
    viable: int
    failed: int
    evaluations: int


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
    state: SearchState  # the strategy's recorded state: step (S,), objective2 (S, P) or None
    best: torch.Tensor  # (S,) slot of the lowest fitness
    best_fit: torch.Tensor  # (S,) the lowest fitness
    improved: torch.Tensor  # (S,) best fitness dropped this generation
    failed: torch.Tensor  # (S,) some individual fails the criterion
    result: torch.Tensor  # (S,) slot reported as the seed's result if it stops now
    done: torch.Tensor  # (S,) the seed stops after this generation
    found: tuple | None = None  # Archive.add's arguments: this generation's failing inputs


class Campaign:
    """The search of one campaign: all seeds at once, one generation per loop turn."""

    #: Captures and restores the search state: engine/campaign/checkpoint.py's Checkpoints,
    #: which the runner sets (not imported here: that module reads this one's Campaign).
    checkpoints: Any = None

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
        self.strips = [f"{seed_dir(cid, i)}/improvements.png" for i in range(self.cfg.seeds)]
        self.n_failed = 0
        self.strategy_seconds = 0.0
        self.k = r.classifier.num_classes
        self.needs = {*r.fitness.requires, *r.criterion.requires}
        self.archive = Archive(cid, writer, sink) if r.archive else None

    def split(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The evaluator's logits (..., K) or (..., 2K) -> A's (..., K) and B's or None."""
        if self.r.classifier_b is None:
            return logits, None
        return logits[..., : self.k], logits[..., self.k :]

    def run(self, progress: Callable[[Progress], None] | None = None) -> None:
        # A resume with a checkpoint (engine/campaign/checkpoint.py) starts after its
        # generation instead of drawing the seeds.
        saved = self.checkpoints.restore(self) if self.checkpoints is not None else None
        if saved is None:
            if not self.draw_seeds():
                return
            self.strategy.attach(self.r, self.labels[self.active])
            self.strategy.start(self.seed_latents, self.rng)
        # Made as the search starts: a wall-clock budget counts from here.
        self.termination: Termination = self.strategy.termination(self.r.fitness.refines_failures)
        G = self.termination.max_generations
        if G is None:
            raise TypeError(
                f"strategy {self.strategy.name}'s termination bounds no generations; "
                "include Generations(n) in it"
            )
        if saved is not None:
            self.termination.load_state_dict(saved.state["termination"])
            if not self.between(saved.state["done"]):
                return
        last_strips = time.perf_counter()
        for g in range((saved.generation if saved else 0) + 1, G + 1):
            gen = self.evaluate_generation(g)
            with self.writer.batch():  # a reader sees a generation whole or not at all
                self.record(gen)
                if gen.done.any():
                    self.finish_seeds(gen)
            if self.checkpoints is not None:
                self.checkpoints.generation_done(self, g, gen.done)
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
            if not self.between(gen.done):
                break

    def between(self, done: torch.Tensor) -> bool:
        """After a generation whose seeds `done` stop: False when none is left, else
        retire them and breed the next generation."""
        if done.all():
            return False
        if done.any():
            self.retire(~done)
        t = time.perf_counter()
        self.strategy.advance(self.rng)
        self.strategy_seconds += time.perf_counter() - t
        return True

    def draw_seeds(self) -> bool:
        """Draw seeds, check viability, record them; False when none is viable."""
        cfg, r = self.cfg, self.r
        test = r.dataset.load("test")
        seeds, self.targets = plan_seeds(
            cfg, r.generator, test.images, test.labels, r.dataset.num_classes, self.rng
        )
        self.labels = seeds.labels
        # Which seeds are searched is the fitness's rule (engine/search/fitness.py).
        with r.generator.seeding():
            both, images = self.evaluate(seeds.latents, seeds.labels)
        logits, logits_b = self.split(both)
        flat = seeds.latents.flatten(1).float()
        ctx = Context(seeds.labels, flat, flat, self.targets, logits_b)
        viable = r.fitness.viable(logits, ctx, r.criterion)
        originals = seed_originals(seeds, test, images) if self.strategy.image_metrics else None
        self.metrics = MetricsTracker(cfg.seeds, images, originals)
        paths = [f"{seed_dir(self.cid, s)}/seed.png" for s in range(cfg.seeds)]
        self.sink.save(paths, images)
        idx = np.arange(cfg.seeds)
        with self.writer.batch():
            self.writer.append(
                "seeds",
                seed_idx=idx,
                source_index=seeds.source_index.numpy(),
                seed_label=seeds.labels.numpy(),
                seed_pred=logits.argmax(1).numpy(),
                seed_pred_b=None if logits_b is None else logits_b.argmax(1).numpy(),
                seed_margin=margin(logits, seeds.labels).numpy(),
                viable=viable.numpy(),
                status=np.where(viable.numpy(), "searching", "non-viable"),
                seed_image=paths,
                target=None if self.targets is None else self.targets.numpy(),
            )
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

    def evaluate_generation(self, g: int) -> Generation:
        r = self.r
        slots, cand = self.strategy.ask()
        s, m = cand.shape[:2]
        y = self.labels[self.active]
        ym = y.repeat_interleave(m)
        both, images = self.evaluate(cand.flatten(0, 1), ym)
        both, images = both.view(s, m, -1), images.view(s, m, *images.shape[1:])
        logits, logits_b = self.split(both)
        ctx = self.context(cand, ym, logits_b)
        scores = r.fitness(logits.flatten(0, 1), ctx).view(s, m)
        failing_now = r.criterion(logits.flatten(0, 1), ctx).view(s, m)
        t = time.perf_counter()
        self.strategy.see(slots, images, failing_now)
        self.strategy.tell(slots, scores, both)
        self.strategy_seconds += time.perf_counter() - t
        state = self.strategy.state()
        # Archived in record(), inside the generation's batch: a reader (and a resume's
        # replay) sees a generation's finds with its rows or not at all.
        found = None
        if self.archive is not None:
            found = (
                g,
                self.active.repeat_interleave(m),
                ym,
                images.flatten(0, 1),
                logits.flatten(0, 1),
                None if logits_b is None else logits_b.flatten(0, 1),
                scores.flatten(),
                failing_now.flatten(),
            )
        self.metrics.evaluated(
            self.active,
            logits,
            y,
            failing_now,
            g,
            float(state.step.mean()),
            images if self.strategy.image_metrics else None,
        )
        self.evals = self.evals + m

        pop, scores, pop_both = self.strategy.population()
        p = scores.shape[1]
        pop_logits, pop_logits_b = self.split(pop_both)
        ctx = self.context(pop, y.repeat_interleave(p), pop_logits_b)
        failing = r.criterion(pop_logits.flatten(0, 1), ctx).view(s, p)
        best = scores.argmin(1)
        best_fit = scores.gather(1, best[:, None]).squeeze(1)
        improved = best_fit < self.best_so_far
        self.best_so_far = torch.minimum(self.best_so_far, best_fit)
        failed = failing.any(1)
        self.first_failure = torch.where((self.first_failure == 0) & failed, g, self.first_failure)
        # A failed seed's result is its best failing individual; otherwise its best.
        result = torch.where(failed, torch.where(failing, scores, float("inf")).argmin(1), best)
        done = self.termination.stops(Status(g, failed, state.step, self.evals))
        return Generation(
            g,
            slots,
            images,
            pop,
            scores,
            pop_logits,
            pop_logits_b,
            state,
            best,
            best_fit,
            improved,
            failed,
            result,
            done,
            found,
        )

    def context(
        self, z: torch.Tensor, expected: torch.Tensor, logits_b: torch.Tensor | None = None
    ) -> Context:
        """The objective context of latents (S, M, ...) of the active seeds, their labels
        (S x M,), and classifier B's logits (S, M, K) where there is a second classifier,
        flattened to N = S x M individuals. The latent fields only where an objective
        `requires` them: a margin fitness reads none, and copying every latent twice a
        generation is a visible share of a small campaign's bookkeeping."""
        m = z.shape[1]

        def rep(t: torch.Tensor) -> torch.Tensor:
            return t.repeat_interleave(m, 0)

        latents = "latents" in self.needs
        return Context(
            expected=expected,
            latents=z.flatten(2).flatten(0, 1).float() if latents else None,
            seed_latents=(
                rep(self.seed_latents.flatten(1).float()) if "seed_latents" in self.needs else None
            ),
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
        idx = torch.nonzero(gen.improved).flatten()
        if len(idx):
            strips = [self.strips[i] for i in self.active[idx].tolist()]
            at = idx.numpy()
            image[at] = strips
            frame[at] = self.sink.add_frames(strips, self.images_of(gen, idx, gen.best[idx]))
        self.writer.append(
            "generations",
            seed_idx=self.active.numpy(),
            generation=gen.g,
            best_fitness=gen.best_fit.numpy(),
            mean_fitness=gen.scores.mean(1).numpy(),
            best_pred=best_logits.argmax(1).numpy(),
            best_pred_b=best_b,
            top1_label=top[:, 0].numpy(),
            top1_prob=probs[:, 0].numpy(),
            top2_label=top[:, 1].numpy(),
            top2_prob=probs[:, 1].numpy(),
            step=gen.state.step.numpy(),
            evaluations=self.evals.numpy(),
            elapsed_s=time.perf_counter() - self.t0,
            image=image,
            image_frame=frame,
        )
        if self.cfg.record_individuals:
            evaluated = np.zeros(p, dtype=bool)
            evaluated[gen.slots.numpy()] = True
            self.writer.append(
                "individuals",
                seed_idx=np.repeat(self.active.numpy(), p),
                generation=gen.g,
                individual=np.tile(np.arange(p), s),
                fitness=gen.scores.flatten().numpy(),
                pred=gen.logits.argmax(2).flatten().numpy(),
                evaluated=np.tile(evaluated, s),
                pred_b=None if gen.logits_b is None else gen.logits_b.argmax(2).flatten().numpy(),
                objective2=None if (o2 := gen.state.objective2) is None else o2.flatten().numpy(),
            )

        if self.archive is not None and gen.found is not None:
            self.archive.add(*gen.found)  # after the generations rows (resume's replay)

    def finish_seeds(self, gen: Generation) -> None:
        """Final outcome, result image and strip of every seed that stops now."""
        d = torch.nonzero(gen.done).flatten()
        seed_idx = self.active[d]
        slot = gen.result[d]
        logits = gen.logits[d, slot]
        probs, _ = top2(logits)
        results = [f"{seed_dir(self.cid, int(i))}/result.png" for i in seed_idx]
        strips = [self.strips[int(i)] for i in seed_idx]
        result_images = self.images_of(gen, d, slot)
        self.sink.save(results, result_images)
        self.metrics.finished(seed_idx, gen.failed[d], logits, result_images)
        self.sink.write_strips(strips, release=True)
        distance = (gen.pop[d, slot] - self.seed_latents[d].flatten(1)).norm(dim=1)
        self.writer.update_seeds(
            seed_idx=seed_idx.numpy(),
            status=np.where(gen.failed[d].numpy(), "misclassified", "survived"),
            misclassified=gen.failed[d].numpy(),
            iterations=torch.where(self.first_failure[d] > 0, self.first_failure[d], gen.g).numpy(),
            evaluations=self.evals[d].numpy(),
            final_pred=logits.argmax(1).numpy(),
            final_pred_b=None if gen.logits_b is None else gen.logits_b[d, slot].argmax(1).numpy(),
            final_fitness=gen.scores[d, slot].numpy(),
            final_top1=probs[:, 0].numpy(),
            final_top2=probs[:, 1].numpy(),
            latent_distance=distance.numpy(),
            result_image=results,
            improvements_image=strips,
            elapsed_s=time.perf_counter() - self.t0,
        )
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

    def images_of(self, gen: Generation, rows: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """uint8 images (N, C, H, W) of population slot slots[i] of active seed rows[i].

        Slots evaluated this generation come from the evaluation; any other (a survivor
        that became best without a new evaluation, which the GA never produces) is decoded.
        """
        pos = torch.full((gen.pop.shape[1],), -1, dtype=torch.long)
        pos[gen.slots] = torch.arange(len(gen.slots))
        where = pos[slots]
        stale = where < 0
        if not bool(stale.any()):
            return gen.images[rows, where]
        out = torch.empty((len(rows), *gen.images.shape[2:]), dtype=torch.uint8)
        out[~stale] = gen.images[rows[~stale], where[~stale]]
        r, z = rows[stale], gen.pop[rows[stale], slots[stale]]
        z = z.reshape(len(r), *self.strategy.space.latent_shape)
        out[stale] = self.evaluate(z, self.labels[self.active][r])[1]
        return out
