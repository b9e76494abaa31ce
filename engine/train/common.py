"""Shared pieces of the training commands: progress bars, evaluation, timing, cards."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[..., None]]:
    """Yields advance(**stats): one step forward, with stats shown after the bar."""
    cols = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"),
    ]
    with Progress(*cols, transient=False) as bar:
        task = bar.add_task(description, total=total, stats="")

        def advance(**stats: float) -> None:
            bar.update(task, advance=1, stats="  ".join(f"{k} {v:.4g}" for k, v in stats.items()))

        yield advance


def batches(n: int, size: int, rng: torch.Generator | None) -> Iterator[torch.Tensor]:
    order = torch.randperm(n, generator=rng) if rng is not None else torch.arange(n)
    for i in range(0, n, size):
        yield order[i : i + size]


@torch.no_grad()
def accuracy(
    predict: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    batch: int = 500,
) -> float:
    correct = sum(
        int((predict(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum())
        for i in range(0, len(y), batch)
    )
    return correct / len(y)


@torch.no_grad()
def ms_per_image(fn: Callable[[int], Any], batch: int, repeats: int = 20) -> float:
    """Median wall time of fn(batch) divided by batch, in milliseconds."""
    fn(batch)  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(batch)
        times.append(time.perf_counter() - t)
    times.sort()
    return 1000 * times[len(times) // 2] / batch


def start(seed: int, dataset: str, data_dir: str | None) -> tuple[torch.Generator, Any, Any]:
    """Seed everything and load the training split: (rng, dataset, train split)."""
    from engine.datasets import get_dataset

    torch.manual_seed(seed)
    rng = torch.Generator().manual_seed(seed)
    ds = get_dataset(dataset, data_dir)
    return rng, ds, ds.load("train")


def record(ds: Any, train: Any, seconds: float, **settings: Any) -> dict[str, Any]:
    """The card's training section: the command line, settings, data split and time."""
    return {"command": command_line(), **settings, "train_images": len(train),
            "split": ds.split_rule, "seconds": round(seconds, 1)}  # fmt: skip


def generator_card(
    name: str,
    family: str,
    ds: Any,
    default: bool,
    module: torch.nn.Module,
    params: dict[str, Any],
    training: dict[str, Any],
    **extra: Any,
) -> dict:
    """A generator card before measurement (bounds, viability and timing come after)."""
    return {"name": name, "kind": "generator", "family": family, "dataset": ds.name,
            "default": default, "params": {"image_shape": list(ds.shape),
                                           "num_classes": ds.num_classes, **params},
            "latent_shape": list(module.latent_shape),
            "parameters": sum(p.numel() for p in module.parameters()), **extra,
            "training": training, **stamp()}  # fmt: skip


def command_line() -> str:
    return "latentfuzz " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def stamp() -> dict[str, Any]:
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
