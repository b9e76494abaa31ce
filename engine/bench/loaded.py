"""`latentfuzz bench --neighbour N`: the size measurement quiet and beside N busy processes
(engine/bench/neighbour.py), side by side in one run.

The loaded half runs in a home of its own, so its campaigns choose their batch size under
load, as a user's on a busy machine do, instead of reusing the quiet half's cached choice.
The ratio loaded / quiet of campaign evaluations per second is the figure the issue's
acceptance names (at least 0.7 at 10 and 100 seeds), with a 1-seed, 1-generation
campaign's seconds from command to exit (under 3 s loaded).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from engine.bench import scale
from engine.bench.neighbour import child_settings, cpu_seconds, describe, neighbours

#: The acceptance's floor for loaded / quiet campaign throughput at 10 and 100 seeds.
MIN_LOADED_RATIO = 0.7


def bench_loaded(n: int, console: Console | None = None, **measure_kw) -> dict:
    """`latentfuzz bench --neighbour N`: the same measurement (engine/bench/scale.py
    `measure`) quiet, then beside `n` neighbours, each half with its own home, so the
    loaded half chooses its batch size under load as a user on a busy machine does; one
    table with both columns per size, and the loaded / quiet throughput ratio."""
    console = console or Console()
    halves = {"quiet": scale.measure(one_seed=True, **measure_kw)}
    with neighbours(n) as procs:
        halves["loaded"] = scale.measure(one_seed=True, **measure_kw)
        busy = [cpu_seconds(p.pid) for p in procs]
    q, lo = halves["quiet"], halves["loaded"]
    t = Table(
        "seeds",
        "figure",
        "quiet",
        f"beside {n} neighbour{'s' * (n != 1)}",
        "loaded / quiet",
        title=f"latentfuzz bench --neighbour {n}: {describe()}; {child_settings(q['environment'])}",
    )
    ratios = {}
    for rq, rl in zip(q["sizes"], lo["sizes"], strict=True):
        ratios[rq["seeds"]] = rl["campaign_evals_per_s"] / rq["campaign_evals_per_s"]
        for label, key, fmt in FIGURES:
            a, b = fmt(rq, key), fmt(rl, key)
            ratio = f"{ratios[rq['seeds']]:.2f}" if key == "campaign_evals_per_s" else ""
            t.add_row(str(rq["seeds"]), label, a, b, ratio)
        t.add_section()
    t.add_row(
        "1",
        "1 generation, command to exit (s)",
        f"{q['one_seed_s']:.2f}",
        f"{lo['one_seed_s']:.2f}",
        f"{lo['one_seed_s'] / q['one_seed_s']:.2f}",
    )
    console.print(t)
    console.print(
        "loaded / quiet campaign evals/s: "
        + ", ".join(f"{s} seeds {r:.3f}" for s, r in ratios.items())
        + f" (acceptance: at least {MIN_LOADED_RATIO} at 10 and 100); 1-seed, 1-generation "
        f"campaign {q['one_seed_s']:.2f} s quiet, {lo['one_seed_s']:.2f} s loaded "
        f"(acceptance: under 3 s loaded); the neighbours used "
        + ", ".join(f"{c:.1f}" for c in busy)
        + " CPU s"
    )
    return {**halves, "ratios": ratios, "neighbour_cpu_s": busy}


def _num(r: dict, key: str) -> str:
    return f"{r[key]:,.0f}"


def _limit(r: dict, key: str) -> str:
    return f"{r[key]:,.0f} (batch {r['limit_batch']})"


def _ratio(r: dict, key: str) -> str:
    return f"{r[key]:.3f}"


def _seconds(r: dict, key: str) -> str:
    return f"{r[key]:.2f}"


#: (row label, figure, format) of each size in the quiet / loaded table.
FIGURES = (
    ("campaign evals/s", "campaign_evals_per_s", _num),
    ("physical limit", "limit", _limit),
    ("efficiency", "efficiency", _ratio),
    ("shape bound", "shape_bound", _ratio),
    ("start-up (s)", "startup_s", _seconds),
    ("batch", "batch_size", lambda r, k: str(r[k])),
)
