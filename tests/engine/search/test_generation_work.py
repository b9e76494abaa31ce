"""The GA's breeding per generation: what it copies, counted (issue 34, point 4). A change
that brings back a value-by-value copy of the latents, or a temporary of the
population's size, shows here as a count, not as a timing that load can hide."""

from __future__ import annotations

import collections
import math

import pytest
import torch
from torch.overrides import TorchFunctionMode

from engine.search.strategies import operators
from engine.search.strategies.base import SearchSpace
from engine.search.strategies.ga import GAParams, GeneticAlgorithm


class Count(TorchFunctionMode):
    """Torch calls by name; advanced indexing of a tensor of latent rows on its own."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        index = args[1] if name == "__getitem__" and len(args) > 1 else ()
        tensors = isinstance(index, tuple) and any(isinstance(i, torch.Tensor) for i in index)
        if tensors and math.prod(args[0].shape[2:]) >= 64:  # latents, not logits or scores
            name = "index latent rows"
        self.calls[name] += 1
        return func(*args, **(kwargs or {}))


def old_take(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """The reference: advanced indexing, as take was before."""
    return t[torch.arange(t.shape[0])[:, None], idx]


@pytest.mark.parametrize(
    "shape",
    [(10, 25, 400), (3, 7, 4, 8, 8), (10, 25), (10, 25, 10), (0, 25, 400), (4, 25, 100)],
)
def test_take_copies_exactly_what_indexing_does(shape):
    g = torch.Generator().manual_seed(0)
    t = torch.randn(shape, generator=g)
    idx = torch.randint(0, shape[1], (shape[0], 15), generator=g)
    assert torch.equal(operators.take(t, idx), old_take(t, idx))
    nc = t.transpose(0, 1).contiguous().transpose(0, 1)  # not contiguous: the same values
    assert torch.equal(operators.take(nc, idx), old_take(t, idx))


def test_a_ga_generation_copies_latent_rows_whole():
    space = SearchSpace((400,), -5.0, 5.0, 10)
    ga = GeneticAlgorithm(GAParams(perturbation="high"), space)
    g = torch.Generator().manual_seed(0)
    ga.start(torch.randn(10, 400, generator=g), g)
    ga.tell(ga.slots, torch.randn(10, 25, generator=g), torch.randn(10, 25, 10, generator=g))
    with torch.inference_mode(), Count() as n:
        ga.advance(g)
    # The elites, then each child's two parents: three whole-row copies, none by value.
    assert n.calls["index_select"] == 3 and n.calls["index latent rows"] == 0


def test_mutation_adds_the_children_to_its_own_noise():
    g = torch.Generator().manual_seed(0)
    kids, seed = torch.randn(10, 15, 400, generator=g), torch.randn(10, 400, generator=g)
    kids[:, :, :100] = seed[:, None, :100]  # genes equal to the seed's do not move
    want = kids + torch.randn(kids.shape, generator=torch.Generator().manual_seed(1)).mul_(
        torch.full((10, 1, 1), 0.5)
    ).mul_(kids != seed[:, None, :])
    with Count() as n:
        got = operators.mutate(kids, seed, torch.full((10,), 0.5), torch.Generator().manual_seed(1))
    assert torch.equal(got, want)  # the same bits: addition commutes
    # In place into the noise: no tensor of the population's size for the sum.
    assert n.calls["add_"] == 1 and n.calls["add"] == n.calls["__add__"] == 0
