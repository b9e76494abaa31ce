"""NSGA-II over generator latents (DiffGAN): divergence and diversity, both maximised.

One NSGA-II run per seed, all runs in one tensor (S, P, D). A class-conditional generator
keeps each run's class fixed: the seed's label, the class every image of the run is asked
for (the label is not a gene: crossover between classes would mean nothing to the GAN).
The first population (``init``) is DiffGAN's, P latents drawn from U[-1, 1] per gene
(``uniform``; the seed is not among them, though a class-conditional run keeps the seed's
class), or the seed latent plus P - 1 draws from the prior N(0, I) (``seed-noise``, this
strategy's first init); either way from the campaign's one seeded generator and clamped to
the generator's measured latent bounds.

Per generation, as the runner's ask/tell: the P offspring are evaluated (the first
generation: the P initial latents), then ``advance`` joins parents and offspring, scores
the diversity of all of them against the current representatives (engine/search/diversity.py),
keeps the best P by non-dominated rank and crowding distance (pymoo's, not ours), and
breeds P offspring: binary tournaments on (rank, crowding), SBX crossover with
probability ``crossover`` per pair, polynomial mutation with probability ``mutation`` per
gene (Deb's bounded operators, distribution indices ``eta_c`` and ``eta_m``).

Objective 1 is the campaign's fitness (minimised; DiffGAN's is ``divergence``), objective
2 is minus the diversity. ``objectives: divergence`` is DiffGAN's ablation: the same
NSGA-II on objective 1 alone (a one-column sort, crowding along it), with no diversity
computed at all. The search does not stop at the first triggering input: every
distinct one goes to the campaign's archive. The budget is generations x P evaluations,
or ``seconds`` of wall-clock time (DiffGAN's budget; not reproducible, since how far a run
gets then depends on the machine).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field

from engine.search.diversity import EMBEDDINGS, DiversityArchive, image_features
from engine.search.strategies.base import (
    STRATEGIES,
    EveryGenerationBudget,
    PopulationStrategy,
    SearchState,
    StrategyParams,
)
from engine.search.strategies.operators import clamp, polynomial_mutation, sbx, take
from engine.search.termination import Termination, WallClock

#: First populations: DiffGAN's uniform draws, and the seed plus prior noise.
INITS = ("uniform", "seed-noise")
#: Objective sets: DiffGAN's two, and its ablation's one.
OBJECTIVES = ("both", "divergence")
#: DiffGAN draws its first latents from U[-UNIFORM, UNIFORM] per gene.
UNIFORM = 1.0


class NSGA2Params(StrategyParams):
    generations: int = Field(30, ge=1, le=100_000, description="generation budget")
    population: int = Field(100, ge=4, le=10_000, description="latents per run (DiffGAN: 100)")
    init: Literal["uniform", "seed-noise"] = Field(
        "uniform",
        description="first population: P draws from U[-1, 1] (uniform, DiffGAN's) or the seed "
        "plus P - 1 draws from N(0, I) (seed-noise)",
        json_schema_extra={"options": list(INITS)},
    )
    objectives: Literal["both", "divergence"] = Field(
        "both",
        description="both: the fitness and diversity (DiffGAN); divergence: the fitness alone "
        "(DiffGAN's ablation)",
        json_schema_extra={"options": list(OBJECTIVES)},
    )
    crossover: float = Field(0.9, ge=0, le=1, description="SBX probability per pair of parents")
    eta_c: float = Field(15.0, gt=0, le=1000, title="SBX eta", description="SBX distribution index")
    mutation: float = Field(0.1, ge=0, le=1, description="polynomial mutation probability per gene")
    eta_m: float = Field(
        20.0, gt=0, le=1000, title="Mutation eta", description="polynomial mutation index"
    )
    embedding: Literal["pca", "umap"] = Field(
        "pca",
        description="2-D embedding before HDBSCAN clusters the finds (pca, umap)",
        json_schema_extra={"options": list(EMBEDDINGS)},
    )
    cluster_every: int = Field(
        5, ge=1, le=1000, description="generations between re-clusterings of the finds"
    )
    seconds: float | None = Field(
        None,
        gt=0,
        le=7 * 86400,
        description="wall-clock budget in seconds; the run ends at this or at generations, "
        "whichever comes first (not reproducible, and not resumable)",
    )
    stop_at_failure: bool = Field(False, description="stop a run at its first triggering input")


def rank_and_crowding(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-dominated rank (N,) and crowding distance (N,) of objectives f (N, K), minimised."""
    # Deferred (start-up time: loads pymoo).
    from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    rank = np.empty(len(f), dtype=np.int64)
    crowd = np.empty(len(f))
    for r, front in enumerate(NonDominatedSorting().do(f)):
        rank[front] = r
        crowd[front] = calc_crowding_distance(f[front])
    return rank, crowd


@STRATEGIES.register("nsga2")
class NSGA2(EveryGenerationBudget, PopulationStrategy):
    name = "nsga2"
    Params = NSGA2Params
    default_fitness = "divergence"
    per_seed = ("seed", "pop", "scores", "logits", "feat", "div")
    per_individual = ("pop", "scores", "logits", "feat", "div")
    state_fields = ("generation",)
    step_label = None  # no step: SBX and mutation scale with the bounds
    multi_objective = True

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        p, s = self.params.population, seeds.shape[0]
        self.generation = 0
        self.seed = seeds.reshape(s, -1).float()
        self.pop = clamp(initial_population(self.seed, p, self.params.init, rng), *self.bounds)
        self.scores = torch.full((s, p), float("nan"))
        self.logits = None
        self.slots = torch.arange(p)
        self.feat: torch.Tensor | None = None
        self.div = torch.ones(s, p)
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=rng))
        self.archive = DiversityArchive(s, self.params.embedding, seed)

    @property
    def bounds(self) -> tuple[float, float]:
        return self.space.low, self.space.high

    @property
    def diverse(self) -> bool:
        """Diversity is an objective (not DiffGAN's ablation)."""
        return self.params.objectives == "both"

    def see(self, slots: torch.Tensor, images: torch.Tensor, failing: torch.Tensor) -> None:
        if not self.diverse:
            return  # nothing reads the features or the archive: the ablation spends nothing
        f = image_features(images)  # (S, M, F)
        if self.feat is None:
            self.feat = torch.zeros(*self.pop.shape[:2], f.shape[-1])
        self.feat[:, slots] = f
        owner = torch.arange(f.shape[0])[:, None].expand(failing.shape)
        self.archive.add(f[failing], owner[failing])
        self.div[:, slots] = self.archive.diversity(f)

    def state(self) -> SearchState:
        # The ablation records no second objective: no Pareto front of a diversity it never saw.
        return SearchState(torch.zeros(len(self.seed)), self.div if self.diverse else None)

    def termination(self, refines_failures: bool = False) -> Termination:
        rule = super().termination(refines_failures)
        return rule if self.params.seconds is None else rule | WallClock(self.params.seconds)

    def keep(self, mask: torch.Tensor) -> None:
        super().keep(mask)
        self.archive.keep(mask)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "archive": self.archive.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.archive = DiversityArchive.from_state(state["archive"])

    def advance(self, rng: torch.Generator) -> None:
        p = self.params
        self.generation += 1
        # Also as soon as the first finds exist: until then every image's diversity is 1
        # and the second objective would not steer anything.
        recluster = self.archive.unrepresented() or self.generation % p.cluster_every == 0
        if self.diverse and recluster:
            self.archive.recluster()
            # The representatives moved: every member's diversity changes. Otherwise each
            # was scored (in see) against the representatives still in force.
            self.div = self.archive.diversity(self.feat)
        s, n = self.scores.shape
        objectives = self.objectives().numpy()
        rank = np.empty((s, n), dtype=np.int64)
        crowd = np.empty((s, n))
        for i in range(s):  # pymoo sorts one run at a time; a loop over runs, not individuals
            rank[i], crowd[i] = rank_and_crowding(objectives[i])
        rank_t, crowd_t = torch.from_numpy(rank), torch.from_numpy(crowd)
        # Survivors: lowest rank, then largest crowding distance (inf at a front's ends).
        key = rank_t.double() * 1e6 - torch.nan_to_num(crowd_t, posinf=1e5).clamp(max=1e5)
        keep = key.argsort(dim=1, stable=True)[:, : p.population]
        survivors = self._take(keep)
        r_keep, c_keep = rank_t.gather(1, keep), crowd_t.gather(1, keep)

        # Binary tournaments: lower rank wins, then larger crowding; ties to the first.
        a = torch.randint(0, p.population, (s, 2, p.population), generator=rng)
        b = torch.randint(0, p.population, (s, 2, p.population), generator=rng)
        ra, rb = r_keep.gather(1, a.flatten(1)), r_keep.gather(1, b.flatten(1))
        ca, cb = c_keep.gather(1, a.flatten(1)), c_keep.gather(1, b.flatten(1))
        a_wins = (ra < rb) | ((ra == rb) & (ca >= cb))
        parents = torch.where(a_wins, a.flatten(1), b.flatten(1)).view(s, 2, p.population)
        pop = survivors["pop"]
        half = (p.population + 1) // 2
        p1, p2 = take(pop, parents[:, 0, :half]), take(pop, parents[:, 1, :half])
        lo, hi = self.space.low, self.space.high
        c1, c2 = sbx(p1, p2, lo, hi, p.eta_c, p.crossover, rng)
        children = torch.cat([c1, c2], 1)[:, : p.population]
        children = polynomial_mutation(children, lo, hi, p.eta_m, p.mutation, rng)

        nan = float("nan")
        self.pop = torch.cat([pop, children], 1)
        self.scores = torch.cat([survivors["scores"], torch.full((s, p.population), nan)], 1)
        k = survivors["logits"].shape[2]
        self.logits = torch.cat([survivors["logits"], torch.full((s, p.population, k), nan)], 1)
        feat = survivors["feat"]
        self.feat = None if feat is None else torch.cat([feat, torch.zeros_like(feat)], 1)
        self.div = torch.cat([survivors["div"], torch.ones(s, p.population)], 1)
        self.slots = torch.arange(p.population, 2 * p.population)

    def objectives(self) -> torch.Tensor:
        """What NSGA-II sorts, minimised: (S, N, 2) fitness and minus diversity, or (S, N, 1)
        the fitness alone under the ablation."""
        cols = [self.scores, -self.div] if self.diverse else [self.scores]
        return torch.stack(cols, 2).double()

    def _take(self, idx: torch.Tensor) -> dict[str, torch.Tensor | None]:
        """Rows idx (S, P) of every per-individual tensor (the ablation keeps no features)."""
        names = ("pop", "scores", "logits", "feat", "div")
        return {n: None if getattr(self, n) is None else take(getattr(self, n), idx) for n in names}


def initial_population(
    seed: torch.Tensor, population: int, init: str, rng: torch.Generator
) -> torch.Tensor:
    """The first P latents (S, P, D) of seeds (S, D), before clamping: DiffGAN's U[-1, 1]
    draws (``uniform``) or the seed and P - 1 prior draws (``seed-noise``)."""
    s, d = seed.shape
    if init == "uniform":
        u = torch.rand((s, population, d), generator=rng)
        return (2 * u - 1) * UNIFORM
    if init != "seed-noise":
        raise ValueError(f"init {init!r} unknown; expected one of {INITS}")
    prior = torch.randn((s, population - 1, d), generator=rng)
    return torch.cat([seed[:, None], prior], 1)
