"""Tensor operations a campaign's generation costs outside the model calls, counted.

    .venv/bin/python engine/bench/generation_ops.py --generator vae --seeds 10

Every aten operation dispatched inside the campaign loop but outside the generator's own
forward pass and the classifier's logits call is counted (a TorchDispatchMode), per
generation and by the engine line that issued it. On a CPU each costs a few microseconds
of dispatch whatever its size, so on a small campaign this count, not the arithmetic, is
the loop's cost beside the models. The loop is vectorised over seeds: the count per
generation does not grow with the number of seeds (tests/engine/campaign/test_loop.py).
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

from torch.utils._python_dispatch import TorchDispatchMode

from engine.campaign import loop as search_loop
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.classifiers.base import Classifier
from engine.generators.base import Generator


class OpCounter(TorchDispatchMode):
    """Counts aten operations outside the models' forward passes; `where` by engine line
    when `trace` is set (slow: a stack walk per operation)."""

    def __init__(self, trace: bool = False) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()
        self.where: collections.Counter = collections.Counter()
        self.trace, self.in_model = trace, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.in_model:
            self.ops[str(func)] += 1
            if self.trace:
                frames = [f for f in traceback.extract_stack(limit=10) if "/engine/" in f.filename]
                if frames:
                    f = frames[-1]
                    self.where[f"{Path(f.filename).name}:{f.lineno} {f.name}"] += 1
        return func(*args, **(kwargs or {}))


def count_ops(raw: dict, trace: bool = False) -> tuple[OpCounter, list[int]]:
    """Run the campaign `raw` in a temporary home; the counter and the operations counted
    in each generation (evaluation to breeding of the next)."""
    counter = OpCounter(trace)
    per_generation: list[int] = []
    patched: list[tuple[type, str, Callable]] = []

    def outside(owner: type, name: str) -> None:
        real = getattr(owner, name)

        def model(self, *a, **k):
            counter.in_model += 1
            try:
                return real(self, *a, **k)
            finally:
                counter.in_model -= 1

        patched.append((owner, name, real))
        setattr(owner, name, model)

    def each_generation(real: Callable) -> Callable:
        def evaluate_generation(self, *a, **k):
            per_generation.append(sum(counter.ops.values()))
            return real(self, *a, **k)

        return evaluate_generation

    outside(Generator, "_decode")
    outside(Classifier, "logits")
    real_run, real_eval = search_loop.Campaign.run, search_loop.Campaign.evaluate_generation
    search_loop.Campaign.evaluate_generation = each_generation(real_eval)

    def run(self, *a, **k):
        with counter:
            return real_run(self, *a, **k)

    search_loop.Campaign.run = run
    try:
        with tempfile.TemporaryDirectory() as home:
            run_campaign(parse_config(raw), Path(home))
    finally:
        search_loop.Campaign.run, search_loop.Campaign.evaluate_generation = real_run, real_eval
        for owner, name, real in patched:
            setattr(owner, name, real)
    marks = [*per_generation, sum(counter.ops.values())]
    return counter, [b - a for a, b in zip(marks, marks[1:], strict=False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator", default="vae")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--generations", type=int, default=250)
    ap.add_argument("--perturbation", default="high")
    ap.add_argument("--top", type=int, default=15, help="engine lines shown")
    a = ap.parse_args()
    params = {"perturbation": a.perturbation, "generations": a.generations}
    raw = {
        "generator": a.generator,
        "seeds": a.seeds,
        "seed": 1,
        "batch_size": 128,
        "strategy_params": params,
    }
    counter, per_gen = count_ops(raw, trace=True)
    total = sum(counter.ops.values())
    print(
        f"{a.generator}, {a.seeds} seeds: {len(per_gen)} generations, {total:,} operations "
        f"outside the models, {total / max(1, len(per_gen)):.0f} a generation "
        f"(median {sorted(per_gen)[len(per_gen) // 2] if per_gen else 0})"
    )
    print("most frequent operations:")
    for op, n in counter.ops.most_common(a.top):
        print(f"  {n:7d}  {op}")
    print("engine lines issuing them:")
    for line, n in counter.where.most_common(a.top):
        print(f"  {n:7d}  {line}")


if __name__ == "__main__":
    main()
