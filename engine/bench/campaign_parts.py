"""Where one campaign's time goes: its model calls, the same calls run back to back, and
the loop's other parts, timed in one process.

    .venv/bin/python engine/bench/campaign_parts.py --generator vae --seeds 10 --per-size

The campaign runs twice (the first warms imports and caches, the second is reported),
with the batch size a campaign chooses (engine/campaign/batching.py: the first run
measures it, the second reads the cache, as a user's second campaign) unless
--batch-size names one.
Each part is the wall time inside the named function, summed over its calls; parts nest
(the model calls are inside "evaluate a generation"). "Bare" runs every model call of the
campaign again at the same batch sizes, back to back with warm kernels: the difference is
what running the models inside the loop costs them (cold caches between calls, and the
first call at each new batch size building its kernels). "Loop efficiency" is the bare
calls' time over the loop's: the share of the shape bound (engine/bench/scale.py: the raw
throughput at the campaign's own batch sizes) that the loop reaches; `--profile N` prints
the N functions of most time of their own (cProfile) in the reported run.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import os
import pstats
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from engine.campaign import loop as search_loop
from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from engine.classifiers.base import ModuleClassifier
from engine.core.malloc import keep_freed_memory
from engine.generators.base import Generator
from engine.search.strategies.base import PopulationStrategy
from engine.search.strategies.ga import GeneticAlgorithm

totals: collections.Counter = collections.Counter()
calls: collections.Counter = collections.Counter()
model_calls: list[tuple[str, int]] = []
call_seconds: list[float] = []  # beside model_calls, call by call
#: Parts are counted inside the campaign loop only (the test-set reference before it
#: classifies too).
active = [False]


def timed(owner: type, name: str, label: str, sizes: str | None = None) -> None:
    f = getattr(owner, name)

    @functools.wraps(f)
    def wrapper(self, x=None, *a, **k):
        outer = label == "campaign loop"
        if not (active[0] or outer):
            return f(self, x, *a, **k)
        active[0] = True
        t = time.perf_counter()
        try:
            return f(self, x, *a, **k)
        finally:
            active[0] = not outer
            spent = time.perf_counter() - t
            totals[label] += spent
            calls[label] += 1
            if sizes:
                model_calls.append((sizes, int(x.shape[0])))
                call_seconds.append(spent)

    setattr(owner, name, wrapper)


def bare_seconds(
    raw: dict, counts: list[tuple[str, int]], per_call: dict | None = None
) -> dict[str, float]:
    """The campaign's model calls again at the same sizes, each size's calls back to back;
    `per_call` gets each (model, size)'s median call."""
    r = resolve(parse_config({**raw, "seeds": 1}))
    gen, clf = r.generator, r.classifier
    n_max = max(n for _, n in counts)
    g = torch.Generator().manual_seed(0)
    z = torch.randn((n_max, *gen.latent_shape), generator=g)
    y = torch.zeros(n_max, dtype=torch.long)
    out = collections.Counter()
    with torch.inference_mode():
        x = gen.decode(z, y if gen.conditional else None)
        for (what, n), k in collections.Counter(counts).items():
            fn = (
                (lambda n=n: clf.logits(x[:n], finite_input=True))
                if what == "classify"
                else (lambda n=n: gen.decode(z[:n], y[:n] if gen.conditional else None))
            )
            fn(), fn()  # warm: this size's kernels are built
            times = []
            for _ in range(max(k, 3)):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            out[what] += sum(times[:k])
            if per_call is not None:
                per_call[what, n] = statistics.median(times)
    return out


def per_size(counts: list[tuple[str, int]], seconds: list[float], bare: dict) -> None:
    """Each (model, size) called more than once: its median call in the loop against the
    same call back to back, and what the difference adds up to over its calls."""
    by = collections.defaultdict(list)
    for key, s in zip(counts, seconds, strict=True):
        by[key].append(s)
    print(f"{'model, size':16s} {'calls':>5s} {'loop ms':>8s} {'bare ms':>8s} {'ratio':>6s}")
    extra = 0.0
    for (what, n), ts in sorted(by.items()):
        loop, b = statistics.median(ts), bare[what, n]
        extra += (loop - b) * len(ts)
        if len(ts) > 1:
            print(
                f"{what + ' ' + str(n):16s} {len(ts):5d} {loop * 1e3:8.3f} {b * 1e3:8.3f} "
                f"{loop / b:6.2f}"
            )
    print(f"median calls in the loop above back to back, summed over all calls: {extra:.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator", default="vae")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--generations", type=int, default=250)
    ap.add_argument("--batch-size", type=int, default=None, help="default: the engine's choice")
    ap.add_argument("--perturbation", default="high")
    ap.add_argument(
        "--per-size",
        action="store_true",
        help="each batch size's median call in the loop and back to back",
    )
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile's top N")
    a = ap.parse_args()
    os.environ.pop("LATENTFUZZ_BATCH_SIZE", None)  # the engine's own choice, or --batch-size
    torch.set_num_threads(2)
    keep_freed_memory()  # the allocator campaigns run with
    timed(search_loop.Campaign, "run", "campaign loop")
    timed(search_loop.Campaign, "evaluate_generation", "evaluate a generation")
    timed(Generator, "decode", "decode (model call)", sizes="decode")
    timed(ModuleClassifier, "logits", "classify (model call)", sizes="classify")
    timed(PopulationStrategy, "tell", "strategy: tell")
    timed(search_loop.Campaign, "record", "record a generation")
    timed(search_loop.Campaign, "finish_seeds", "close finished seeds")

    timed(GeneticAlgorithm, "advance", "GA: breed the next generation")
    params = {"perturbation": a.perturbation, "generations": a.generations}
    raw = {
        "generator": a.generator,
        "seeds": a.seeds,
        "seed": 1,
        "batch_size": a.batch_size,
        "strategy_params": params,
    }
    prof = cProfile.Profile()
    with tempfile.TemporaryDirectory() as home:
        for turn in range(2):
            totals.clear(), calls.clear(), model_calls.clear(), call_seconds.clear()
            shutil.rmtree(Path(home) / "h" / "campaigns", ignore_errors=True)
            (Path(home) / "h" / "latentfuzz.duckdb").unlink(missing_ok=True)
            if turn and a.profile:
                prof.enable()
            res = run_campaign(parse_config(raw), Path(home) / "h")
            prof.disable()
    batch = res.batch_sizes and max(res.batch_sizes)
    counts = list(model_calls)
    medians: dict = {}
    bare = bare_seconds(raw, counts, medians)
    loop = totals["campaign loop"]
    print(
        f"{a.generator}, {a.seeds} seeds, batch {a.batch_size or 'chosen'} (largest run "
        f"{batch}): {sum(n for w, n in counts if w == 'classify'):,} evaluations, load "
        f"average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'part':34s} {'seconds':>8s} {'share':>6s} {'calls':>6s}")
    for label, s in totals.most_common():
        print(f"{label:34s} {s:8.3f} {s / loop:6.1%} {calls[label]:6d}")
    model = totals["decode (model call)"] + totals["classify (model call)"]
    both = bare["decode"] + bare["classify"]
    print(f"{'model calls, bare (same sizes)':34s} {both:8.3f} {both / loop:6.1%}")
    per_generation = (loop - model) * 1e3 / max(1, calls["record a generation"])
    print(
        f"model calls in the loop / bare: {model / both:.3f}; "
        f"loop outside the model calls: {per_generation:.2f} ms a generation; "
        f"loop efficiency (bare calls / loop): {both / loop:.3f}"
    )
    print(
        f"campaign wall (row): {res.wall_seconds:.3f} s, of which outside the loop "
        f"{res.wall_seconds - loop:.3f} s (set-up before the first generation, closing)"
    )
    extra, once = first_calls(counts, call_seconds)
    print(
        f"first call at each new batch size: {extra * 1e3:.0f} ms above that size's median "
        f"call ({once} sizes called once, not counted)"
    )
    if a.per_size:
        per_size(counts, call_seconds, medians)
    if a.profile:
        pstats.Stats(prof).sort_stats("tottime").print_stats(a.profile)


def first_calls(counts: list[tuple[str, int]], seconds: list[float]) -> tuple[float, int]:
    """(seconds the first call of each (model, size) took above that size's median call,
    number of sizes called only once): what building each new size's kernels cost."""
    by = collections.defaultdict(list)
    for key, s in zip(counts, seconds, strict=True):
        by[key].append(s)
    extra = sum(ts[0] - statistics.median(ts) for ts in by.values() if len(ts) > 1)
    return extra, sum(len(ts) == 1 for ts in by.values())


if __name__ == "__main__":
    main()
