"""Fitness functions and failure criteria: small composable objects with one call shape.

Both take the logits (N, K) of N evaluated individuals and one ``Context`` that says what
else is known of them (expected labels, latents, seed latents, target class):

- Fitness: ``fitness(logits, ctx) -> scores (N,)``, minimised.
- Criterion: ``criterion(logits, ctx) -> bool (N,)``, True where the input fails.

An objective that needs more than the expected labels names the context fields it reads in
``requires``; the runner fills the fields its objectives require (``need`` names a missing
one) and ``resolve`` checks what the config must give (a target class), so no call site
grows an argument when an objective needs something new.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch

from engine.core.registry import Registry


@dataclass(frozen=True)
class Context:
    """What an objective may know of N individuals besides their logits.

    expected: (N,) the seed's intended label. latents: (N, D) flattened latents.
    seed_latents: (N, D) the seed latent of each individual. target: (N,) the class a
    targeted search must reach (None when the campaign has no target). logits_b: (N, K)
    the second classifier's logits of the same images (differential campaigns only).
    """

    expected: torch.Tensor
    latents: torch.Tensor | None = None
    seed_latents: torch.Tensor | None = None
    target: torch.Tensor | None = None
    logits_b: torch.Tensor | None = None

    def need(self, name: str) -> torch.Tensor:
        """The field ``name``, or a ValueError naming the objective input that is missing."""
        v = getattr(self, name)
        if v is None:
            raise ValueError(f"this objective needs context.{name}, which was not given")
        return v


class Objective(ABC):
    name: ClassVar[str]
    #: Context fields beyond ``expected`` that this objective reads.
    requires: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor: ...


class Fitness(Objective):
    """Scores (N,), minimised."""

    #: The failure criterion that goes with this fitness when the config names none.
    criterion: ClassVar[str] = "misclassified"
    #: True: a seed's search goes on after its first failure, refining the failing
    #: individuals (SINVAD's boundary search); False: a failure ends the seed.
    refines_failures: ClassVar[bool] = False
    #: The score below which an individual fails `criterion` (charts draw it as a line);
    #: None where no score splits failing from passing (a divergence, a distance).
    fails_below: ClassVar[float | None] = None
    #: The score every individual has until the search reaches its goal (SINVAD's 999),
    #: None where the score keeps moving before it (margins, divergence). SINVAD's step
    #: rule reads it: the first generation that reaches nothing counts as stagnation.
    unreached: ClassVar[float | None] = None

    def viable(self, logits: torch.Tensor, ctx: Context, criterion: Criterion) -> torch.Tensor:
        """bool (N,): which seeds (their generated images' logits) are searched. GIFTbench
        searches a seed only if the classifier gets its image right and it does not
        already fail: otherwise there is nothing left to find."""
        return (logits.argmax(1) == ctx.expected) & ~criterion(logits, ctx)


class Criterion(Objective):
    """bool (N,), True where the input fails."""


FITNESS: Registry[type[Fitness]] = Registry("fitness")
CRITERIA: Registry[type[Criterion]] = Registry("failure criterion")


def margin(logits: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """logit[expected] - max over other classes (N,): negative iff another class wins."""
    own = logits.gather(1, expected[:, None]).squeeze(1)
    others = logits.scatter(1, expected[:, None], float("-inf"))
    return own - others.amax(1)


@FITNESS.register("margin")
class Margin(Fitness):
    """GIFTbench's fitness: the expected class's logit margin over the runner-up."""

    name = "margin"
    fails_below = 0.0

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return margin(logits, ctx.expected)


@FITNESS.register("targeted")
class Targeted(Fitness):
    """Targeted class escape: max over classes other than t of logit - logit[t].

    Minimised; negative once class t wins. Fails (criterion ``targeted``) when argmax == t.
    """

    name = "targeted"
    fails_below = 0.0
    requires = ("target",)
    criterion = "targeted"

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return -margin(logits, ctx.need("target"))


#: SINVAD's score while the class is unchanged (its code uses 999). It must exceed every L1
#: distance a search can reach: 1e6 > D x latent range for every bundled generator
#: (400 genes x range < 20).
BOUNDARY_UNCHANGED = 1e6


@FITNESS.register("boundary")
class Boundary(Fitness):
    """SINVAD's boundary fitness: a large constant while the expected class still wins,
    else the L1 distance between the latent and its seed latent (minimised).

    A seed's search goes on after its first failure, pulling failing individuals towards
    the seed; its result is the failing individual closest to the seed.
    """

    name = "boundary"
    requires = ("latents", "seed_latents")
    refines_failures = True
    unreached = BOUNDARY_UNCHANGED

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        dist = (ctx.need("latents") - ctx.need("seed_latents")).abs().sum(1)
        changed = logits.argmax(1) != ctx.expected
        return torch.where(changed, dist.to(logits.dtype), BOUNDARY_UNCHANGED)


@FITNESS.register("escape")
class Escape(Fitness):
    """SINVAD's class-escape fitness (its Eq. 4): a large constant while the target class
    is not the top class, else the L1 distance between the latent and its seed latent
    (minimised). As in the reference (RQ4), the search goes on once the target is reached,
    pulling the escaping individuals towards the seed. ``targeted`` is the logit-margin
    variant, whose score moves before the target is reached."""

    name = "escape"
    requires = ("latents", "seed_latents", "target")
    criterion = "targeted"
    refines_failures = True
    unreached = BOUNDARY_UNCHANGED

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        dist = (ctx.need("latents") - ctx.need("seed_latents")).abs().sum(1)
        reached = logits.argmax(1) == ctx.need("target")
        return torch.where(reached, dist.to(logits.dtype), BOUNDARY_UNCHANGED)

    def viable(self, logits: torch.Tensor, ctx: Context, criterion: Criterion) -> torch.Tensor:
        # The reference (RQ4) searches every seed it draws and counts every search: one the
        # classifier gets wrong may still reach the target, one already there succeeds.
        return torch.ones(len(logits), dtype=torch.bool)


@CRITERIA.register("misclassified")
class Misclassified(Criterion):
    """The classifier's top class is not the expected one."""

    name = "misclassified"

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return logits.argmax(1) != ctx.expected


@CRITERIA.register("targeted")
class ReachedTarget(Criterion):
    """The classifier's top class is the target class."""

    name = "targeted"
    requires = ("target",)

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return logits.argmax(1) == ctx.need("target")


def divergence(logits_a: torch.Tensor, logits_b: torch.Tensor) -> torch.Tensor:
    """DiffGAN's divergence (N,): the Euclidean distance between the two classifiers'
    softmax probability vectors, plus 1 where their top classes differ. In [0, 1 + sqrt 2]."""
    pa, pb = torch.softmax(logits_a.float(), 1), torch.softmax(logits_b.float(), 1)
    differ = logits_a.argmax(1) != logits_b.argmax(1)
    return (pa - pb).norm(dim=1) + differ.float()


@FITNESS.register("divergence")
class Divergence(Fitness):
    """Differential testing (DiffGAN): minus the divergence of classifiers A and B, so that
    minimising it drives the two apart. A failure is an input they label differently."""

    name = "divergence"
    requires = ("logits_b",)
    criterion = "disagree"

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return -divergence(logits, ctx.need("logits_b"))


@CRITERIA.register("disagree")
class Disagree(Criterion):
    """A triggering input: classifier A's top class differs from classifier B's."""

    name = "disagree"
    requires = ("logits_b",)

    def __call__(self, logits: torch.Tensor, ctx: Context) -> torch.Tensor:
        return logits.argmax(1) != ctx.need("logits_b").argmax(1)


def top2(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-2 softmax probabilities (N, 2) and their labels (N, 2)."""
    p, idx = torch.softmax(logits.float(), 1).topk(2, dim=1)
    return p, idx
