"""Fitness functions and failure criteria: small composable objects with one call shape.

Fitness: logits (N, K), expected labels (N,) -> scores (N,), minimised.
Criterion: logits (N, K), expected labels (N,) -> bool (N,), True where the input fails.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from engine.registry import Registry


class Fitness(ABC):
    name: str

    @abstractmethod
    def __call__(self, logits: torch.Tensor, expected: torch.Tensor) -> torch.Tensor: ...


class Criterion(ABC):
    name: str

    @abstractmethod
    def __call__(self, logits: torch.Tensor, expected: torch.Tensor) -> torch.Tensor: ...


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

    def __call__(self, logits: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        return margin(logits, expected)


@CRITERIA.register("misclassified")
class Misclassified(Criterion):
    """The classifier's top class is not the expected one."""

    name = "misclassified"

    def __call__(self, logits: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        return logits.argmax(1) != expected


def top2(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-2 softmax probabilities (N, 2) and their labels (N, 2)."""
    p, idx = torch.softmax(logits.float(), 1).topk(2, dim=1)
    return p, idx
