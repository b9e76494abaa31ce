"""Metamorphic input mutation in pixel space, as DeepHunter (Xie et al., ISSTA 2019) and
DRfuzz fuzz a classifier: the baseline DiffGAN and Argus compare latent search against.

Per seed, a queue of images (the seed image first). Each generation picks ``population``
parents from the queue (uniformly, with replacement) and gives each one transform drawn
uniformly from eight, with a parameter drawn uniformly from its range (TRANSFORMS):

- affine: translation, scale, shear, rotation (``affine_grid`` and ``grid_sample``,
  bilinear, black outside the image);
- pixel values: contrast (a scaling of the values), brightness, Gaussian blur, noise.

DeepHunter's bounds on the change: an image takes at most one affine transform in its
history (a parent that has had one gets pixel transforms only), and its pixel changes,
measured from its reference image (the seed, or the image just after its affine
transform), either touch fewer than ``alpha`` of its values or move none by more than
``beta``. DeepHunter retries a mutant that breaks the bound; here it is projected onto the
bound (its changes clipped to +-beta around the reference), so every mutant is evaluated
and counts toward the budget: population x generations per seed.

The queue is coverage-free: a mutant joins it when it scores lower (closer to failure)
than its parent, and a picked parent stays only when one of its mutants joined (never
leaving a seed's queue empty). The queue holds ``queue`` images; past that, the
highest-scoring ones drop.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from pydantic import Field

from engine.search.strategies.base import (
    STRATEGIES,
    EveryGenerationBudget,
    PopulationStrategy,
    SearchState,
    StrategyParams,
)
from engine.search.strategies.operators import take

#: Each transform's parameter range, drawn uniformly. The affine ones first: their index
#: below AFFINE. Translation is a fraction of the side (3 pixels of MNIST's 28: DeepHunter's
#: order of magnitude); rotation is in degrees; brightness and noise are pixel values.
TRANSFORMS: dict[str, tuple[float, float]] = {
    "translation": (-0.1, 0.1),
    "scale": (0.8, 1.2),
    "shear": (-0.2, 0.2),
    "rotation": (-30.0, 30.0),
    "contrast": (0.8, 1.2),
    "brightness": (-0.1, 0.1),
    "blur": (0.5, 1.0),
    "noise": (0.01, 0.05),
}
NAMES = tuple(TRANSFORMS)
AFFINE = 4
#: A value moved by less than half a grey level is unchanged (images are stored as uint8).
UNCHANGED = 0.5 / 255


class MutationParams(StrategyParams):
    generations: int = Field(
        250, ge=1, le=1_000_000, title="Generations", description="generation budget"
    )
    population: int = Field(25, ge=1, le=10_000, description="mutants per seed and generation")
    queue: int = Field(50, ge=1, le=10_000, description="images a seed's queue holds at most")
    alpha: float = Field(
        0.02, gt=0, le=1, description="share of pixel values a mutant may change freely"
    )
    beta: float = Field(
        0.2, gt=0, le=1, description="largest change of a pixel value when more change"
    )
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")


def choose_transforms(affine_done: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """A transform index (S, P) per mutant, uniform over all eight; parents that have had
    their affine transform (affine_done, (S, P)) draw among the pixel-value ones only."""
    op = torch.randint(0, len(NAMES), affine_done.shape, generator=rng)
    pixel = torch.randint(AFFINE, len(NAMES), affine_done.shape, generator=rng)
    return torch.where(affine_done & (op < AFFINE), pixel, op)


def affine_theta(op: int, v: torch.Tensor) -> torch.Tensor:
    """(N, 2, 3) matrices of transform `op` with parameters v (N, 2) (the second used by
    translation alone, for its other axis), in the normalised coordinates of
    ``affine_grid`` (the image spans [-1, 1]; they map output to input)."""
    n = len(v)
    theta = torch.zeros((n, 2, 3))
    theta[:, 0, 0] = theta[:, 1, 1] = 1.0
    if NAMES[op] == "translation":
        theta[:, :, 2] = 2 * v
        return theta
    v = v[:, 0]
    if NAMES[op] == "scale":
        theta[:, 0, 0] = theta[:, 1, 1] = 1 / v
    elif NAMES[op] == "shear":
        theta[:, 0, 1] = v
    else:
        a = v * (math.pi / 180)
        theta[:, 0, 0], theta[:, 0, 1] = a.cos(), -a.sin()
        theta[:, 1, 0], theta[:, 1, 1] = a.sin(), a.cos()
    return theta


def blur(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """3x3 Gaussian blur of x (N, C, H, W), each image with its own sigma (N,)."""
    n, c, h, w = x.shape
    d = torch.tensor([-1.0, 0.0, 1.0], device=x.device)
    k1 = torch.exp(-(d[None, :] ** 2) / (2 * sigma[:, None] ** 2))
    k1 = k1 / k1.sum(1, keepdim=True)
    k2 = (k1[:, :, None] * k1[:, None, :]).repeat_interleave(c, 0)[:, None]
    padded = F.pad(x.reshape(1, n * c, h, w), (1, 1, 1, 1), mode="replicate")
    return F.conv2d(padded, k2, groups=n * c).reshape(n, c, h, w)


def pixel_values(name: str, x: torch.Tensor, v: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """Pixel-value transform `name` of x (N, C, H, W) with parameters v (N,), unclamped."""
    if name == "blur":
        return blur(x, v)
    v4 = v[:, None, None, None]
    if name == "contrast":
        return x * v4
    if name == "brightness":
        return x + v4
    return x + v4 * torch.randn(x.shape, generator=rng).to(x.device)


def transform(
    x: torch.Tensor, op: torch.Tensor, u: torch.Tensor, rng: torch.Generator
) -> torch.Tensor:
    """Images x (N, C, H, W), each with transform op (N,) at the fractions u (N, 2) of its
    range (the second for translation's other axis) -> (N, C, H, W) in [0, 1]."""
    out = x.clone()
    u = u.to(x.device)
    for k, name in enumerate(NAMES):
        idx = torch.nonzero(op == k).flatten().to(x.device)
        if not len(idx):
            continue
        lo, hi = TRANSFORMS[name]
        v = lo + (hi - lo) * u[idx]
        xi = x[idx]
        if k < AFFINE:
            theta = affine_theta(k, v.cpu()).to(x.device)
            grid = F.affine_grid(theta, list(xi.shape), align_corners=False)
            y = F.grid_sample(xi, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        else:
            y = pixel_values(name, xi, v[:, 0], rng)
        out[idx] = y.clamp(0.0, 1.0)
    return out


def bound(x: torch.Tensor, ref: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """DeepHunter's bound on mutants x (N, D) from their references (N, D): fewer than
    alpha x D values changed, or none moved by more than beta; a mutant that breaks it is
    projected onto the second (its changes clipped to +-beta)."""
    diff = x - ref
    few = (diff.abs() > UNCHANGED).sum(1) < alpha * x.shape[1]
    clipped = ref + diff.clamp(-beta, beta)
    return torch.where(few[:, None], x, clipped)


@STRATEGIES.register("mutation")
class Mutation(EveryGenerationBudget, PopulationStrategy):
    name = "mutation"
    Params = MutationParams
    generator_family = "pixel"
    step_label = "queue length"
    # Every tensor with a mutant dimension, cut together where the budget ends a generation.
    per_individual: ClassVar[tuple[str, ...]] = (
        "pop",
        "scores",
        "logits",
        "parent",
        "m_ref",
        "m_affine",
    )
    per_seed: ClassVar[tuple[str, ...]] = (
        "seed",
        "pop",
        "scores",
        "logits",
        "parent",
        "m_ref",
        "m_affine",
        "queue",
        "q_ref",
        "q_affine",
        "q_score",
        "filled",
    )

    def held_per_seed(self, image_values: int) -> tuple[int, int]:
        # The queue and the mutants, each with its reference image.
        return 2 * (self.params.queue + self.params.population), image_values

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        s = seeds.shape[0]
        q = self.params.queue
        self.seed = seeds.reshape(s, -1).float()
        dev = self.seed.device
        self.queue = torch.zeros((s, q, self.seed.shape[1]), device=dev)
        self.queue[:, 0] = self.seed
        self.q_ref = self.queue.clone()
        self.q_affine = torch.zeros((s, q), dtype=torch.bool, device=dev)
        # The seed's own score is not asked: every first mutant beats it, so the first
        # generation fills the queue.
        self.q_score = torch.full((s, q), float("inf"))  # scores live on the CPU, as tell's
        self.filled = torch.zeros((s, q), dtype=torch.bool)
        self.filled[:, 0] = True
        self.mutate(rng)

    def mutate(self, rng: torch.Generator) -> None:
        """The next mutants (S, P, D) from parents drawn from each seed's queue."""
        p = self.params
        s, d = self.seed.shape
        self.parent = torch.multinomial(self.filled.float(), p.population, True, generator=rng)
        parents, refs = take(self.queue, self.parent), take(self.q_ref, self.parent)
        done = take(self.q_affine, self.parent)
        # Draws on the CPU (the campaign's generator), images on the seeds' device.
        op = choose_transforms(done.cpu(), rng)
        u = torch.rand((*op.shape, 2), generator=rng)
        n = s * p.population
        x = transform(
            parents.reshape(n, *self.space.latent_shape), op.flatten(), u.reshape(n, 2), rng
        ).reshape(s, p.population, d)
        affine = (op < AFFINE).to(x.device)
        self.m_ref = torch.where(affine[..., None], x, refs)
        self.m_affine = done | affine
        bounded = bound(x.reshape(n, d), self.m_ref.reshape(n, d), p.alpha, p.beta)
        self.pop = bounded.reshape(s, p.population, d)
        self.scores = torch.full((s, p.population), float("nan"))
        self.logits = None
        self.slots = torch.arange(p.population)

    def requeue(self) -> None:
        """The queue after the generation just told: mutants that beat their parent join,
        picked parents none of whose mutants joined leave, the lowest-scoring `queue` stay."""
        s, q = self.filled.shape
        dev = self.queue.device
        kept = self.scores < take(self.q_score, self.parent)
        zeros = torch.zeros((s, q))
        picked = zeros.scatter_add(1, self.parent, torch.ones_like(kept, dtype=torch.float)) > 0
        productive = zeros.scatter_add(1, self.parent, kept.float()) > 0
        alive = self.filled & ~(picked & ~productive)
        alive = torch.where(alive.any(1, keepdim=True), alive, self.filled)
        valid = torch.cat([alive, kept], 1)
        score = torch.cat([self.q_score, self.scores], 1)
        # Valid entries first, each group by score; stable, so ties keep queue order.
        by_score = score.argsort(dim=1, stable=True)
        order = by_score.gather(1, (~valid.gather(1, by_score)).argsort(dim=1, stable=True))[:, :q]
        self.queue = take(torch.cat([self.queue, self.pop], 1), order)
        self.q_ref = take(torch.cat([self.q_ref, self.m_ref], 1), order)
        self.q_affine = torch.cat([self.q_affine, self.m_affine], 1).gather(1, order.to(dev))
        self.q_score = score.gather(1, order)
        self.filled = valid.gather(1, order)

    def state(self) -> SearchState:
        return SearchState(self.filled.sum(1).float())

    def advance(self, rng: torch.Generator) -> None:
        self.requeue()
        self.mutate(rng)
