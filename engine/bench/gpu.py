"""`latentfuzz bench gpu`: the GPU check a lent machine runs in one command, in minutes.

Steps, each timed against one wall budget (8 minutes by default; a step that would start
past the budget is skipped and named as such):

1. the tests marked `cuda` (tests/cuda: VAE, GAN and DM campaigns and the tiny Stable
   Diffusion pipeline on the device), `pytest -m cuda` in a child process;
2. a VAE, GAN and DM campaign each through `latentfuzz run --device`, as a user runs it:
   evaluations/s, start-up, peak memory;
3. the campaign-against-raw efficiency at 10, 100 and 1,000 seeds
   (engine/bench/scale.py `measure`, on the device);
4. every figure to one JSON file and a markdown summary beside it.

Without CUDA it refuses in one line. `--device cpu` rehearses the same plan on the CPU
with tiny sizes, so the plan itself runs in the default test suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from engine.bench.neighbour import describe
from engine.core.errors import LatentfuzzError

#: tests/cuda's device, read by its conftest: `--device cpu` runs them on the CPU.
TEST_DEVICE_ENV = "LATENTFUZZ_CUDA_TESTS_DEVICE"
BUDGET_S = 480.0


class NoCudaError(LatentfuzzError):
    """`bench gpu` on a machine where torch sees no CUDA device."""


@dataclass(frozen=True)
class Plan:
    """Sizes of each step: the GPU's, or the CPU rehearsal's tiny ones."""

    campaign_seeds: int
    campaign_generations: int
    sizes: tuple[int, ...]
    generations: int
    large_generations: int
    limit_budget_s: float
    sustain_s: float
    min_campaign_s: float
    generators: tuple[str, ...] = ("vae", "gan", "dm")


GPU = Plan(10, 10, (10, 100, 1000), 250, 25, 20.0, 3.0, 5.0)
REHEARSAL = Plan(2, 1, (2,), 2, 1, 1.0, 0.2, 0.0, ("vae",))


def require_device(device: str) -> None:
    """Raise NoCudaError unless `device` is the CPU rehearsal or a CUDA device torch sees."""
    # Deferred (start-up time: loads torch).
    import torch

    if device == "cpu":
        return
    if not device.startswith("cuda"):
        raise NoCudaError(
            f"bench gpu --device {device}: expected cuda, cuda:N, or cpu for a rehearsal "
            "with tiny sizes"
        )
    if not torch.cuda.is_available():
        raise NoCudaError(
            f"bench gpu --device {device}: torch sees no CUDA device on this machine "
            f"(torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}); "
            "expected an NVIDIA GPU: run it on a GPU machine, or --device cpu to rehearse "
            "the plan with tiny sizes"
        )


#: The source checkout the engine runs from, whose tests/ the first step runs.
ROOT = Path(__file__).resolve().parents[2]


def pytest_step(device: str, selection: list[str]) -> dict:
    """The tests marked cuda on `device`, in a child process, from the source checkout."""
    if not (ROOT / "tests" / "cuda").is_dir():
        return {"skipped": f"no tests/cuda in {ROOT}: run it from a source checkout"}
    env = {**os.environ, TEST_DEVICE_ENV: device}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda"]
    p = subprocess.run(
        [*cmd, *selection], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]
    return {"exit_code": p.returncode, "summary": tail[0]}


def campaigns_step(plan: Plan, device: str, home: Path) -> dict:
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.scale import campaign_at

    out = {}
    for g in plan.generators:
        h = home / g
        h.mkdir()
        r = campaign_at(plan.campaign_seeds, plan.campaign_generations, g, h, "high", device)
        out[g] = {k: v for k, v in r.items() if k not in ("counts", "environment")}
        out[g]["device"] = r["environment"].get("device")
    return out


def efficiency_step(plan: Plan, device: str) -> dict:
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.bench.scale import measure

    m = measure(
        plan.sizes,
        plan.generations,
        plan.large_generations,
        "vae",
        "high",
        plan.limit_budget_s,
        device,
        plan.sustain_s,
        plan.min_campaign_s,
        max_runs=3,
    )
    return {
        "peak": {str(b): v for b, v in m["peak"].items()},
        "sizes": [
            {k: r[k] for k in ("seeds", "campaign_evals_per_s", "limit", "efficiency")}
            | {"shape_bound": r["shape_bound"], "startup_s": r["startup_s"]}
            for r in m["sizes"]
        ],
    }


def bench_gpu(
    device: str = "cuda",
    out: Path | None = None,
    budget_s: float = BUDGET_S,
    pytest_selection: tuple[str, ...] = ("tests/cuda",),
    plan: Plan | None = None,
    console: Console | None = None,
) -> Path:
    """Run the plan on `device`; returns the JSON file written (a .md beside it)."""
    require_device(device)
    console = console or Console()
    plan = plan or (REHEARSAL if device == "cpu" else GPU)
    path = Path(out) if out else Path(tempfile.gettempdir()) / "latentfuzz-bench-gpu.json"
    started = time.perf_counter()
    figures: dict = {"device": device, "settings": describe(), "plan": plan.__dict__, "steps": {}}
    with tempfile.TemporaryDirectory() as tmp:
        steps: list[tuple[str, Callable[[], dict]]] = [
            ("tests marked cuda", lambda: pytest_step(device, list(pytest_selection))),
            ("campaigns", lambda: campaigns_step(plan, device, Path(tmp))),
            ("campaign against raw", lambda: efficiency_step(plan, device)),
        ]
        for name, step in steps:
            left = budget_s - (time.perf_counter() - started)
            if left <= 0:
                figures["steps"][name] = {"skipped": f"the {budget_s:.0f} s budget was spent"}
                console.print(f"{name}: skipped, the budget is spent")
                continue
            t = time.perf_counter()
            figures["steps"][name] = result = {**step(), "seconds": time.perf_counter() - t}
            for key in ("summary", "skipped"):
                if key in result:
                    console.print(f"  {key}: {result[key]}", markup=False)
            spent = time.perf_counter() - started
            console.print(
                f"{name}: {time.perf_counter() - t:.1f} s; {spent:.0f} s of {budget_s:.0f} s "
                f"spent, {budget_s - spent:.0f} s left"
            )
    figures["seconds"] = time.perf_counter() - started
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(markdown(figures))
    console.print(f"figures written to {path} and {path.with_suffix('.md')}", markup=False)
    return path


def markdown(f: dict) -> str:
    lines = [f"# latentfuzz bench gpu: {f['device']}", "", f"{f['settings']}", ""]
    steps = f["steps"]
    for name, s in steps.items():
        head = f"## {name}"
        if "skipped" in s:
            lines += [head, "", f"skipped: {s['skipped']}", ""]
            continue
        lines += [head, "", f"{s['seconds']:.1f} s", ""]
    tests = steps.get("tests marked cuda", {})
    if "summary" in tests:
        lines += [f"pytest -m cuda: exit {tests['exit_code']}, {tests['summary']}", ""]
    camps = {k: v for k, v in steps.get("campaigns", {}).items() if isinstance(v, dict)}
    if camps:
        lines += ["| generator | evals/s | start-up (s) | peak memory (GB) |", "|---|---|---|---|"]
        for g, r in camps.items():
            lines.append(
                f"| {g} | {r['campaign_evals_per_s']:,.0f} | {r['startup_s']:.2f} | "
                f"{r['peak_memory_gb']:.2f} |"
            )
        lines.append("")
    sizes = steps.get("campaign against raw", {}).get("sizes", [])
    if sizes:
        lines += ["| seeds | evals/s | limit | efficiency | shape bound |", "|---|---|---|---|---|"]
        for r in sizes:
            lines.append(
                f"| {r['seeds']} | {r['campaign_evals_per_s']:,.0f} | {r['limit']:,.0f} | "
                f"{r['efficiency']:.3f} | {r['shape_bound']:.3f} |"
            )
    return "\n".join(lines) + "\n"
