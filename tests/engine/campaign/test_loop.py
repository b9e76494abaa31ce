"""The search loop's own helpers, on hand-made generations."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from engine.campaign.loop import Campaign, Generation
from engine.search.strategies import SearchState


def _generation(pop: torch.Tensor, slots: torch.Tensor, images: torch.Tensor) -> Generation:
    s, p = pop.shape[:2]
    z = torch.zeros(s, p)
    return Generation(
        g=1,
        slots=slots,
        images=images,
        pop=pop,
        scores=z,
        logits=z[..., None],
        logits_b=None,
        state=SearchState(z[:, 0]),
        best=z[:, 0].long(),
        best_fit=z[:, 0],
        improved=z[:, 0].bool(),
        failed=z[:, 0].bool(),
        result=z[:, 0].long(),
        done=z[:, 0].bool(),
    )


def test_images_of_takes_evaluated_slots_and_decodes_the_others():
    # 2 active seeds, population 4, slots 2 and 3 evaluated this generation. An image is
    # its latent's first gene as a 1x1 uint8 image, so every answer is checkable.
    pop = torch.arange(8, dtype=torch.float32).view(2, 4, 1) * 10  # (S, P, D=1)
    slots = torch.tensor([2, 3])
    images = pop[:, slots].to(torch.uint8).view(2, 2, 1, 1, 1)  # (S, M, C, H, W)
    decoded = []

    def evaluate(z, labels):
        decoded.append((z.clone(), labels.clone()))
        return torch.zeros(len(z), 10), z.to(torch.uint8).view(len(z), 1, 1, 1)

    c = Campaign.__new__(Campaign)
    c.evaluate, c.labels, c.active = evaluate, torch.tensor([5, 6, 7]), torch.tensor([2, 0])
    c.strategy = SimpleNamespace(space=SimpleNamespace(latent_shape=(1,)))
    gen = _generation(pop, slots, images)

    # Fresh only: straight from the evaluation, nothing decoded.
    got = c.images_of(gen, torch.tensor([1, 0]), torch.tensor([3, 2]))
    assert got.flatten().tolist() == [70, 20] and decoded == []
    # Seed row 1's slot 0 was not evaluated now: decoded with that seed's label.
    got = c.images_of(gen, torch.tensor([0, 1]), torch.tensor([3, 0]))
    assert got.flatten().tolist() == [30, 40]
    assert len(decoded) == 1
    assert decoded[0][0].flatten().tolist() == [40.0] and decoded[0][1].tolist() == [5]


def test_a_generations_bookkeeping_does_not_grow_with_the_number_of_seeds():
    # Populations are tensors over all seeds: a generation's operations outside the models
    # (objectives, records, breeding) are as many for 12 seeds as for 3. A per-seed loop of
    # tensor operations would multiply them. Counted, not timed (engine/bench/generation_ops.py).
    from engine.bench.generation_ops import count_ops

    def ops(seeds: int) -> list[int]:
        params = {"generations": 6, "population": 6, "best_left": 2, "stop_at_failure": False}
        raw = {"seeds": seeds, "seed": 1, "strategy_params": params}
        return count_ops(raw)[1]

    few, many = ops(3), ops(12)
    assert len(few) == len(many) == 6
    # The middle generations (the first has no breeding before it, the last closes seeds).
    assert few[1:-1] == many[1:-1] and len(set(few[1:-1])) == 1 and few[1] > 0
