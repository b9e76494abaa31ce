"""Benchmarks. `latentfuzz bench`: how close a campaign runs to the models' raw speed.

In a benchmark campaign every decode+classify batch is followed at once by its twin: the
same inputs through the same models' bare forward passes (no checks, no search, no store,
no images). The twin's time is kept apart and subtracted from the campaign's wall time, so

    efficiency  = raw seconds / campaign seconds   (evaluations per second, campaign / raw)
    store share = seconds the store writer was busy / elapsed seconds

Pairing each batch with its twin a few milliseconds apart makes the ratio immune to the
drift of a shared virtual machine, which moved separate whole-run timings by 10-20%.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from engine.bench.neighbour import describe
from engine.campaign.config import parse_config
from engine.campaign.evaluator import Evaluator
from engine.campaign.runner import run_in_series
from engine.core.home import resolve_home
from engine.datasets import get_dataset
from engine.models import zoo
from engine.models.measure import inference_ms, ms_per_image
from engine.search.strategies import STRATEGIES


def bench_device(device: str | None) -> str:
    """The device benchmarks run on: as given, else the GPU when torch sees one."""
    if device is not None:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


class PairedEvaluator(Evaluator):
    """The campaign's evaluator, plus a timed bare-forward twin of every batch."""

    def _evaluate(self, z: torch.Tensor, labels: torch.Tensor):
        out = super()._evaluate(z, labels)
        t = time.perf_counter()
        for i in range(0, z.shape[0], self.batch):
            x = self.gen._decode(z[i : i + self.batch], labels[i : i + self.batch])
            self.clf._logits(x)
        self.raw_seconds += time.perf_counter() - t
        return out


def bench_engine(
    seeds: int = 10,
    generations: int = 250,
    perturbation: str = "high",
    generator: str = "vae",
    repeats: int = 3,
    home: Path | None = None,
    console: Console | None = None,
    strategies: tuple[str, ...] = ("ga",),
    device: str = "cpu",
) -> dict[str, dict[str, float]]:
    """For each strategy, run `repeats` benchmark campaigns after one warm-up and report
    the median figures; {strategy: figures}."""
    console = console or Console()
    results, runs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        h = resolve_home(home) if home else Path(tmp)
        for strategy in strategies:
            results[strategy], runs[strategy] = _bench_strategy(
                strategy, seeds, generations, perturbation, generator, repeats, h, device
            )
    t = Table(
        "metric",
        *strategies,
        title=f"latentfuzz bench: {generator}, {seeds} seeds, {generations} generations, "
        f"{perturbation} (where the strategy has presets), device {device}, "
        f"{describe()}; median of {repeats} runs",
    )
    for k in results[strategies[0]]:
        t.add_row(k, *(_cell(results[s][k]) for s in strategies))
    console.print(t)
    for s in strategies:
        rows, out = runs[s], results[s]
        console.print(
            f"{s}: engine efficiency {out['efficiency']:.3f} (target >= 0.9), store share "
            f"{100 * out['store_share']:.2f}% (target <= 5%); per run: efficiency "
            + ", ".join(f"{r['efficiency']:.3f}" for r in rows)
            + "; store share "
            + ", ".join(f"{100 * r['store_share']:.2f}%" for r in rows)
        )
    return results


def _cell(v: float | int) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _bench_strategy(
    strategy: str,
    seeds: int,
    generations: int,
    perturbation: str,
    generator: str,
    repeats: int,
    h: Path,
    device: str = "cpu",
) -> tuple[dict[str, float], list[dict[str, float]]]:

    params: dict[str, object] = {"generations": generations}
    if STRATEGIES.get(strategy).has_presets:
        params["perturbation"] = perturbation
    cfg = parse_config(
        {
            "seeds": seeds,
            "generator": generator,
            "seed": 1,
            "device": device,
            "strategy": strategy,
            "strategy_params": params,
        }
    )
    rows = []
    run_in_series(cfg, h)  # warm-up: kernel selection for every batch size
    for _ in range(repeats):
        res = run_in_series(cfg, h, evaluator=PairedEvaluator)
        rows.append(
            {
                "efficiency": res.raw_seconds / res.wall_seconds,
                # The writer flushes on a clock, so it is busy for a share of elapsed time,
                # which here includes the twins' time.
                "store_share": res.store_seconds / (res.wall_seconds + res.raw_seconds),
                "campaign_seconds": res.wall_seconds,
                "raw_seconds": res.raw_seconds,
                "store_seconds": res.store_seconds,
                "model_seconds": res.model_seconds,
                "evaluations": res.evaluations,
                "batches": len(res.batch_sizes),
            }
        )
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    n = rows[0]["evaluations"]
    out = {
        "evaluations": n,
        "campaign_seconds": med["campaign_seconds"],
        "campaign_evals_per_s": n / med["campaign_seconds"],
        "raw_seconds": med["raw_seconds"],
        "raw_evals_per_s": n / med["raw_seconds"],
        "efficiency": med["efficiency"],
        "model_time_share": med["model_seconds"] / med["campaign_seconds"],
        "store_seconds": med["store_seconds"],
        "store_share": med["store_share"],
        "batches": rows[0]["batches"],
        "mean_batch": n / rows[0]["batches"],
    }
    return out, rows


def bench_generators(
    dataset: str = "mnist", write_cards: bool = True, console: Console | None = None
) -> list[dict]:
    """ms per image at batch 1 and 25 for every zoo generator of the dataset; optionally
    recorded in the cards (GIFTbench's Table II layout, on this machine's CPU)."""

    # Deferred (start-up time: loads pandas).
    from engine.studies.effectiveness import bundled_generators

    console = console or Console()
    rows = []
    for name in bundled_generators(dataset):
        gen = zoo.load_generator(name)
        ms = inference_ms(gen)
        card = zoo.load_card(name)
        rows.append(
            {
                "generator": name,
                "family": card["family"],
                "latent": int(np.prod(gen.latent_shape)),
                **ms,
            }
        )
        if write_cards:
            record_inference(name, ms)
    t = Table(
        "generator",
        "latent size",
        "ms/image, batch 1",
        "ms/image, batch 25",
        title=f"inference time per image on this CPU ({dataset}, "
        f"torch threads {torch.get_num_threads()})",
    )
    for r in rows:
        t.add_row(
            r["generator"],
            str(r["latent"]),
            f"{r['ms_per_image_b1']:.3f}",
            f"{r['ms_per_image_b25']:.3f}",
        )
    console.print(t)
    return rows


def record_inference(name: str, ms: dict[str, float]) -> None:
    """Write a bundled model's measured times into its card, with how they were taken."""

    card = zoo.load_card(name)
    card["inference"] = {
        **ms,
        "measured_by": "latentfuzz bench generators",
        "torch_threads": torch.get_num_threads(),
    }
    (zoo.models_dir() / name / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")


def bench_classifiers(
    dataset: str = "mnist", write_cards: bool = True, console: Console | None = None
) -> list[dict]:
    """ms per image at batch 1 and 25 for every bundled classifier of the dataset, run as a
    campaign runs it (a graph where engine/classifiers/inference.py builds one), on test
    images; optionally recorded in the cards, whose figures New campaign's time estimate
    uses (those taken at training, before the graphs, were 3 to 8x higher)."""

    console = console or Console()
    probe = get_dataset(dataset).load("test").images[:25]
    rows = []
    for card in zoo.list_cards():
        name = card["name"]
        if card.get("kind") != "classifier" or card.get("dataset") != dataset:
            continue
        if not zoo.is_bundled(name):
            continue
        clf = zoo.load_classifier(name, dataset)
        with torch.inference_mode():
            ms = {
                f"ms_per_image_b{b}": round(
                    ms_per_image(lambda n, clf=clf: clf.logits(probe[:n]), b), 4
                )
                for b in (1, 25)
            }
        rows.append({"classifier": name, **ms, "graph": getattr(clf, "runs_as_graph", False)})
        if write_cards:
            record_inference(name, ms)
    t = Table(
        "classifier",
        "runs as",
        "ms/image, batch 1",
        "ms/image, batch 25",
        title=f"classifiers' inference time per image on this CPU ({dataset})",
    )
    for r in rows:
        t.add_row(
            r["classifier"],
            "graph" if r["graph"] else "eager",
            f"{r['ms_per_image_b1']:.3f}",
            f"{r['ms_per_image_b25']:.3f}",
        )
    console.print(t)
    return rows
