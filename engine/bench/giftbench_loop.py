"""A per-seed search loop written the way GIFTbench runs its GA, to measure latentfuzz against.

Written from a description of GIFTbench's MNIST VAE loop, not from its code. For each seed,
one seed after another: a population of 25 latents around the seed latent (2 x the step's
spread, clamped to the latent bounds); each generation the whole population is decoded and
classified as one batch of 25, elites included although their scores are known; a numpy
fitness per individual in a Python loop (the expected class's logit margin over the
runner-up, latentfuzz's `margin`, so both sides search for the same thing); then the 10
lowest-fitness individuals are kept, 15 children bred from two distinct elites each by
single-point crossover over the flattened latent, mutated by the step on the genes that
differ from the seed, and clamped. The step doubles (capped at the latent range) while the
best fitness stays the same and returns to 2 x step when it changes: latentfuzz's GA
`high` preset (engine/search/strategies/ga.py). A seed stops at its first misclassified
individual or at the generation budget.

Models, seeds and thread settings are latentfuzz's: the config's generator and default
classifier as `resolve` loads them, the seeds `latentfuzz run --seed 1` draws (non-viable
ones left out, as it does), this process's torch threads. The classifier runs as its eager
module, as plain PyTorch does (GIFTbench has no folded graph); the variants below switch
each of latentfuzz's differences on in turn, so the factors between them multiply to the
whole lead:

    eager      the classifier's eager module (off: the folded graph latentfuzz runs)
    reevaluate elites decoded and classified again every generation (off: children only)
    per_seed   one seed after another, batches of 25 (off: all seeds' candidates of a
               generation in one batch, still a Python fitness per individual)

Its time is the search alone (model loading and seed drawing left out): seed-generations
per second, the unit latentfuzz's campaign is compared in (engine/bench/giftbench.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

POPULATION, ELITES = 25, 10
#: The `high` preset's step as a fraction of the latent range (presets.PRESETS["high"]).
HIGH = 1e-3


@dataclass(frozen=True)
class Variant:
    eager: bool = True
    reevaluate: bool = True
    per_seed: bool = True

    @property
    def name(self) -> str:
        return ", ".join(
            (
                "eager" if self.eager else "graph",
                "elites re-evaluated" if self.reevaluate else "children only",
                "batch 25 per seed" if self.per_seed else "all seeds batched",
            )
        )


#: GIFTbench's way, then latentfuzz's differences switched on one at a time.
GIFTBENCH = Variant()
BREAKDOWN = (
    GIFTBENCH,
    Variant(eager=False),
    Variant(eager=False, reevaluate=False),
    Variant(eager=False, reevaluate=False, per_seed=False),
)


@dataclass
class Seed:
    """One seed's search state."""

    z0: np.ndarray  # (D,)
    label: int
    pop: np.ndarray  # (P, D)
    fit: np.ndarray  # (P,), NaN where not yet scored
    step: float
    prev_best: float = float("inf")
    iterations: int = 0
    evaluations: int = 0
    failed: bool = False
    done: bool = False


@dataclass
class LoopResult:
    iterations: list[int]
    failed: list[bool]
    evaluations: list[int]
    #: Sizes of every decode+classify call, in order.
    batches: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def seed_generations(self) -> int:
        return sum(self.iterations)

    @property
    def rate(self) -> float:
        return self.seed_generations / self.seconds if self.seconds else 0.0


def fitness(logits: np.ndarray, label: int) -> np.ndarray:
    """The expected class's logit margin over the best other class, one individual at a
    time (GIFTbench's cost: numpy calls per individual)."""
    out = np.empty(len(logits))
    for i, row in enumerate(logits):
        out[i] = row[label] - np.max(np.delete(row, label))
    return out


def run_loop(
    seeds: np.ndarray,
    labels: np.ndarray,
    forward: Callable[[np.ndarray, np.ndarray], np.ndarray],
    generations: int,
    low: float,
    high: float,
    variant: Variant = GIFTBENCH,
    rng: np.random.Generator | None = None,
) -> LoopResult:
    """Search every seed (S, D) of class labels (S,); forward(latents (N, D), labels (N,))
    -> logits (N, K) is the decode+classify."""
    rng = rng or np.random.default_rng(1)
    base = (high - low) * HIGH * 2  # reset to the initial step, as GIFTbench's `high`
    cap = max(high - low, base)
    states = [
        Seed(
            z0,
            int(y),
            np.clip(z0 + base * rng.standard_normal((POPULATION, z0.size)), low, high).astype(
                np.float32
            ),
            np.full(POPULATION, np.nan),
            base,
        )
        for z0, y in zip(seeds.astype(np.float32), labels, strict=True)
    ]
    out = LoopResult([], [], [])
    t = time.perf_counter()
    groups = [[s] for s in states] if variant.per_seed else [states]
    for group in groups:
        for g in range(1, generations + 1):
            live = [s for s in group if not s.done]
            if not live:
                break
            _generation(live, g, generations, forward, variant, rng, low, high, cap, base, out)
    out.seconds = time.perf_counter() - t
    out.iterations = [s.iterations for s in states]
    out.failed = [s.failed for s in states]
    out.evaluations = [s.evaluations for s in states]
    return out


def _generation(live, g, generations, forward, variant, rng, low, high, cap, base, out) -> None:
    slots = [
        np.arange(POPULATION) if variant.reevaluate or g == 1 else np.flatnonzero(np.isnan(s.fit))
        for s in live
    ]
    z = np.concatenate([s.pop[i] for s, i in zip(live, slots, strict=True)])
    y = np.concatenate([np.full(len(i), s.label) for s, i in zip(live, slots, strict=True)])
    logits = forward(z, y)
    out.batches.append(len(z))
    at = 0
    for s, i in zip(live, slots, strict=True):
        part = logits[at : at + len(i)]
        at += len(i)
        s.fit[i] = fitness(part, s.label)
        s.evaluations += len(i)
        s.iterations = g
        if (s.fit[i] < 0).any():  # another class wins: misclassified
            s.failed = s.done = True
        elif g == generations:
            s.done = True
        else:
            _breed(s, rng, low, high, cap, base)


def _breed(s: Seed, rng: np.random.Generator, low, high, cap, base) -> None:
    best = float(s.fit.min())
    s.step = min(s.step * 2, cap) if best == s.prev_best else base
    s.prev_best = best
    elite = np.argsort(s.fit, kind="stable")[:ELITES]
    e_pop, e_fit = s.pop[elite], s.fit[elite]
    children = []
    for _ in range(POPULATION - ELITES):
        i = rng.integers(ELITES)
        j = rng.integers(ELITES - 1)
        j += j >= i  # a distinct second parent
        cut = rng.integers(s.z0.size)
        child = np.concatenate([e_pop[i][:cut], e_pop[j][cut:]])
        moved = child != s.z0
        child = child + s.step * rng.standard_normal(child.size) * moved
        children.append(np.clip(child, low, high))
    s.pop = np.vstack([e_pop, *children]).astype(np.float32)
    s.fit = np.concatenate([e_fit, np.full(POPULATION - ELITES, np.nan)])


@dataclass
class Setup:
    """latentfuzz's models and viable seeds for a campaign of `seeds` seeds."""

    forward: Callable[[bool], Callable[[np.ndarray, np.ndarray], np.ndarray]]
    seeds: np.ndarray
    labels: np.ndarray
    low: float
    high: float


def setup(seeds: int, generator: str = "vae", device: str = "cpu", seed: int = 1) -> Setup:
    """The models `latentfuzz run` resolves and the viable seeds it draws with --seed."""
    # Deferred (start-up time: loads the engine's models, duckdb and pandas).
    from engine.campaign.config import parse_config
    from engine.campaign.resolve import resolve
    from engine.campaign.seeding import plan_seeds
    from engine.classifiers import inference

    cfg = parse_config(
        {
            "seeds": seeds,
            "seed": seed,
            "generator": generator,
            "device": device,
            "strategy_params": {"perturbation": "high"},
        }
    )
    r = resolve(cfg)
    gen, clf = r.generator, r.classifier
    test = r.dataset.load("test")
    rng = torch.Generator().manual_seed(cfg.seed)
    drawn, _ = plan_seeds(cfg, gen, test.images, test.labels, r.dataset.num_classes, rng)
    with torch.inference_mode(), gen.seeding():
        x = gen.decode(drawn.latents.to(gen.device), drawn.labels.to(gen.device))
        pred = clf.logits(x).argmax(1).cpu()
    viable = pred == drawn.labels
    shape = gen.latent_shape

    def forward(eager: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        def fn(z: np.ndarray, y: np.ndarray) -> np.ndarray:
            zt = torch.from_numpy(z.astype(np.float32, copy=False)).reshape(-1, *shape)
            zt = zt.to(gen.device)
            yt = torch.from_numpy(y).long().to(gen.device) if gen.conditional else None
            with torch.inference_mode():
                if eager:
                    with inference.eager_only():
                        return clf._logits(gen._decode(zt, yt)).float().cpu().numpy()
                return clf._logits(gen._decode(zt, yt)).float().cpu().numpy()

        return fn

    space = r.strategy.space
    return Setup(
        forward,
        drawn.latents[viable].flatten(1).float().cpu().numpy(),
        drawn.labels[viable].numpy(),
        space.low,
        space.high,
    )
