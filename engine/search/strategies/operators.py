"""Variation and selection operators shared by the strategies, over all seeds at once.

Each is a pure function of tensors with a leading seed dimension S, testable alone, and
draws only from the generator it is given. Shapes: S seeds, P population, E elites,
C children, n draws, D genes (a latent flattened).
"""

from __future__ import annotations

import math

import torch

#: Row size (values) from which `take` copies whole rows with index_select.
WHOLE_ROWS = 64


def take(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows idx (S, M) along dim 1 of t (S, P, ...) -> (S, M, ...)."""
    s, p = t.shape[:2]
    idx = idx.to(t.device)
    if math.prod(t.shape[2:]) >= WHOLE_ROWS:
        # Latent rows: index_select on the (S x P) rows copies each row whole, where
        # advanced indexing t[rows, idx] goes value by value: the same copy, 2.3 to 4.8x
        # faster (10 to 100 seeds x 10 to 15 rows x 400 genes), three times a GA
        # generation. Not for scores and logits, where indexing's lower set-up wins.
        flat = (idx + (torch.arange(s, device=t.device) * p)[:, None]).flatten()
        return t.flatten(0, 1).index_select(0, flat).view(s, idx.shape[1], *t.shape[2:])
    # Indexing, not gather over an index expanded to every value: the same copy, faster.
    return t[torch.arange(s, device=t.device)[:, None], idx]


def clamp(z: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Latents z (...) within the generator's latent bounds [low, high]."""
    return z.clamp(low, high)


def draw(seed: torch.Tensor, n: int, scale: float, rng: torch.Generator) -> torch.Tensor:
    """n draws around each seed: seed (S, D) + scale x N(0, I) -> (S, n, D)."""
    noise = torch.randn((seed.shape[0], n, seed.shape[1]), generator=rng).to(seed.device)
    return seed[:, None, :] + scale * noise


def select_elite(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices (S, k) of the k lowest scores (S, P) per seed; ties keep population order."""
    return scores.argsort(dim=1, stable=True)[:, :k]


def pick_parents(s: int, e: int, c: int, rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Two distinct parent indices in [0, e) per child, (S, C) each; needs e >= 2."""
    i = torch.randint(0, e, (s, c), generator=rng)
    j = torch.randint(0, e - 1, (s, c), generator=rng)
    return i, j + (j >= i).long()  # skip over i: uniform over the other e - 1


def crossover(p1: torch.Tensor, p2: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """Single-point crossover over flattened genes: (S, C, D) x2 -> (S, C, D).

    The cut c is uniform in [0, D-1], as GIFTbench's ``np.random.choice(D)``: the child
    takes genes [0, c) from p1 and [c, D) from p2 (c = 0 copies p2).
    """
    s, c, d = p1.shape
    cut = torch.randint(0, d, (s, c, 1), generator=rng).to(p1.device)
    genes = torch.arange(d, device=p1.device)
    return torch.where(genes < cut, p1, p2)


def mutate(
    children: torch.Tensor, seed: torch.Tensor, step: torch.Tensor, rng: torch.Generator
) -> torch.Tensor:
    """Add step x N(0, 1) to genes that differ from the seed. (S, C, D), (S, D), (S,)."""
    noise = torch.randn(children.shape, generator=rng).to(children.device)
    moved = children != seed[:, None, :]
    # The noise scaled in place, in the order of noise * step * moved, and the children
    # added to it in place (addition commutes bit for bit): the same bits, three
    # temporaries of the population's size fewer.
    return noise.mul_(step[:, None, None]).mul_(moved).add_(children)


def breed(
    pop: torch.Tensor,
    elite: torch.Tensor,
    children: int,
    seed: torch.Tensor,
    step: torch.Tensor,
    rng: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The elitist GAs' generation: the elites (S, E, D) at indices elite (S, E) of pop
    (S, P, D), and `children` (S, C, D) bred from two distinct elites each by single-point
    crossover, then mutated by step (S,) on the genes that differ from the seed (S, D)."""
    s, e = elite.shape
    e_pop = take(pop, elite)
    i, j = pick_parents(s, e, children, rng)
    kids = crossover(take(e_pop, i), take(e_pop, j), rng)
    return e_pop, mutate(kids, seed, step.to(kids.device), rng)


def reset_mask(
    children: torch.Tensor, seed: torch.Tensor, p: float, rng: torch.Generator
) -> torch.Tensor:
    """Reset each gene of children (S, C, D) to the seed's (S, D) with probability p."""
    mask = torch.rand(children.shape, generator=rng).to(children.device) < p
    return torch.where(mask, seed[:, None, :], children)


def sbx(
    p1: torch.Tensor,
    p2: torch.Tensor,
    low: float,
    high: float,
    eta: float,
    prob: float,
    rng: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Simulated binary crossover (Deb & Agrawal 1995), bounded form as in NSGA-II's C code.

    Parents (..., D) -> two children (..., D) within [low, high]. Each pair crosses with
    probability `prob`, then each gene with probability 0.5 (genes that are equal do not).
    """
    shape = p1.shape
    u = torch.rand(shape, generator=rng)
    pair = torch.rand(shape[:-1], generator=rng)[..., None] < prob
    gene = torch.rand(shape, generator=rng) < 0.5
    swap = torch.rand(shape, generator=rng) < 0.5
    y1, y2 = torch.minimum(p1, p2), torch.maximum(p1, p2)
    diff = (y2 - y1).clamp_min(1e-14)

    def beta_q(beta: torch.Tensor) -> torch.Tensor:
        alpha = 2.0 - beta.pow(-(eta + 1.0))
        inner = torch.where(u <= 1.0 / alpha, (u * alpha), 1.0 / (2.0 - u * alpha).clamp_min(1e-14))
        return inner.pow(1.0 / (eta + 1.0))

    c1 = 0.5 * (y1 + y2 - beta_q(1.0 + 2.0 * (y1 - low) / diff) * diff)
    c2 = 0.5 * (y1 + y2 + beta_q(1.0 + 2.0 * (high - y2) / diff) * diff)
    c1, c2 = c1.clamp(low, high), c2.clamp(low, high)
    c1, c2 = torch.where(swap, c2, c1), torch.where(swap, c1, c2)
    act = pair & gene & ((p2 - p1).abs() > 1e-14)
    return torch.where(act, c1, p1), torch.where(act, c2, p2)


def polynomial_mutation(
    x: torch.Tensor, low: float, high: float, eta: float, prob: float, rng: torch.Generator
) -> torch.Tensor:
    """Bounded polynomial mutation (Deb & Goyal 1996): each gene of x (..., D) mutates with
    probability `prob`; the result stays within [low, high]."""
    u = torch.rand(x.shape, generator=rng)
    hit = torch.rand(x.shape, generator=rng) < prob
    span = high - low
    d1, d2 = (x - low) / span, (high - x) / span
    m = 1.0 / (eta + 1.0)
    left = (2 * u + (1 - 2 * u) * (1 - d1).pow(eta + 1)).pow(m) - 1
    right = 1 - (2 * (1 - u) + 2 * (u - 0.5) * (1 - d2).pow(eta + 1)).pow(m)
    y = x + torch.where(u < 0.5, left, right) * span
    return torch.where(hit, y.clamp(low, high), x)
