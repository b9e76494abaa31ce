"""The GIFTbench-style loop does the search it claims: 25 evaluations per seed-generation
with elites re-evaluated, seeds one after another, a stop at the first failure; and
`latentfuzz bench giftbench` compares it with `latentfuzz run` in pairs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.bench import giftbench_loop as gl
from tests.helpers import CLI

D, K = 8, 10


class Fake:
    """decode+classify stand-in: class 0's logit is 1 + the latent's first gene (more
    negative is fitter), every other class 0; calls listed in `fail_at` make row 0 fail."""

    def __init__(self, fail_at: tuple[int, ...] = ()):
        self.calls: list[np.ndarray] = []
        self.fail_at = fail_at

    def __call__(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        self.calls.append(z.copy())
        logits = np.zeros((len(z), K))
        logits[np.arange(len(z)), y] = 1.0 + z[:, 0]
        if len(self.calls) in self.fail_at:
            logits[0, (y[0] + 1) % K] = 10.0
        return logits


def run(fake: Fake, seeds: int = 3, generations: int = 4, variant=gl.GIFTBENCH):
    z = np.zeros((seeds, D), dtype=np.float32)
    return gl.run_loop(z, np.zeros(seeds, dtype=int), fake, generations, -1.0, 1.0, variant)


def test_every_seed_generation_evaluates_the_whole_population_of_25():
    fake = Fake()
    r = run(fake)
    # Seeds one after another, a batch of 25 each generation, elites included.
    assert r.batches == [25] * 12
    assert r.evaluations == [100, 100, 100] and r.iterations == [4, 4, 4]
    assert r.seed_generations == 12 and r.failed == [False] * 3


def test_the_elites_evaluated_again_are_the_previous_generations_best():
    fake = Fake()
    run(fake, seeds=1, generations=3)
    for before, after in zip(fake.calls, fake.calls[1:], strict=False):
        fitness = 1.0 + before[:, 0]  # the fake's margin: class 0's logit over 0
        elites = before[np.argsort(fitness, kind="stable")[: gl.ELITES]]
        np.testing.assert_array_equal(after[: gl.ELITES], elites)
        # Children differ from their parents only where mutated, within the bounds.
        assert (np.abs(after) <= 1.0).all()


def test_the_variants_evaluate_children_only_and_batch_all_seeds():
    children = Fake()
    run(children, variant=gl.Variant(reevaluate=False))
    assert [len(c) for c in children.calls] == [25, 15, 15, 15] * 3
    batched = Fake()
    r = run(batched, variant=gl.Variant(reevaluate=False, per_seed=False))
    assert r.batches == [75, 45, 45, 45] and r.iterations == [4, 4, 4]


def test_a_seed_stops_at_its_first_failure():
    # The second seed's second generation is call 6 (seed 0 runs calls 1-4).
    r = run(Fake(fail_at=(6,)))
    assert r.iterations == [4, 2, 4] and r.failed == [False, True, False]
    assert r.evaluations == [100, 50, 100] and len(r.batches) == 10
    batched = run(Fake(fail_at=(2,)), variant=gl.Variant(per_seed=False))
    # Row 0 of an all-seeds batch is the first seed's: it stops, the others go on.
    assert batched.iterations == [2, 4, 4] and batched.batches == [75, 75, 50, 50]


def test_the_initial_spread_and_step_are_the_high_presets():
    fake = Fake()
    run(fake, seeds=1, generations=1)
    spread = fake.calls[0].std()
    # 2 x 1e-3 of the latent range (2): 0.004; 200 draws put the estimate within 30%.
    assert 0.7 * 0.004 < spread < 1.3 * 0.004


def test_the_fitness_is_the_expected_class_margin_per_individual():
    logits = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    np.testing.assert_allclose(gl.fitness(logits, 0), [1.0, -5.0])


def test_bench_giftbench_compares_pairs_on_latentfuzzs_models(tmp_path: Path):
    from engine.bench.giftbench import compare

    r = compare(3, 2, 1, "cpu", True, tmp_path)
    assert set(r["runs"]) == {"latentfuzz", *(v.name for v in gl.BREAKDOWN)}
    lf, loop = r["runs"]["latentfuzz"][0], r["runs"][gl.GIFTBENCH.name][0]
    # The same viable seeds on both sides, each searched for at most 2 generations.
    assert lf["viable"] == r["viable"] > 0
    assert 0 < loop["seed_generations"] <= 2 * r["viable"]
    assert 0 < lf["seed_generations"] <= 2 * r["viable"]
    assert lf["rate"] > 0 and loop["rate"] > 0
    # Elites re-evaluated: 25 evaluations per seed-generation.
    assert loop["evaluations"] == 25 * loop["seed_generations"]
    # Three steps from GIFTbench's way to all seeds batched, then latentfuzz's own.
    assert len(r["factors"]) == 4 and all(f > 0 for _, f in r["factors"])
    assert r["lead"] == pytest.approx(lf["rate"] / loop["rate"])
    # In each pair the steps' ratios multiply to the whole lead: so do their means.
    assert np.prod([f for _, f in r["factors"]]) == pytest.approx(r["lead"])


def test_bench_giftbench_refuses_bad_sizes_in_one_line(env: dict):
    p = subprocess.run(
        [*CLI, "bench", "giftbench", "--seeds", "ten"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "error: --seeds 'ten': expected comma-separated positive counts, e.g. 10,100"
    ]
