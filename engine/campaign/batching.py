"""Adaptive batching: the decode+classify batch size that runs fastest on this machine.

Large batches are not free: on a 2-core CPU a 100-seed campaign ran twice as fast with
batches of 256 as with 2,048 (cache-sized working sets), while a GPU wants large ones. So
unless the config (``batch_size``) or ``$LATENTFUZZ_BATCH_SIZE`` names a size, the engine
sweeps a few sizes at start-up, within about 0.8 s, and keeps the fastest. The result is
cached in ``<home>/cache/batch_sizes.json`` per model pair, generator options, device and
machine (torch threads and OpenMP's wait policy included), so only the first campaign of a
pair pays for the sweep; an entry is measured again after ``MAX_AGE_S`` (30 days).

Load cannot poison the cache. On a CPU, other processes' use of this process's cores is
counted (engine/campaign/cpu_load.py) over the start-up before a sweep and over the
sweep: a sweep made beside a neighbour once picked batches of 32 where 256 ran 1.5 times
as fast, and kept them. A loaded machine does not sweep; a sweep that load reached
midway is kept under its own key, marked ``loaded``, for information only. Either way a
cached quiet answer is used where there is one, else ``DEFAULT``.

A campaign whose steps all fit in one batch of ``SMALL_STEP`` does not sweep (a sweep
could only split them). What a campaign runs with is not the curve's fastest size
itself but the cap fitted to its own step sizes (engine/campaign/evaluator.py `fit`).

Memory cap: the sizes tried are bounded by ``batch_memory_mb`` (config, 1,024 MiB by
default) divided by an upper bound of one image's working memory: the sum of every layer's
output bytes, counted with forward hooks on a batch of 2 (inference frees most of them
at once, so the real peak is lower). Models without visible layers (TorchScript) are
bounded by 64 times their input and output bytes instead.

The sweep decodes latents drawn from its own fixed generator, never from the campaign's:
a campaign's search does not depend on whether a sweep ran.

A sweep that its budget stopped while throughput still rose (a slow model: the DM on a
CPU gets through 16 to 64 in 0.8 s, and runs 4% faster at 256) is marked `rising` in the
cache, and each later campaign of the pair measures one size more (`extend`) within the
same budget, until throughput falls or the next step no longer fits.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from engine.campaign import cpu_load
from engine.campaign.evaluator import fit, step_counts
from engine.classifiers import inference
from store import interrupts

ENV_VAR = "LATENTFUZZ_BATCH_SIZE"
CANDIDATES = (16, 32, 64, 128, 256, 512, 1024, 2048)
BUDGET_S = 0.8
CACHE = "cache/batch_sizes.json"
MAX_AGE_S = 30 * 86400
#: The batch cap when no quiet sweep says better (a loaded machine, a small campaign).
#: Quiet, on this 2-core CPU with the bundled VAE, 256 ran at 96% of the best size (512);
#: the 32 that a loaded sweep once picked, at 64%. It is no smaller than any campaign
#: step a sweep is skipped for (`SMALL_STEP`).
DEFAULT = 256
#: A campaign none of whose steps evaluates more candidates than this runs each step as
#: one batch without a sweep: the sweep could only keep 16 and split a step of 17 to 32
#: into two halves, and a batch of 16 ran at 76% of 32's rate here (quiet).
SMALL_STEP = 2 * 16
#: The suffix of a loaded sweep's cache key: kept for information, never an answer.
LOADED = "/loaded"


def stale(entry: dict, now: float) -> bool:
    """Whether a cached sweep should be made again: too old."""
    return now - entry.get("measured_at", now) > MAX_AGE_S


@dataclass
class BatchChoice:
    """The batch size in force and where it came from: config, env, cache, sweep,
    extended (the cache's sweep, one size further: `extend`), small (no step needs more
    than one batch: no sweep) or loaded (the machine was busy and no quiet sweep is
    cached: `DEFAULT`; `evals_per_s` holds the loaded sweep if one ran)."""

    batch_size: int
    source: str
    #: Measured raw evaluations per second by batch size (a sweep or its cache).
    evals_per_s: dict[int, float] = field(default_factory=dict)
    #: Largest batch the memory cap allows.
    max_batch: int | None = None
    sweep_seconds: float = 0.0


def machine_key() -> str:
    """What makes timings comparable: host, CPU model and count, torch threads (intra- and
    inter-op), OpenMP's wait policy (spinning workers starve a neighbour's, and their own
    on a shared core), torch."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if cpu is None:  # only then: on Linux platform.processor() forks `uname -p` each run
        cpu = platform.processor()
    return "|".join(
        map(
            str,
            (
                platform.node(),
                cpu,
                os.cpu_count(),
                torch.get_num_threads(),
                torch.get_num_interop_threads(),
                os.environ.get("OMP_WAIT_POLICY", "").upper(),
                torch.__version__,
            ),
        )
    )


def cache_key(model_hashes: list[str], options: dict, device: str) -> str:
    raw = json.dumps(
        [sorted(model_hashes), options, device, machine_key(), inference.PATH], sort_keys=True
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def item_bytes(fn: Callable[[int], object], modules: list[object], io_bytes: int) -> int:
    """Upper bound of one item's working memory: every leaf layer's output bytes for a
    batch of 2, halved; `fn(n)` runs the models on n items."""
    seen = [0]

    def hook(_m, _i, out) -> None:
        if isinstance(out, torch.Tensor):
            seen[0] += out.numel() * out.element_size()

    handles = []
    for m in modules:
        if isinstance(m, nn.Module) and not isinstance(m, torch.jit.ScriptModule):
            # Scripted parts (a user's TorchScript decoder) take no hooks: not counted.
            leaves = [x for x in m.modules() if not list(x.children())]
            handles += [
                x.register_forward_hook(hook)
                for x in leaves
                if not isinstance(x, torch.jit.ScriptModule)
            ]
    try:
        with inference.eager_only():  # hooks do not fire inside an optimised graph
            fn(2)
    finally:
        for h in handles:
            h.remove()
    return max(seen[0] // 2, 64 * io_bytes) if seen[0] else 64 * io_bytes


def sweep(
    fn: Callable[[int], object],
    max_batch: int,
    budget_s: float = BUDGET_S,
    candidates: tuple[int, ...] = CANDIDATES,
    clock: Callable[[], float] = time.perf_counter,
    reps: int = 2,
    stop_past_peak: bool = True,
    min_sizes: int = 3,
    refine: bool = True,
) -> dict[int, float]:
    """Items per second of `fn(n)` (runs the models on n items) for candidate sizes up to
    `max_batch`, smallest first, within about `budget_s`: a size whose predicted time (at
    the best per-item time so far) no longer fits is not tried, and (`stop_past_peak`)
    the sweep stops once two sizes in a row were slower than the best (throughput rises,
    then falls). The first `min_sizes` sizes are tried without prediction while the sweep
    is under 4x the budget: on a busy machine a call's fixed cost can dwarf its per-item
    cost, and one slow first measurement must not decide alone, since the choice is
    cached. Empty when a size is predicted to take over 10x the budget (a diffusion model
    on a CPU, where the batch size matters little).

    Then (`refine`) the best size and its two neighbours are measured again, in turns
    while the budget lasts, each keeping its fastest run. A shared machine's speed drifts
    by a third within seconds, and one pass measures each size in a different moment: a
    lucky moment once made a 2-core sweep keep 16, at 70% of the throughput of 128, and
    cache it."""
    start = clock()
    fn(2)  # first-call overheads (allocations, kernel choice) out of the timings
    t = clock()
    fn(2)  # a first per-item estimate, without them
    per_item = (clock() - t) / 2
    sizes = [b for b in candidates if b <= max_batch] or [max(1, max_batch)]
    out: dict[int, float] = {}
    worse = 0
    for b in sizes:
        spent, cost = clock() - start, reps * per_item * b
        if cost > 10 * budget_s:
            break  # hopeless at any size: a model too slow for a sweep
        if len(out) >= min_sizes and cost > budget_s - spent:
            break
        if spent > 4 * budget_s:
            break  # a busy machine: what was measured decides
        interrupts.checkpoint()  # a Ctrl-C deferred by the start-up stops the sweep here
        best_t = float("inf")
        for _ in range(reps):  # the fastest run: less noise from a shared machine
            t = clock()
            fn(b)
            best_t = min(best_t, clock() - t)
        out[b] = b / max(best_t, 1e-9)
        per_item = min(per_item, best_t / b)
        # Past the peak: two sizes in a row clearly slower than the best (10% is above
        # the noise of a best-of-two on a shared machine).
        worse = worse + 1 if out[b] < 0.9 * max(out.values()) else 0
        if stop_past_peak and worse >= 2:
            break
    while refine and out:
        # The best size and its neighbours, chosen anew each turn: throughput rises then
        # falls with the size, so a neighbour that was unlucky climbs past a lucky best.
        tried = list(out)
        i = tried.index(max(out, key=out.get))
        turn = tried[max(0, i - 1) : i + 2]
        if clock() - start + sum(b / out[b] for b in turn) > budget_s:
            break
        interrupts.checkpoint()
        for b in turn:
            t = clock()
            fn(b)
            out[b] = max(out[b], b / max(clock() - t, 1e-9))
    return out


def still_rising(eps: dict[int, float], max_batch: int, candidates=CANDIDATES) -> bool:
    """Whether a sweep stopped (on its budget) while throughput still rose: its best size
    is the largest it tried, and larger ones fit under the memory cap."""
    return (
        bool(eps)
        and max(eps, key=eps.get) == max(eps)
        and any(max(eps) < b <= max_batch for b in candidates)
    )


def extend(
    fn: Callable[[int], object],
    eps: dict[int, float],
    max_batch: int,
    budget_s: float = BUDGET_S,
    clock: Callable[[], float] = time.perf_counter,
    candidates: tuple[int, ...] = CANDIDATES,
) -> bool:
    """One more step of a sweep that stopped still rising (`still_rising`): the next size
    up and the best so far, each run twice in turns in this moment (their earlier figures
    came from another), updating `eps` in place, when the four runs fit in the budget. A
    slow model (a diffusion model on a CPU) cannot climb past its first few sizes in one
    start-up's budget; each campaign of the pair climbs one size more until throughput
    falls. Returns whether the next campaign should climb again."""
    best, top = max(eps, key=eps.get), max(eps)
    nxt = min((b for b in candidates if top < b <= max_batch), default=None)
    if nxt is None or best != top or 2 * (best + nxt) / eps[best] > budget_s:
        return False
    fresh: dict[int, float] = {}
    for b in (best, nxt, best, nxt):
        t = clock()
        fn(b)
        fresh[b] = max(fresh.get(b, 0.0), b / max(clock() - t, 1e-9))
    eps.update(fresh)
    return still_rising(eps, max_batch, candidates)


def choose(r, home: Path, cap_mb: int) -> BatchChoice:
    """The batch size for campaign `r` (engine.campaign.resolve.Resolved): config, else env,
    else the cached quiet sweep, else none for a small campaign, else a sweep, cached when
    the machine stayed quiet; a loaded machine without a quiet answer gets `DEFAULT`. What
    comes from a curve is fitted to the campaign's own step sizes (`fit`)."""
    cfg = r.config
    if cfg.batch_size is not None:
        return BatchChoice(cfg.batch_size, "config")
    if os.environ.get(ENV_VAR):
        return BatchChoice(int(os.environ[ENV_VAR]), "env")
    gen, clf = r.generator, r.classifier
    counts = step_counts(r)
    # Threads and load only matter where the models run on the CPU.
    cpu = torch.device(gen.device).type == "cpu"
    key = cache_key(list(r.model_hashes.values()), gen.options(), str(gen.device))
    path = home / CACHE
    cache = _read(path)
    c = cache.get(key)
    if c is not None and not stale(c, time.time()):
        eps = {int(k): v for k, v in c["evals_per_s"].items()}
        mb = c.get("max_batch")
        if not (c.get("rising") and eps and mb) or (cpu and busy(others_before())):
            return BatchChoice(fit(eps, counts, mb, int(c["batch_size"])), "cache", eps, mb)
        t0 = time.perf_counter()
        fn = raw_forward(gen, clf, min(mb, max(CANDIDATES)))
        before = dict(eps)
        go_on = extend(fn, eps, mb)
        best = max(eps, key=eps.get)
        source = "cache" if eps == before else "extended"  # a step too long is not taken
        choice = BatchChoice(fit(eps, counts, mb, best), source, eps, mb, time.perf_counter() - t0)
        c.update(batch_size=best, evals_per_s=eps, rising=go_on)
        _write(path, cache)
        return choice
    t0 = time.perf_counter()
    io = 4 * (math.prod(gen.latent_shape) + math.prod(gen.image_shape))
    module = getattr(clf, "module", None)
    max_batch = max(1, cap_mb * 2**20 // item_bytes(raw_forward(gen, clf, 2), [gen, module], io))
    default = min(DEFAULT, max_batch)
    if max(counts) <= min(SMALL_STEP, max_batch):
        return BatchChoice(default, "small", {}, max_batch, time.perf_counter() - t0)
    if cpu and busy(others_before()):
        return BatchChoice(default, "loaded", {}, max_batch, time.perf_counter() - t0)
    mark = cpu_load.sample()
    eps = sweep(raw_forward(gen, clf, min(max_batch, max(CANDIDATES))), max_batch)
    others = others_during(mark) if cpu else None
    # Nothing measurable within the budget: per-batch overheads are negligible next to
    # such a model's cost, so the smallest candidate (least memory) loses nothing.
    best = max(eps, key=eps.get) if eps else min(CANDIDATES[0], max_batch)
    entry = {
        "batch_size": best,
        "evals_per_s": eps,
        "max_batch": max_batch,
        "sweep_seconds": time.perf_counter() - t0,
        "measured_at": time.time(),
        "others_cores": None if others is None else round(others, 2),
        "rising": still_rising(eps, max_batch),
    }
    if cpu and busy(others):
        # Kept for information under its own key, never read as an answer.
        cache[key + LOADED] = {**entry, "loaded": True}
        _write(path, cache)
        return BatchChoice(default, "loaded", eps, max_batch, time.perf_counter() - t0)
    cache[key] = entry
    _write(path, cache)
    return BatchChoice(
        fit(eps, counts, max_batch, best), "sweep", eps, max_batch, entry["sweep_seconds"]
    )


def busy(others: float | None) -> bool:
    """Whether other processes' use of the cores (`others`) leaves this process's torch
    threads fewer cores than they need (engine/campaign/cpu_load.py)."""
    return cpu_load.loaded(others, threads())


def threads() -> int:
    return torch.get_num_threads()


def others_before() -> float | None:
    """Cores other processes used just before a measurement (cpu_load.recent)."""
    return cpu_load.recent(threads())


def others_during(mark: cpu_load.Sample) -> float | None:
    """Cores other processes used since `mark` (a sweep's start)."""
    return cpu_load.others(mark, cpu_load.sample(), threads())


def batch_record(c: BatchChoice) -> dict:
    """What the campaign row's environment keeps of the choice."""
    return {
        "batch_size": c.batch_size,
        "source": c.source,
        "max_batch": c.max_batch,
        "evals_per_s": {str(k): round(v, 1) for k, v in c.evals_per_s.items()},
        "sweep_seconds": round(c.sweep_seconds, 3),
    }


def raw_forward(gen, clf, n_max: int) -> Callable[[int], object]:
    """n <= n_max -> the bare decode+classify of n latents drawn once from a fixed
    generator (seeded 0); the logits come back to the CPU, which also waits for a GPU."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn((n_max, *gen.latent_shape), generator=g).to(gen.device)
    y = torch.zeros(n_max, dtype=torch.long, device=gen.device)

    def fn(n: int) -> object:
        with torch.inference_mode():
            x = gen._decode(z[:n], y[:n] if gen.conditional else None)
            return clf._logits(x).cpu()

    fn(1)  # builds the classifier's graph (engine/classifiers/inference.py) before any clock
    return fn


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: measure again


def _write(path: Path, cache: dict) -> None:
    # Written whole and renamed: two campaigns starting at once never leave half a file.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the choice holds for this campaign only
