"""White-box baselines in pixel space: FGSM (Goodfellow et al. 2015) and PGD (Madry et al.
2018), the attacks SINVAD and Argus set beside latent search.

Both descend the campaign's own objective (margin, or targeted with a target class) by
the sign of its gradient with respect to the image, within an L-infinity ball of radius
``epsilon`` around the seed image and within [0, 1]. The gradient is taken through the
classifier's torch module, so the classifier must be one (a zoo model or a TorchScript
file); an ONNX file, run by onnxruntime, has none and is refused before the campaign starts.

Counting rule: every image whose gradient is taken, and every image evaluated, costs one
evaluation; the classifier's forward pass that scores an iterate and the backward pass
that takes its gradient count together as one. So each generation evaluates its
population through the runner (the forward pass the loop counts), and ``advance`` takes
the gradient of the same images before the next generation. PGD with ``restarts`` R and
``steps`` T spends R x (T + 1) evaluations per seed: the starts, then one per step. FGSM
spends 1 + n: the seed, whose gradient gives the direction, then n images along it at
epsilon x k / n, k = 1..n (n = ``epsilons``, 1 by default: the classic single step).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from pydantic import Field, model_validator

from engine.classifiers import ModuleClassifier
from engine.search.fitness import Context
from engine.search.strategies.base import (
    STRATEGIES,
    PopulationStrategy,
    SearchState,
    StrategyParams,
)

#: Images per gradient pass when the campaign sets no batch size.
GRADIENT_BATCH = 256


class GradientAttack(PopulationStrategy):
    """What FGSM and PGD share: the classifier, objective and labels taken at ``attach``,
    the refusals, and the gradient sign of the objective at a population."""

    generator_family = "pixel"
    step_label = "epsilon"
    per_seed: ClassVar[tuple[str, ...]] = ("seed", "pop", "scores", "logits", "labels", "targets")

    @classmethod
    def check_parts(cls, resolved: Any) -> str | None:
        clf = resolved.classifier
        if not isinstance(clf, ModuleClassifier):
            return (
                f"strategy {cls.name!r} takes gradients through the classifier, but "
                f"{clf.name} is not a torch model (ONNX runs without gradients); use a zoo "
                "classifier or a TorchScript file, or a black-box strategy (pixel-ga, mutation)"
            )
        if resolved.classifier_b is not None:
            return (
                f"strategy {cls.name!r} attacks one classifier, but classifier_b "
                f"{resolved.classifier_b_name} was given too; drop classifier_b (--classifier-b)"
            )
        if resolved.config.escape_per_pair is not None:
            return (
                f"strategy {cls.name!r} runs with one target class (--target), not an escape "
                "matrix (escape_per_pair); drop escape_per_pair"
            )
        if resolved.fitness.fails_below is None:
            return (
                f"strategy {cls.name!r} descends an objective whose sign says failure, got "
                f"fitness {resolved.fitness.name!r}; use fitness margin or targeted"
            )
        return None

    def attach(self, resolved: Any, labels: torch.Tensor) -> None:
        self.module = resolved.classifier.module
        self.device = resolved.classifier.device
        self.objective = resolved.fitness
        self.batch = resolved.config.batch_size or GRADIENT_BATCH
        self.labels = labels.clone()
        target = resolved.config.target
        self.targets = None if target is None else torch.full_like(self.labels, int(target))

    def gradient_sign(self, x: torch.Tensor) -> torch.Tensor:
        """sign of d objective / d image at x (S, M, D), per image: (S, M, D)."""
        s, m = x.shape[:2]
        flat = x.reshape(s * m, *self.space.latent_shape)
        y = self.labels.to(self.device).repeat_interleave(m)
        t = None if self.targets is None else self.targets.to(self.device).repeat_interleave(m)
        out = []
        # The campaign runs in inference mode; the gradient needs autograd, and tensors
        # made outside it (the clones).
        with torch.inference_mode(False), torch.enable_grad():
            for i in range(0, len(flat), self.batch):
                xb = flat[i : i + self.batch].clone().to(self.device).requires_grad_(True)
                yb = y[i : i + self.batch].clone().to(self.device)
                tb = None if t is None else t[i : i + self.batch].clone().to(self.device)
                logits = self.module(xb).float()
                loss = self.objective(logits, Context(expected=yb, target=tb)).sum()
                (g,) = torch.autograd.grad(loss, xb)
                out.append(g.sign().to(x.device))
        return torch.cat(out).reshape(s, m, -1)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """x (S, M, D) into the epsilon ball around each seed, within [0, 1]."""
        eps = self.params.epsilon
        lo = (self.seed - eps).clamp(min=0.0)[:, None, :]
        hi = (self.seed + eps).clamp(max=1.0)[:, None, :]
        return torch.maximum(torch.minimum(x, hi), lo)

    def fresh(self, pop: torch.Tensor) -> None:
        self.pop = pop
        self.scores = torch.full(pop.shape[:2], float("nan"))  # on the CPU, as tell writes
        self.logits = None
        self.slots = torch.arange(pop.shape[1])

    def state(self) -> SearchState:
        return SearchState(torch.full((self.seed.shape[0],), self.params.epsilon))


def epsilon_field() -> Any:
    return Field(
        0.1, gt=0, le=1, description="L-infinity radius around the seed image, in pixel values"
    )


class FGSMParams(StrategyParams):
    epsilon: float = epsilon_field()
    epsilons: int = Field(
        1,
        ge=1,
        le=100_000,
        description="images along the gradient sign, at epsilon x k / epsilons (1: FGSM's "
        "single step); an equal-budget study raises it",
    )
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")

    @property
    def generations(self) -> int:
        return 2  # the seed, then the images along its gradient sign


@STRATEGIES.register("fgsm")
class FGSM(GradientAttack):
    """FGSM in pixel space: the objective's gradient sign at the seed, then images along it
    at epsilon x k / n, k = 1..n (n = 1: the single step)."""

    name = "fgsm"
    Params = FGSMParams

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        return 1 + params.epsilons

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        # The seed, then as many images along the sign as the budget leaves: exactly it.
        return {**raw, "epsilons": max(1, evaluations - 1), "evaluations": evaluations}

    def held_per_seed(self, image_values: int) -> tuple[int, int]:
        return self.params.epsilons, image_values

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        self.seed = seeds.reshape(seeds.shape[0], -1).float()
        self.fresh(self.seed[:, None, :].clone())

    def advance(self, rng: torch.Generator) -> None:
        n = self.params.epsilons
        sign = self.gradient_sign(self.seed[:, None, :])  # (S, 1, D)
        k = torch.arange(1, n + 1, dtype=torch.float32, device=sign.device) * (
            self.params.epsilon / n
        )
        self.fresh((self.seed[:, None, :] - k[None, :, None] * sign).clamp(0.0, 1.0))


class PGDParams(StrategyParams):
    epsilon: float = epsilon_field()
    steps: int = Field(40, ge=1, le=100_000, description="gradient steps per restart")
    step_size: float | None = Field(
        None,
        gt=0,
        le=1,
        description="each step's size in pixel values; default 2.5 x epsilon / steps "
        "(Madry et al.)",
    )
    restarts: int = Field(
        1,
        ge=1,
        le=10_000,
        description="runs per seed from random starts; an equal-budget study raises it",
    )
    random_start: bool = Field(
        True, description="start from a uniform draw in the epsilon ball, not the seed"
    )
    stop_at_failure: bool = Field(True, description="stop a seed at its first failure")

    @model_validator(mode="after")
    def _check(self) -> PGDParams:
        if self.restarts > 1 and not self.random_start:
            raise ValueError(
                f"restarts={self.restarts} without random_start run the same steps "
                f"{self.restarts} times; set random_start true, or restarts 1"
            )
        return self

    @property
    def generations(self) -> int:
        return self.steps + 1  # the starts, then one per step

    @property
    def alpha(self) -> float:
        return self.step_size if self.step_size is not None else 2.5 * self.epsilon / self.steps


@STRATEGIES.register("pgd")
class PGD(GradientAttack):
    """PGD in pixel space: sign steps of the objective from random starts in the epsilon
    ball around the seed, each projected back onto the ball and [0, 1]."""

    name = "pgd"
    Params = PGDParams

    @classmethod
    def budget(cls, params: StrategyParams) -> int:
        return params.restarts * params.generations

    @classmethod
    def with_budget(cls, evaluations: int, raw: dict[str, Any]) -> dict[str, Any]:
        # The steps stay (the attack's strength); restarts fill the budget, as robustness
        # evaluations spend more compute: the fewest that reach it, the last step's
        # restarts cut short to it (BUDGET_RULE).
        p = cls.Params(**raw)
        restarts = max(1, -(-evaluations // p.generations))
        return {**raw, "restarts": restarts, "evaluations": evaluations}

    def held_per_seed(self, image_values: int) -> tuple[int, int]:
        return self.params.restarts, image_values

    def start(self, seeds: torch.Tensor, rng: torch.Generator) -> None:
        p = self.params
        self.seed = seeds.reshape(seeds.shape[0], -1).float()
        s, d = self.seed.shape
        x = self.seed[:, None, :].expand(s, p.restarts, d).clone()
        if p.random_start:
            noise = torch.rand((s, p.restarts, d), generator=rng).to(x.device)
            x += (noise * 2 - 1) * p.epsilon
        self.fresh(self.project(x))

    def advance(self, rng: torch.Generator) -> None:
        step = self.pop - self.params.alpha * self.gradient_sign(self.pop)
        self.fresh(self.project(step))
